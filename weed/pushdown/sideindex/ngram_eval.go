package sideindex

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// ngramIndex is an opened ngram payload.
type ngramIndex struct{ *postingsIndex }

func (k ngramKind) Open(ctx context.Context, payload []byte, want Header) (Index, error) {
	p, err := readPostings(payload, withKind(want, k), func(string) (iceberg.Type, error) { return iceberg.PrimitiveTypes.Binary, nil })
	if err != nil {
		return nil, err
	}
	return ngramIndex{p}, nil
}

// literalRuns are the texts every value matching l holds, or nil.
func literalRuns(l *predicate.Leaf) [][]byte {
	if l.Negated || len(l.Lits) != 1 {
		return nil
	}
	switch l.Op {
	case predicate.OpStartsWith:
		return [][]byte{l.Lits[0].B}
	case predicate.OpLike, predicate.OpILike:
		runs, _, _ := predicate.LikeLiterals(l.Lits[0].B)
		out := make([][]byte, len(runs))
		for i, r := range runs {
			out[i] = []byte(r)
		}
		return out
	}
	return nil
}

func (n ngramIndex) Eval(ctx context.Context, l *predicate.Leaf) (Answer, error) {
	if !leafMatchesIndex(l, n.h) {
		return unknown, nil
	}
	var parts []*roaring64.Bitmap
	seen := map[[3]rune]bool{}
	for _, run := range literalRuns(l) {
		rs := predicate.FoldedRunes(run)
		for i := 0; i+3 <= len(rs); i++ {
			g := [3]rune{rs[i], rs[i+1], rs[i+2]}
			if seen[g] {
				continue
			}
			seen[g] = true
			bm := n.lookup(gramKey(g))
			if bm == nil {
				return Answer{Positions: roaring64.New()}, nil // a trigram no row holds
			}
			parts = append(parts, bm)
		}
	}
	if len(parts) == 0 {
		return unknown, nil
	}
	if err := ctx.Err(); err != nil {
		return Answer{}, err
	}
	return Answer{Positions: roaring64.FastAnd(parts...)}, nil
}
