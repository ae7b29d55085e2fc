package sideindex

import (
	"context"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

var nan = math.NaN()

// bitmapIndex is an opened bitmap payload.
type bitmapIndex struct{ *postingsIndex }

func (k bitmapKind) Open(ctx context.Context, payload []byte, want Header) (Index, error) {
	p, err := readPostings(payload, withKind(want, k), func(s string) (iceberg.Type, error) { return parseType(s) })
	if err != nil {
		return nil, err
	}
	return bitmapIndex{p}, nil
}

// Eval answers any leaf on the column exactly: a class's bitmap is in the
// answer when its value (NULL, NaN, each distinct value) satisfies the
// leaf under predicate.Matches — the rows a plan must keep, and exactly
// the oracle's. = and IN look their literals up; other leaves decide
// every distinct value.
func (b bitmapIndex) Eval(ctx context.Context, l *predicate.Leaf) (Answer, error) {
	if !leafMatchesIndex(l, b.h) {
		return unknown, nil
	}
	matches := func(v value.Value, null bool) bool {
		return predicate.Matches(l, func(int) (value.Value, bool) { return v, null })
	}
	var parts []*roaring64.Bitmap
	if matches(value.Value{}, true) {
		parts = append(parts, b.class(classNull))
	}
	if value.IsFloat(l.Type) && matches(value.OfFloat(nan), false) {
		parts = append(parts, b.class(classNaN))
	}
	if lits, ok := pointLiterals(l); ok {
		codec, _ := newKeyCodec(b.keyType)
		for _, v := range lits {
			if enc, ok := codec.appendKey(nil, v); ok {
				if bm := b.lookup(enc); bm != nil {
					parts = append(parts, bm)
				}
			}
		}
	} else {
		for i, p := range b.values {
			if i%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return Answer{}, err
				}
			}
			if matches(p.key, false) {
				parts = append(parts, p.bm)
			}
		}
	}
	return Answer{Positions: roaring64.FastOr(parts...), Exact: true}, nil
}

// pointLiterals are the literals of an = or IN leaf whose matching values
// are exactly the literals' own keys (no NaN, no float zero: those match
// several encodings under one of the two semantics).
func pointLiterals(l *predicate.Leaf) ([]value.Value, bool) {
	if l.Negated || (l.Op != predicate.OpEq && l.Op != predicate.OpIn) {
		return nil, false
	}
	for _, v := range l.Lits {
		if v.IsNaN() || v.IsZeroFloat() {
			return nil, false
		}
	}
	return l.Lits, true
}
