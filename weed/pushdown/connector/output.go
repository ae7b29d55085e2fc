package connector

// The last stage of every read path (planned, plain, exact vector search):
// records in read order, past the OFFSET and up to the LIMIT, handed to
// the caller's sink as they come (Connector.Stream) or kept in the result
// (Connector.Query).
//
//	reader ─▶ records in order ─▶ output.add ─▶ skip OFFSET rows ─▶ cut at LIMIT
//	                                         └─▶ sink(rec) (streamed) or Result.Records
//
// The readers themselves read OFFSET + LIMIT rows (readLimit): a LIMIT
// still stops them early.

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// output is where a query's records go.
type output struct {
	skip  int64 // OFFSET rows still to skip
	left  int64 // rows the LIMIT still takes; < 0: no LIMIT
	rows  int64 // rows handed on
	sink  func(arrow.RecordBatch) error
	res   *Result // collects the records when sink is nil
	ended bool    // the LIMIT is met
	count bool    // Query.CountOnly: records go on without their columns
}

// countSchema is the schema of a CountOnly query's records: no columns.
var countSchema = arrow.NewSchema(nil, nil)

// newOutput is the output of q: records past q.Offset, at most q.Limit of
// them (0: all), to sink (nil: kept in res).
func newOutput(q Query, res *Result, sink func(arrow.RecordBatch) error) *output {
	left := int64(-1)
	if q.Limit > 0 {
		left = q.Limit
	}
	return &output{skip: max(0, q.Offset), left: left, sink: sink, res: res, count: q.CountOnly}
}

// readLimit is how many rows a reader of q must produce for the output:
// OFFSET + LIMIT, 0 when there is no LIMIT.
func readLimit(q Query) int64 {
	if q.Limit <= 0 {
		return 0
	}
	return q.Limit + max(0, q.Offset)
}

// add takes rec (and releases it): the rows past the OFFSET, up to the
// LIMIT, go to the sink or the result. done: the LIMIT is met and nothing
// more is wanted.
func (o *output) add(rec arrow.RecordBatch) (done bool, err error) {
	if o.ended {
		rec.Release()
		return true, nil
	}
	if o.count && rec.NumCols() > 0 {
		// a plain read's columns: only the row count goes on
		counted := array.NewRecordBatch(countSchema, nil, rec.NumRows())
		rec.Release()
		rec = counted
	}
	n := rec.NumRows()
	if n == 0 || o.skip >= n {
		// nothing to hand on (a row group without matches, or skipped)
		o.skip -= n
		rec.Release()
		return false, nil
	}
	start, end := min(o.skip, n), n
	if o.left >= 0 {
		end = min(n, start+o.left)
	}
	o.skip -= start
	if start > 0 || end < n {
		cut := rec.NewSlice(start, end)
		rec.Release()
		rec = cut
	}
	o.rows += rec.NumRows()
	if o.left >= 0 {
		o.left -= rec.NumRows()
		o.ended = o.left == 0
	}
	if o.sink != nil {
		err = o.sink(rec)
		rec.Release()
	} else {
		o.res.Records = append(o.res.Records, rec)
	}
	return o.ended, err
}
