package sideindex

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// intKey is one non-null key of an integer-kind column (int, long, date,
// time, timestamps) and its position.
type intKey struct{ k, pos int64 }

// collectIntKeys is the btree's fast path for integer-kind columns: keys
// stay unboxed int64s (read straight from Int64/Int32/Date32 arrays, other
// layouts through the oracle's conversion), sorted by value then position
// — the order of their encodings, since the encoding is the value with its
// sign bit flipped, big-endian — so the payload is byte for byte the one
// the general path writes.
func collectIntKeys(ctx context.Context, in Input, rdr *file.Reader) (btreeRows, error) {
	var (
		keys  []intKey
		nulls []int64
	)
	if n := in.Footer.NumRows(); n > 0 && n < 1<<28 {
		keys = make([]intKey, 0, n)
	}
	err := columnChunks(ctx, in, rdr, func(first int64, leaf arrow.Array, isNull func(int) bool) error {
		var get func(r int) (int64, error)
		switch a := leaf.(type) {
		case *array.Int64:
			vs := a.Int64Values()
			get = func(r int) (int64, error) { return vs[r], nil }
		case *array.Int32:
			vs := a.Int32Values()
			get = func(r int) (int64, error) { return int64(vs[r]), nil }
		case *array.Date32:
			vs := a.Date32Values()
			get = func(r int) (int64, error) { return int64(vs[r]), nil }
		default:
			get = func(r int) (int64, error) {
				v, err := value.FromArrow(leaf, r, in.Type)
				if err != nil {
					return 0, err
				}
				if v.K != value.Int {
					return 0, fmt.Errorf("row %d of %s holds %s, outside type %s", first+int64(r), short(in.File), short(v.String()), in.Type)
				}
				return v.I, nil
			}
		}
		for r := 0; r < leaf.Len(); r++ {
			if isNull(r) {
				nulls = append(nulls, first+int64(r))
				continue
			}
			k, err := get(r)
			if err != nil {
				return err
			}
			keys = append(keys, intKey{k, first + int64(r)})
		}
		return nil
	})
	if err != nil {
		return btreeRows{}, err
	}
	keys = sortIntKeys(keys)
	return btreeRows{
		nulls: nulls,
		n:     len(keys),
		key: func(i int, dst []byte) []byte {
			return binary.BigEndian.AppendUint64(dst, uint64(keys[i].k)^(1<<63))
		},
		pos: func(i int) int64 { return keys[i].pos },
		appendKey: func(b array.Builder, i int) error {
			ib, ok := b.(*array.Int64Builder)
			if !ok {
				return fmt.Errorf("btree: integer keys into %T", b)
			}
			ib.Append(keys[i].k)
			return nil
		},
	}, nil
}

// sortIntKeys sorts keys by value, ties by position. Keys arrive in
// position order, so a stable least-significant-digit radix sort on the
// value gives that order in O(n): 8 passes of one byte, skipping the
// passes where every key has the same byte (the high bytes of small
// ranges). It was a fifth of a build as a comparison sort. Short inputs,
// and inputs not in position order, take the comparison sort.
func sortIntKeys(keys []intKey) []intKey {
	if len(keys) < 1<<10 || !slices.IsSortedFunc(keys, func(a, b intKey) int { return cmp.Compare(a.pos, b.pos) }) {
		slices.SortFunc(keys, func(a, b intKey) int {
			if c := cmp.Compare(a.k, b.k); c != 0 {
				return c
			}
			return cmp.Compare(a.pos, b.pos)
		})
		return keys
	}
	var counts [8][256]int
	for _, e := range keys {
		u := uint64(e.k) ^ 1<<63
		for d := range counts {
			counts[d][byte(u>>(8*d))]++
		}
	}
	src, dst := keys, make([]intKey, len(keys))
	for d := range counts {
		c := &counts[d]
		if c[byte((uint64(src[0].k)^1<<63)>>(8*d))] == len(src) {
			continue // every key has this byte: the pass would not move anything
		}
		sum := 0
		for i := range c {
			c[i], sum = sum, sum+c[i]
		}
		for _, e := range src {
			b := byte((uint64(e.k) ^ 1<<63) >> (8 * d))
			dst[c[b]] = e
			c[b]++
		}
		src, dst = dst, src
	}
	return src
}
