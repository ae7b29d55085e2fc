package volume

import (
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// A ScanRows request of any bytes is refused with an error or checked;
// every row group it names then yields candidates inside the row group
// and never a deleted position — nothing panics.
func FuzzScanRowsRequestBounds(f *testing.F) {
	del, _ := roaring64.BitmapOf(3, 7).ToBytes()
	for _, req := range []*pushdown_pb.ScanRowsRequest{
		{Path: "s3://b/k", SizeBytes: 10, RecordCount: 10, Predicate: []byte{1}, RowGroups: []*pushdown_pb.ScanRowGroup{{RowGroup: 0, DeletedPositions: del}}},
		{Path: "s3://b/k", SizeBytes: 10, RecordCount: 10, Predicate: []byte{1}, RowGroups: []*pushdown_pb.ScanRowGroup{{RowGroup: 1, RowRanges: []*pushdown_pb.RowRange{{Start: 2, End: 5}}}}},
	} {
		b, _ := proto.Marshal(req)
		f.Add(b, int64(10), int64(100))
	}
	f.Fuzz(func(t *testing.T, data []byte, first, n int64) {
		req := &pushdown_pb.ScanRowsRequest{}
		if proto.Unmarshal(data, req) != nil || checkScanRequest(req) != nil {
			return
		}
		first, n = max(0, first%(1<<40)), max(0, n%(1<<20))
		for _, g := range req.GetRowGroups() {
			cands, err := scanCandidates(g, first, n)
			if err != nil {
				continue
			}
			if !cands.IsEmpty() && (cands.Minimum() < uint64(first) || cands.Maximum() >= uint64(first+n)) {
				t.Fatalf("candidates [%d, %d] outside the row group [%d, %d)", cands.Minimum(), cands.Maximum(), first, first+n)
			}
			if len(g.GetDeletedPositions()) > 0 {
				del, _ := rowbits.Decode(g.GetDeletedPositions())
				if del != nil && cands.Intersects(del) {
					t.Fatal("a deleted position is a candidate")
				}
			}
		}
	})
}
