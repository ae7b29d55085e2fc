package plan

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// exactPerFile answers every file with exactly its matching rows, as a
// side index answering every leaf exactly does.
type exactPerFile map[string]*roaring64.Bitmap

func (s exactPerFile) Select(_ context.Context, files []*DataFile, _ int64) ([]*roaring64.Bitmap, SideIndexNotes, error) {
	out := make([]*roaring64.Bitmap, len(files))
	notes := SideIndexNotes{Exact: make([]bool, len(files))}
	for i, f := range files {
		out[i], notes.Exact[i] = s[f.Path], s[f.Path] != nil
	}
	return out, notes, nil
}

// firstPositionsPerFile is exactPerFile cutting each answer to the first
// positions asked for, as the volume pushdown service does for a LIMIT's
// plan, counting the answers cut and the files asked again whole.
type firstPositionsPerFile struct {
	exactPerFile
	cut, whole, skipped *atomic.Int64
}

func (s firstPositionsPerFile) Select(ctx context.Context, files []*DataFile, first int64) ([]*roaring64.Bitmap, SideIndexNotes, error) {
	out, notes, err := s.exactPerFile.Select(ctx, files, 0)
	notes.Cut = make([]bool, len(files))
	if first <= 0 {
		s.whole.Add(int64(len(files)))
		return out, notes, err
	}
	notes.Skipped = make([]bool, len(files))
	held := uint64(0)
	for i := range out {
		if held >= uint64(first) {
			// the files before hold the positions asked for
			out[i], notes.Exact[i], notes.Skipped[i] = nil, false, true
			s.skipped.Add(1)
			continue
		}
		if out[i] != nil {
			out[i] = out[i].Clone()
			if notes.Cut[i] = rowbits.KeepFirst(out[i], uint64(first)); notes.Cut[i] {
				s.cut.Add(1)
			}
			held += out[i].GetCardinality()
		}
	}
	return out, notes, err
}

// TestALimitPlanHoldsLimitMatchingRowsOrEveryMatch plans random predicates
// over several generated files with an exact side index, random deletes
// and random limits, and checks against a full decode of every file that
// the rows a reader finds in the plan — matching, not deleted — are at
// least the limit, or every such row when fewer match; that rows planned
// exactly all match; and that a limit past every match drops none.
func TestALimitPlanHoldsLimitMatchingRowsOrEveryMatch(t *testing.T) {
	files, schema := generatedFiles(t, 3600)
	mem := memFiles{}
	for _, f := range files {
		mem[f.file.Path] = f.data
	}
	p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
	r := rand.New(rand.NewPCG(7, 3))
	var limitPrunes, truncated int64
	var cuts, wholes, skips atomic.Int64
	var unaskedPlanned int
	n := 400
	if testing.Short() {
		n = 80
	}
	for it := 0; it < n; it++ {
		pick := r.Perm(len(files))[:1+r.IntN(3)]
		raw := randomPredicate(r, schema, files[pick[0]].df, 2)
		e, err := predicate.Bind(raw, schema, predicate.DefaultLimits)
		if err != nil {
			t.Fatalf("bind %s: %v", raw, err)
		}
		side := exactPerFile{}
		dels := map[string]*roaring64.Bitmap{}
		req := Request{Table: Table{Schema: schema}, Predicate: e, Options: DefaultOptions(), SideIndex: side}
		var total int64 // matching rows not deleted, every file
		for _, i := range pick {
			f := files[i]
			df := f.file
			m := roaring64.New()
			for _, pos := range f.df.Matching(e) {
				m.Add(uint64(pos))
			}
			side[df.Path] = m
			if r.IntN(2) == 0 {
				df.HasDeletes = true
				dels[df.Path] = randomDeletes(r, f.df)
			}
			live := m.Clone()
			if d := dels[df.Path]; d != nil {
				live.AndNot(d)
			}
			total += int64(live.GetCardinality())
			req.Files = append(req.Files, df)
		}
		if len(dels) > 0 {
			req.Deletes = perFileDeletes(dels)
		}
		req.Limit = []int64{1, 3, 10, 100, 1000, 100000}[r.IntN(6)]
		resp, plans, err := p.Plan(context.Background(), req)
		if err != nil {
			t.Fatalf("plan %s limit %d: %v", e, req.Limit, err)
		}
		// holds checks a plan against the oracle and counts the matching
		// rows not deleted a reader finds in it.
		holds := func(resp *pushdown_pb.ParquetPushdownResponse, plans []*FilePlan) (found int64) {
			for k, fp := range plans {
				f := files[pick[k]]
				if fp.skip {
					if !side[f.file.Path].IsEmpty() {
						t.Fatalf("%s: %s: the %s tier pruned a file holding matching rows", f.name, e, fp.skipTier)
					}
					continue
				}
				for rg, rgp := range fp.rowGroups {
					if rgp.Skip {
						if rgp.SkipTier == TierLimit {
							limitPrunes++
						}
						continue
					}
					start, rows := f.df.RowGroupStart[rg], fp.Footer.RowGroupRows(rg)
					set := rgp.Rows
					if set == nil {
						set = All(rows)
					}
					for _, rr := range set {
						for local := rr.Start; local < rr.End; local++ {
							pos := start + local
							if fp.deleted != nil && fp.deleted.Contains(uint64(pos)) {
								continue
							}
							matches := side[f.file.Path].Contains(uint64(pos))
							if rgp.RowsExact && !matches {
								t.Fatalf("%s: %s: row %d is planned exactly but does not match", f.name, e, pos)
							}
							if matches {
								found++
							}
						}
					}
				}
				checkDeletedPositions(t, f.name, fp, resp)
				checkPagesCoverRows(t, f.name, e, fp, resp)
				if req.Limit >= total {
					checkPlan(t, f.name, e, f.df, fp, resp)
				}
			}
			return found
		}
		found := holds(resp, plans)
		if found < total {
			truncated++ // plans that left matching rows out
		}
		// The same plan from answers cut to their first positions (a small
		// slack, so deleted rows among them often force the whole answer).
		creq := req
		creq.SideIndex = firstPositionsPerFile{side, &cuts, &wholes, &skips}
		creq.Options.LimitSlack = r.Int64N(8)
		cresp, cplans, err := p.Plan(context.Background(), creq)
		if err != nil {
			t.Fatalf("plan %s limit %d from cut answers: %v", e, req.Limit, err)
		}
		if cfound := holds(cresp, cplans); cfound < min(req.Limit, total) {
			t.Fatalf("%s limit %d over %d files, from cut answers: the plan holds %d matching rows, want at least %d (%d match)", e, req.Limit, len(pick), cfound, min(req.Limit, total), total)
		}
		plannedUnasked := false
		for _, cfp := range cplans {
			plannedUnasked = plannedUnasked || slices.ContainsFunc(cfp.Missing, func(m string) bool { return strings.HasPrefix(m, "side index: not asked") })
		}
		if plannedUnasked {
			// a file after those the source expected to hold the LIMIT's
			// rows, planned without its index: fewer prunes, checked above
			unaskedPlanned++
			continue
		}
		for k, fp := range plans {
			cfp := cplans[k]
			if fp.skip != cfp.skip || len(fp.rowGroups) != len(cfp.rowGroups) {
				t.Fatalf("%s limit %d, %s: from cut answers the file is skipped %v (%d row groups), from whole answers %v (%d)", e, req.Limit, files[pick[k]].name, cfp.skip, len(cfp.rowGroups), fp.skip, len(fp.rowGroups))
			}
			for rg := range fp.rowGroups {
				a, b := fp.rowGroups[rg], cfp.rowGroups[rg]
				if a.Skip && b.Skip {
					continue // by one tier or another (a skipped file's by the limit)
				}
				if a.Skip != b.Skip || a.SkipTier != b.SkipTier || a.RowsExact != b.RowsExact || !slices.Equal(a.Rows, b.Rows) {
					t.Fatalf("%s limit %d, %s row group %d: from cut answers %+v, from whole answers %+v", e, req.Limit, files[pick[k]].name, rg, b, a)
				}
			}
		}
		if !proto.Equal(&pushdown_pb.ParquetPushdownResponse{RowGroups: resp.RowGroups, FileRanges: resp.FileRanges},
			&pushdown_pb.ParquetPushdownResponse{RowGroups: cresp.RowGroups, FileRanges: cresp.FileRanges}) {
			t.Fatalf("%s limit %d: the plan's row groups or ranges differ between cut and whole answers", e, req.Limit)
		}
		if want := min(req.Limit, total); found < want {
			t.Fatalf("%s limit %d over %d files: the plan holds %d matching rows, want at least %d (%d match)", e, req.Limit, len(pick), found, want, total)
		}
	}
	t.Logf("%d plans: %d row groups skipped by the limit, %d plans left matching rows out; %d answers cut, %d asked again whole, %d skipped (%d plans planned a skipped file)",
		n, limitPrunes, truncated, cuts.Load(), wholes.Load(), skips.Load(), unaskedPlanned)
	if cuts.Load() == 0 || wholes.Load() == 0 || skips.Load() == 0 || unaskedPlanned == 0 {
		t.Errorf("no answer was cut (%d), asked again whole (%d) or skipped (%d), or no skipped file planned (%d): the test does not exercise cut answers",
			cuts.Load(), wholes.Load(), skips.Load(), unaskedPlanned)
	}
	if limitPrunes == 0 || truncated == 0 {
		t.Errorf("the limit never skipped a row group (%d) or left a matching row out (%d): the test does not exercise it", limitPrunes, truncated)
	}
}

// perFileDeletes is a DeleteSource with a bitmap per file path.
type perFileDeletes map[string]*roaring64.Bitmap

func (d perFileDeletes) Deleted(_ context.Context, files []*DataFile) ([]*roaring64.Bitmap, DeleteStats, error) {
	out := make([]*roaring64.Bitmap, len(files))
	for i, f := range files {
		out[i] = d[f.Path]
	}
	return out, DeleteStats{}, nil
}
