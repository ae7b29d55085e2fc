package volume

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// A string or binary value the scan's filter views in place compares
// equal to the copy value.FromArrow makes, plain or dictionary-encoded,
// empty strings included; other arrays are left to value.FromArrow.
func TestTheFiltersViewOfAStringIsTheValueTheOracleReads(t *testing.T) {
	mem := memory.NewGoAllocator()
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"alpha", "", "gamma"}, nil)
	strs := sb.NewArray()
	defer strs.Release()
	bb := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	bb.AppendValues([][]byte{{1, 2}, {}, {0xff}}, nil)
	bins := bb.NewArray()
	defer bins.Release()
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String})
	for _, s := range []string{"x", "", "x", "yz"} {
		if err := db.(*array.BinaryDictionaryBuilder).AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	dict := db.NewArray()
	defer dict.Release()
	for _, c := range []struct {
		a   arrow.Array
		typ iceberg.Type
	}{{strs, iceberg.PrimitiveTypes.String}, {bins, iceberg.PrimitiveTypes.Binary}, {dict, iceberg.PrimitiveTypes.String}} {
		for i := 0; i < c.a.Len(); i++ {
			got, ok := bytesView(c.a, i)
			want, err := value.FromArrow(c.a, i, c.typ)
			if !ok || err != nil || got.K != value.Bytes || string(got.B) != string(want.B) || !sameValue(got, want) {
				t.Fatalf("%s row %d: view %v (%v), oracle %v (%v)", c.a.DataType(), i, got, ok, want, err)
			}
		}
	}
	ib := array.NewInt64Builder(mem)
	ib.Append(7)
	ints := ib.NewArray()
	defer ints.Release()
	if _, ok := bytesView(ints, 0); ok {
		t.Fatal("an int64 array was viewed as bytes")
	}
}

func sameValue(a, b value.Value) bool {
	c, ok := value.Compare(a, b)
	return ok && c == 0
}
