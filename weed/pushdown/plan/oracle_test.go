package plan

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// memSource serves a file from memory.
type memSource []byte

func (m memSource) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(m)) {
		return 0, fmt.Errorf("read past end")
	}
	return copy(p, m[off:]), nil
}
func (m memSource) Size() int64 { return int64(len(m)) }

// memFiles is an Opener over in-memory files.
type memFiles map[string][]byte

func (m memFiles) open(_ context.Context, id footer.Identity) (footer.Source, error) {
	b, ok := m[id.Path]
	if !ok {
		return nil, fmt.Errorf("%s: not found", id.Path)
	}
	return memSource(b), nil
}

type decodedFile = oracle.File

func decodeAll(t testing.TB, data []byte, s *iceberg.Schema) *decodedFile {
	t.Helper()
	df, err := oracle.DecodeFile(data, s)
	if err != nil {
		t.Fatal(err)
	}
	return df
}

// checkPlan asserts that every row matching e lies inside the plan of one
// file, and returns (matching rows, planned rows).
func checkPlan(t testing.TB, name string, e predicate.Expr, df *decodedFile, fp *FilePlan, resp *pushdown_pb.ParquetPushdownResponse) (int64, int64) {
	t.Helper()
	var matching int64
	for _, i := range df.Matching(e) {
		matching++
		if fp.Skip {
			t.Fatalf("%s: %s: row %d matches but the file was pruned by %s", name, e, i, fp.SkipTier)
		}
		rg := df.RowGroupOf(i)
		rgp := fp.RowGroups[rg]
		if rgp.Skip {
			t.Fatalf("%s: %s: row %d (row group %d) matches but the row group was pruned by %s", name, e, i, rg, rgp.SkipTier)
		}
		local := i - df.RowGroupStart[rg]
		if rgp.Rows != nil && !rgp.Rows.Overlaps(local, local+1) {
			t.Fatalf("%s: %s: row %d (row group %d, local %d) matches but the page index kept only %v", name, e, i, rg, local, rgp.Rows)
		}
	}
	var planned int64
	if !fp.Skip {
		for rg, rgp := range fp.RowGroups {
			if rgp.Skip {
				continue
			}
			if rgp.Rows == nil {
				planned += fp.Footer.Meta.RowGroup(rg).NumRows()
			} else {
				planned += rgp.Rows.Rows()
			}
		}
	}
	return matching, planned
}
