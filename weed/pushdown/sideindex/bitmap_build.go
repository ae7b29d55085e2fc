package sideindex

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// bitmapKind maps every distinct value of a low- or medium-cardinality
// column to a roaring bitmap of the rows holding it, with the NULL rows
// and the NaN rows as classes of their own (a postings payload, see
// postings.go). Any leaf on the column is answered exactly: the evaluator
// decides each distinct value (and the NULL class) with the predicate's
// own row semantics and unions the bitmaps of those that match.
//
// Params: "max_distinct" (default 65536): a column with more distinct
// values is refused, naming the count (a btree suits it better).
type bitmapKind struct{}

func init() { register(bitmapKind{}) }

// DefaultBitmapMaxDistinct is the bitmap kind's distinct-value cap.
const DefaultBitmapMaxDistinct = 65536

func (bitmapKind) Name() string { return "bitmap" }

func (bitmapKind) Supports(t iceberg.Type) bool {
	_, ok := value.KindOf(t)
	return ok
}

func (bitmapKind) CheckParams(p map[string]string) error {
	_, err := bitmapMaxDistinct(p)
	return err
}

func bitmapMaxDistinct(p map[string]string) (int64, error) {
	return soleIntParam(p, "max_distinct", DefaultBitmapMaxDistinct, 1, 1<<24)
}

func (k bitmapKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if err := checkInput(in, k); err != nil {
		return nil, err
	}
	limit, err := bitmapMaxDistinct(in.Params)
	if err != nil {
		return nil, err
	}
	codec, rdr, err := openKeyed(ctx, in)
	if err != nil {
		return nil, err
	}
	b := newPostingsBuilder(codec, int(limit))
	var scratch []byte
	err = columnValues(ctx, in, rdr, func(pos int64, v value.Value, null bool) error {
		if null {
			b.addClass(classNull, pos)
			return nil
		}
		var ok bool
		if scratch, ok = b.add(v, pos, scratch); !ok {
			return fmt.Errorf("row %d of %s holds %s, outside type %s", pos, short(in.File), short(v.String()), in.Type)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bitmap: %w", err)
	}
	if n := b.distinct(); n > int(limit) {
		return nil, fmt.Errorf("bitmap: field %d of %s has %d distinct values, over max_distinct=%d (raise it, or use a btree)",
			in.FieldID, short(in.File), n, limit)
	}
	return writePostings(ctx, headerOf(in, k.Name()), in.Type, b.postings())
}
