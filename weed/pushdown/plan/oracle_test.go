package plan

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
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
		if fp.deleted != nil && fp.deleted.Contains(uint64(i)) {
			continue // deleted rows need not be planned
		}
		matching++
		if fp.skip {
			t.Fatalf("%s: %s: row %d matches but the file was pruned by %s", name, e, i, fp.skipTier)
		}
		rg := df.RowGroupOf(i)
		rgp := fp.rowGroups[rg]
		if rgp.Skip {
			t.Fatalf("%s: %s: row %d (row group %d) matches but the row group was pruned by %s", name, e, i, rg, rgp.SkipTier)
		}
		local := i - df.RowGroupStart[rg]
		if rgp.Rows != nil && !rgp.Rows.Overlaps(local, local+1) {
			t.Fatalf("%s: %s: row %d (row group %d, local %d) matches but the page index kept only %v", name, e, i, rg, local, rgp.Rows)
		}
	}
	var planned int64
	if !fp.skip {
		for rg, rgp := range fp.rowGroups {
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

// fixedDeletes is a DeleteSource answering one bitmap for every file.
type fixedDeletes struct{ b *roaring64.Bitmap }

func (d fixedDeletes) Deleted(_ context.Context, files []*DataFile) ([]*roaring64.Bitmap, DeleteStats, error) {
	out := make([]*roaring64.Bitmap, len(files))
	for i := range out {
		out[i] = d.b
	}
	return out, DeleteStats{FilesApplied: 1}, nil
}

// randomDeletes deletes ~10% of the rows at random, one long run, and
// sometimes a whole row group.
func randomDeletes(r *rand.Rand, df *decodedFile) *roaring64.Bitmap {
	b := roaring64.New()
	for i := int64(0); i < df.Rows; i++ {
		if r.IntN(10) == 0 {
			b.Add(uint64(i))
		}
	}
	start := r.Int64N(df.Rows)
	b.AddRange(uint64(start), uint64(min(df.Rows, start+MinDeletedRun+r.Int64N(2*MinDeletedRun))))
	if r.IntN(2) == 0 && len(df.RowGroupStart) > 1 {
		rg := r.IntN(len(df.RowGroupStart))
		end := df.Rows
		if rg+1 < len(df.RowGroupStart) {
			end = df.RowGroupStart[rg+1]
		}
		b.AddRange(uint64(df.RowGroupStart[rg]), uint64(end))
	}
	return b
}

// checkDeletedPositions asserts that each planned row group carries exactly
// the deleted positions inside it and that no planned row group is wholly
// deleted.
func checkDeletedPositions(t testing.TB, name string, fp *FilePlan, resp *pushdown_pb.ParquetPushdownResponse) {
	t.Helper()
	for _, ref := range resp.GetRowGroups() {
		if ref.File != fp.File.Path {
			continue
		}
		lo, hi := uint64(ref.FirstRow), uint64(ref.FirstRow+ref.RowCount)
		want := roaring64.New()
		if fp.deleted != nil {
			want.AddRange(lo, hi)
			want.And(fp.deleted)
		}
		got := roaring64.New()
		if len(ref.DeletedPositions) > 0 {
			if _, err := got.ReadFrom(bytes.NewReader(ref.DeletedPositions)); err != nil {
				t.Fatalf("%s: row group %d: deleted positions do not decode: %v", name, ref.RowGroup, err)
			}
		}
		if !got.Equals(want) {
			t.Fatalf("%s: row group %d: deleted positions %v, want %v", name, ref.RowGroup, got.ToArray(), want.ToArray())
		}
		if want.GetCardinality() == hi-lo {
			t.Fatalf("%s: row group %d is wholly deleted but planned", name, ref.RowGroup)
		}
	}
}

// sideIndexFor answers some leaves (chosen by r) the way a side index
// would — the matching positions plus random false positives — and says
// nothing of the others: the side_index tier must never drop a matching row
// given sound leaf answers.
func sideIndexFor(r *rand.Rand, df *decodedFile, e predicate.Expr) SideIndexSource {
	answers := map[*predicate.Leaf]indexing.Answer{}
	predicate.Walk(e, func(l *predicate.Leaf) {
		if r.IntN(3) == 0 {
			answers[l] = indexing.Answer{Unknown: true}
			return
		}
		bm := roaring64.New()
		for i := int64(0); i < df.Rows; i++ {
			if predicate.Matches(l, df.Row(i)) || r.IntN(20) == 0 {
				bm.Add(uint64(i))
			}
		}
		answers[l] = indexing.Answer{Positions: bm}
	})
	return fixedSideIndex{e: e, answers: answers}
}

type fixedSideIndex struct {
	e       predicate.Expr
	answers map[*predicate.Leaf]indexing.Answer
}

func (s fixedSideIndex) Select(_ context.Context, files []*DataFile, _ int64) ([]*roaring64.Bitmap, SideIndexNotes, error) {
	out := make([]*roaring64.Bitmap, len(files))
	pos, ok := indexing.Combine(s.e, func(l *predicate.Leaf) indexing.Answer {
		if a, ok := s.answers[l]; ok {
			return a
		}
		return indexing.Answer{Unknown: true}
	})
	if ok {
		for i := range out {
			out[i] = pos
		}
	}
	return out, SideIndexNotes{}, nil
}
