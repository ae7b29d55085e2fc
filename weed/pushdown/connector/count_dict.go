package connector

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pagedecode"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// countOnDictionary answers a COUNT(*) on one row group without decoding
// its rows, when the predicate reads one top-level string or binary
// column whose chunk is wholly dictionary-encoded and every row of the
// row group is a candidate (no planned row subset, no deletes):
//
//	chunk's pages ── pagedecode.CountDictionary ──▶ rows per dictionary code, NULLs
//	predicate on the dictionary's values (+ one NULL), colfilter as on rows
//	count = Σ rows of the codes it keeps (+ the NULLs when it keeps NULL)
//
// ok is false when it does not apply or the chunk cannot be counted so
// (the row group is then decoded and filtered as any other).
func countOnDictionary(ctx context.Context, p *prepared, fl *fileLayout, sf *sparseFile, r *rowGroupRead) (rec arrow.RecordBatch, ok bool) {
	if !p.q.CountOnly || r.rows != nil || r.deleted != nil || r.exact || len(r.late) > 0 {
		return nil, false
	}
	if _, isConst := p.expr.(predicate.Const); isConst {
		return nil, false
	}
	ids := predicate.FieldIDs(p.expr)
	if len(ids) != 1 {
		return nil, false
	}
	id := ids[0]
	top, stored := fl.topFieldOf(id)
	if !stored || fl.md.Schema.Root().Field(top).FieldID() != int32(id) || !fl.readsAsDict(r.rg, top) {
		return nil, false
	}
	f, found := p.schema.FindFieldByID(id)
	if !found {
		return nil, false
	}
	leaf := fl.leavesOf[top][0]
	cc, chunk, held := fl.wholeChunk(sf, r.rg, leaf)
	if !held {
		return nil, false
	}
	counts, err := pagedecode.CountDictionary(fl.md.Schema.Column(leaf), cc.Compression(), chunk, r.numRows)
	if err != nil {
		return nil, false
	}
	n, err := colfilter.CountByValue(p.expr, f.Type, fl.arrow.Field(top).Type, counts.Values, counts.Counts, counts.Nulls)
	if err != nil {
		return nil, false
	}
	if c, _ := ctx.Value(dictCountKey{}).(*atomic.Int64); c != nil {
		c.Add(1)
	}
	return array.NewRecordBatch(countSchema, nil, n), true
}

// dictCountKey keys the query's count of row groups counted on their
// dictionaries (Stats.DictionaryCountedRowGroups) in its context.
type dictCountKey struct{}
