package sqlstmt

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// stringRecord is a one-column record of values whose bytes live in data
// (the caller may overwrite them afterwards, as a pooled allocator reuses
// a released buffer for the next record).
func stringRecord(values []string, data []byte) arrow.RecordBatch {
	offsets := make([]int32, len(values)+1)
	n := 0
	for i, v := range values {
		n += copy(data[n:], v)
		offsets[i+1] = int32(n)
	}
	off := arrow.Int32Traits.CastToBytes(offsets)
	arr := array.NewStringData(array.NewData(arrow.BinaryTypes.String, len(values),
		[]*memory.Buffer{nil, memory.NewBufferBytes(off), memory.NewBufferBytes(data[:n])}, nil, 0, 0))
	defer arr.Release()
	sch := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	return array.NewRecordBatch(sch, []arrow.Array{arr}, int64(len(values)))
}

// MIN and MAX of a string column keep their values, not views of a
// record's buffer: the records handed to Add are released after it (the
// connector's decode buffers then go back to its pool and hold the next
// row group's bytes), so a kept view would change under the answer.
func TestStringMinAndMaxOutliveTheRecordsTheyCameFrom(t *testing.T) {
	st, err := Parse("SELECT MIN(s), MAX(s), COUNT(*) FROM ns.t")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAggregator(st, []string{"s"})
	buf := make([]byte, 64)
	rec := stringRecord([]string{"mango", "apple", "zebra"}, buf)
	if err := a.Add(rec); err != nil {
		t.Fatal(err)
	}
	sch := rec.Schema()
	rec.Release()
	for i := range buf { // the buffer reused for other bytes
		buf[i] = 'x'
	}
	rec = stringRecord([]string{"kiwi"}, make([]byte, 16))
	if err := a.Add(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	out, err := a.Finish(context.Background(), sch)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if mn, mx := out.Column(0).ValueStr(0), out.Column(1).ValueStr(0); mn != "apple" || mx != "zebra" {
		t.Fatalf("MIN %q MAX %q, want apple and zebra", mn, mx)
	}
}
