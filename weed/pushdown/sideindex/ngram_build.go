package sideindex

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// ngramKind maps every trigram of a string column to the rows whose value
// holds it (a postings payload, see postings.go). A trigram is three
// consecutive characters after case folding: characters are UTF-8 runes
// (an invalid byte is a character of its own, as LIKE reads it), each
// folded to the smallest member of its Unicode simple folding orbit
// (predicate.FoldRune: 'Ü' and 'ü' are one character, so are 'K', 'k' and
// the Kelvin sign; 'ß' stays itself, full folding to "ss" is not used).
// Keys are the three runes, 4 bytes each, big-endian.
//
// LIKE, ILIKE and STARTS_WITH are answered with candidates: the rows
// holding every trigram of the pattern's literal runs (a row matching
// the pattern holds each run, and so each of its trigrams, case folded or
// not). The residual rechecks them. A pattern whose literal runs are all
// shorter than three characters, a negated leaf and every other operator
// answer "unknown".
type ngramKind struct{}

func init() { register(ngramKind{}) }

func (ngramKind) Name() string { return "ngram" }

func (ngramKind) Supports(t iceberg.Type) bool {
	_, ok := t.(iceberg.StringType)
	return ok
}

// gramKey is a trigram's payload key.
func gramKey(g [3]rune) []byte {
	b := make([]byte, 12)
	for i, r := range g {
		binary.BigEndian.PutUint32(b[4*i:], uint32(r))
	}
	return b
}

// CheckParams: the kind takes no build parameters.
func (ngramKind) CheckParams(p map[string]string) error { return checkParams(p) }

func (k ngramKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if err := checkInput(in, k); err != nil {
		return nil, err
	}
	if err := k.CheckParams(in.Params); err != nil {
		return nil, err
	}
	rdr, err := openData(in, &sourceReader{ctx: ctx, src: in.Source})
	if err != nil {
		return nil, err
	}
	type gram struct {
		bm   *roaring64.Bitmap
		last int64
	}
	grams := map[[3]rune]*gram{}
	nulls := roaring64.New()
	err = columnChunks(ctx, in, rdr, func(first int64, leaf arrow.Array, isNull func(int) bool) error {
		str, plain := leaf.(*array.String)
		for r := 0; r < leaf.Len(); r++ {
			pos := first + int64(r)
			if isNull(r) {
				nulls.Add(uint64(pos))
				continue
			}
			var text []byte
			if plain {
				text = []byte(str.Value(r))
			} else {
				v, err := value.FromArrow(leaf, r, in.Type)
				if err != nil {
					return err
				}
				text = v.B
			}
			rs := predicate.FoldedRunes(text)
			for i := 0; i+3 <= len(rs); i++ {
				key := [3]rune{rs[i], rs[i+1], rs[i+2]}
				g := grams[key]
				if g == nil {
					g = &gram{bm: roaring64.New(), last: -1}
					grams[key] = g
				}
				if g.last != pos {
					g.bm.Add(uint64(pos))
					g.last = pos
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ngram: %w", err)
	}
	rows := make([]posting, 0, len(grams)+1)
	for key, g := range grams {
		enc := gramKey(key)
		g.bm.RunOptimize()
		rows = append(rows, posting{class: classValue, key: value.OfBytes(enc), enc: enc, bm: g.bm})
	}
	if !nulls.IsEmpty() {
		rows = append(rows, posting{class: classNull, bm: nulls})
	}
	sortPostings(rows)
	return writePostings(ctx, headerOf(in, k.Name()), iceberg.PrimitiveTypes.Binary, rows)
}
