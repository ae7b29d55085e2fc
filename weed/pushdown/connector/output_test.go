package connector

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// A CountOnly query's output hands on row counts only: a record that
// comes with columns (a plain read's) goes on without them, its rows
// past the OFFSET and up to the LIMIT counted as for any query.
func TestACountOnlyOutputHandsOnRowCountsWithoutColumns(t *testing.T) {
	var got []arrow.RecordBatch
	o := newOutput(Query{CountOnly: true, Offset: 2, Limit: 5}, nil, func(rec arrow.RecordBatch) error {
		rec.Retain()
		got = append(got, rec)
		return nil
	})
	recs := []arrow.RecordBatch{
		array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{ints(1, 2, 3, 4)}, 4),
		array.NewRecordBatch(countSchema, nil, 6),
	}
	for i, rec := range recs {
		done, err := o.add(rec)
		if err != nil || done != (i == 1) {
			t.Fatalf("record %d: done %v, %v", i, done, err)
		}
	}
	var n int64
	for _, rec := range got {
		if rec.NumCols() != 0 {
			t.Fatalf("a record with %d columns went on", rec.NumCols())
		}
		n += rec.NumRows()
		rec.Release()
	}
	if n != 5 || o.rows != 5 {
		t.Fatalf("%d rows handed on (%d counted): want the LIMIT's 5 past the OFFSET's 2", n, o.rows)
	}
}

// Counting rows only aggregates COUNT(*) alone: with a GROUP BY or another
// aggregate the volumes' path refuses it before planning (the rows it
// reads here would carry none of the columns those need).
func TestCountOnlyRefusesAggregatesThatNeedColumns(t *testing.T) {
	count := AggregateCall{Func: pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS}
	for _, aq := range []AggregateQuery{
		{Query: Query{CountOnly: true}, GroupBy: []string{"status"}, Aggregates: []AggregateCall{count}},
		{Query: Query{CountOnly: true}, Aggregates: []AggregateCall{count, {Func: pushdown_pb.AggregateFunc_AGGREGATE_SUM, Column: "id"}}},
	} {
		if _, err := (&Connector{}).AggregateOnVolumes(context.Background(), aq, nil, nil); err == nil || !strings.Contains(err.Error(), "COUNT(*) alone") {
			t.Fatalf("%+v: %v; want a refusal naming COUNT(*) alone", aq, err)
		}
	}
}
