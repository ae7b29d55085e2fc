package connector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Gathering a string or binary dictionary's values at positions gives
// exactly Arrow's take of the dictionary at the rows' indices: NULL
// indices, NULL dictionary values, sliced dictionaries and indices,
// empty values, every position or none.
func TestDictionaryGatherGivesArrowsTakeOfTheDictionary(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(0); seed < 300; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 7))
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if seed%2 == 1 {
			typ = arrow.BinaryTypes.Binary
		}
		noNulls := seed%3 == 0 // the no-NULL path
		// the dictionary: a few values, some empty or NULL, maybe sliced
		db := array.NewBuilder(memory.DefaultAllocator, typ)
		nd := 1 + rnd.IntN(8)
		for k := 0; k < nd+2; k++ {
			switch {
			case !noNulls && rnd.IntN(6) == 0:
				db.AppendNull()
			default:
				v := fmt.Sprintf("v%d-%s", k, string(make([]byte, rnd.IntN(5))))
				if rnd.IntN(5) == 0 {
					v = ""
				}
				switch b := db.(type) {
				case *array.StringBuilder:
					b.Append(v)
				case *array.BinaryBuilder:
					b.Append([]byte(v))
				}
			}
		}
		full := db.NewArray()
		db.Release()
		dict := array.NewSlice(full, 1, int64(1+nd))
		full.Release()
		// indices, some NULL, maybe sliced
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		n := rnd.IntN(60)
		for i := 0; i < n+3; i++ {
			if !noNulls && rnd.IntN(7) == 0 {
				ib.AppendNull()
			} else {
				ib.Append(int32(rnd.IntN(nd)))
			}
		}
		allIdx := ib.NewArray()
		ib.Release()
		idx := array.NewSlice(allIdx, 3, int64(3+n))
		allIdx.Release()
		d := array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: typ}, idx, dict)
		idx.Release()
		dict.Release()
		var pos []int32
		for p := 0; p < n; p++ {
			if rnd.IntN(3) != 0 {
				pos = append(pos, int32(p))
			}
		}
		got, ok := gatherDictionaryBytes(d, pos)
		if !ok {
			t.Fatalf("seed %d: not gathered", seed)
		}
		// the oracle: the dictionary's values at the rows' indices
		tb := array.NewInt32Builder(memory.DefaultAllocator)
		for _, p := range pos {
			if d.IsNull(int(p)) {
				tb.AppendNull()
			} else {
				tb.Append(int32(d.GetValueIndex(int(p))))
			}
		}
		ti := tb.NewArray()
		tb.Release()
		want, err := compute.TakeArray(ctx, d.Dictionary(), ti)
		ti.Release()
		if err != nil {
			t.Fatal(err)
		}
		if !array.Equal(got, want) || got.NullN() != want.NullN() || !arrow.TypeEqual(got.DataType(), want.DataType()) {
			t.Fatalf("seed %d: gathered %v, take %v", seed, got, want)
		}
		got.Release()
		want.Release()
		d.Release()
	}
}
