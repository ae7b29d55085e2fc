package sideindex

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// labelListIndex is an opened label_list payload.
type labelListIndex struct{ *postingsIndex }

func (k labelListKind) Open(ctx context.Context, payload []byte, want Header) (Index, error) {
	p, err := readPostings(payload, withKind(want, k), listElementType)
	if err != nil {
		return nil, err
	}
	return labelListIndex{p}, nil
}

// Eval answers ARRAY_CONTAINS(list, v) exactly. TRUE: some element
// equals v (under either semantics). NOT …: the list is not NULL, holds no
// NULL element and no element equal to v under both semantics (for float
// zeros total order is the stricter) — every row but those.
func (x labelListIndex) Eval(ctx context.Context, l *predicate.Leaf) (Answer, error) {
	if !leafMatchesIndex(l, x.h) || l.Op != predicate.OpArrayContains || len(l.Lits) != 1 {
		return unknown, nil
	}
	pos := *l
	pos.Negated = false
	equal := func(v value.Value, both bool) bool {
		row := func(int) (value.Value, bool) { return value.OfList([]value.Value{v}), false }
		if both {
			return predicate.Eval(&pos, row, predicate.IEEE) == predicate.True && predicate.Eval(&pos, row, predicate.TotalOrder) == predicate.True
		}
		return predicate.Matches(&pos, row)
	}
	var parts []*roaring64.Bitmap
	if lit := l.Lits[0]; !lit.IsZeroFloat() && !lit.IsNaN() {
		codec, _ := newKeyCodec(x.keyType)
		if enc, ok := codec.appendKey(nil, lit); ok {
			if bm := x.lookup(enc); bm != nil {
				parts = append(parts, bm)
			}
		}
	} else {
		for _, p := range x.values {
			if equal(p.key, l.Negated) {
				parts = append(parts, p.bm)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	hits := roaring64.FastOr(parts...)
	if !l.Negated {
		return Answer{Positions: hits, Exact: true}, nil
	}
	out := roaring64.New()
	out.AddRange(0, uint64(x.h.Rows))
	out.AndNot(hits)
	out.AndNot(x.class(classNull))
	out.AndNot(x.class(classNullElem))
	return Answer{Positions: out, Exact: true}, nil
}
