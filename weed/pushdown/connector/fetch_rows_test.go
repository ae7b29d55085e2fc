package connector

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// rowsVolume answers ReadRows with answer (the request's positions).
type rowsVolume struct {
	fakeVolume
	answer func(positions []uint64) (*pushdown_pb.ReadRowsResponse, error)
}

func (v *rowsVolume) ReadRows(ctx context.Context, req *pushdown_pb.ReadRowsRequest) (*pushdown_pb.ReadRowsResponse, error) {
	bm, err := rowbits.Decode(req.GetFiles()[0].GetPositions())
	if err != nil {
		return nil, err
	}
	return v.answer(bm.ToArray())
}

// rowsIPC is an Arrow IPC stream of one record of the given columns.
func rowsIPC(t *testing.T, fields []arrow.Field, cols ...arrow.Array) []byte {
	t.Helper()
	sch := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(sch, cols, int64(cols[0].Len()))
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sch))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

func ints(vs ...int64) arrow.Array {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vs, nil)
	return b.NewArray()
}

// A volume's ReadRows answer is used only when it is exactly the rows
// asked for, typed as this file's layout types them; any other answer is
// an error (the caller then reads the pages), never rows taken on trust.
func TestAVolumesRowsAreTakenOnlyWhenTheyAreExactlyTheRowsAskedForAsTheFileTypesThem(t *testing.T) {
	fl, _ := lateFile(t, true)
	r := &rowGroupRead{rg: 0, numRows: 2000, firstRow: 0}
	keep := []int64{3, 70, 1999}
	idField := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	for _, tc := range []struct {
		name   string
		answer func([]uint64) (*pushdown_pb.ReadRowsResponse, error)
		msg    string
	}{
		{"the rows asked for", func(p []uint64) (*pushdown_pb.ReadRowsResponse, error) {
			if len(p) != 3 || p[0] != 3 || p[1] != 70 || p[2] != 1999 {
				return nil, status.Errorf(codes.InvalidArgument, "asked for %v", p)
			}
			return &pushdown_pb.ReadRowsResponse{Files: []*pushdown_pb.ReadRowsFileResult{{Rows: 3, ColumnsIpc: rowsIPC(t, []arrow.Field{idField}, ints(3, 70, 1999))}}}, nil
		}, ""},
		{"a refusal", func([]uint64) (*pushdown_pb.ReadRowsResponse, error) {
			return nil, status.Error(codes.Unavailable, "volume going away")
		}, "volume going away"},
		{"one row short", func([]uint64) (*pushdown_pb.ReadRowsResponse, error) {
			return &pushdown_pb.ReadRowsResponse{Files: []*pushdown_pb.ReadRowsFileResult{{Rows: 3, ColumnsIpc: rowsIPC(t, []arrow.Field{idField}, ints(3, 70))}}}, nil
		}, "2 rows decoded for 3 asked"},
		{"a row count that is not the rows asked for", func([]uint64) (*pushdown_pb.ReadRowsResponse, error) {
			return &pushdown_pb.ReadRowsResponse{Files: []*pushdown_pb.ReadRowsFileResult{{Rows: 2}}}, nil
		}, "not 3 rows"},
		{"another type", func([]uint64) (*pushdown_pb.ReadRowsResponse, error) {
			b := array.NewInt32Builder(memory.DefaultAllocator)
			b.AppendValues([]int32{3, 70, 1999}, nil)
			return &pushdown_pb.ReadRowsResponse{Files: []*pushdown_pb.ReadRowsFileResult{{Rows: 3, ColumnsIpc: rowsIPC(t,
				[]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, b.NewArray())}}}, nil
		}, "came back as int32"},
		{"a column missing", func([]uint64) (*pushdown_pb.ReadRowsResponse, error) {
			return &pushdown_pb.ReadRowsResponse{Files: []*pushdown_pb.ReadRowsFileResult{{Rows: 3, ColumnsIpc: rowsIPC(t,
				[]arrow.Field{{Name: "other", Type: arrow.PrimitiveTypes.Int64}}, ints(1, 2, 3))}}}, nil
		}, "id is missing"},
		{"bytes that are not Arrow IPC", func([]uint64) (*pushdown_pb.ReadRowsResponse, error) {
			return &pushdown_pb.ReadRowsResponse{Files: []*pushdown_pb.ReadRowsFileResult{{Rows: 3, ColumnsIpc: []byte("not arrow")}}}, nil
		}, "Arrow IPC"},
	} {
		ft, _ := testFetcher(t, ReadAuto, "ak", &rowsVolume{answer: tc.answer})
		cols := map[int]*column{}
		err := ft.readRows(context.Background(), "volume", testPlanned("volume"), fl, r, keep, []int32{1}, map[string]int{"id": 0}, cols)
		switch {
		case tc.msg == "" && err != nil:
			t.Fatalf("%s: %v", tc.name, err)
		case tc.msg == "":
			id := cols[0].arr.(*array.Int64)
			if id.Len() != 3 || id.Value(0) != 3 || id.Value(2) != 1999 || cols[0].index(70) != 1 {
				t.Fatalf("%s: %v", tc.name, id)
			}
			if ft.vol.calls.Load() != 1 || ft.vol.bytes.Load() == 0 {
				t.Fatalf("%s: %d calls, %d bytes counted", tc.name, ft.vol.calls.Load(), ft.vol.bytes.Load())
			}
		case err == nil || !strings.Contains(err.Error(), tc.msg):
			t.Fatalf("%s: %v; want an error mentioning %q", tc.name, err, tc.msg)
		}
		for _, c := range cols {
			c.arr.Release()
		}
	}
}
