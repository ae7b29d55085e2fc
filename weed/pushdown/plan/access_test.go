package plan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

func TestAFreshFileAccessReadsEverythingAndRefusesToWiden(t *testing.T) {
	var zero FileAccess
	if zero.Skipped() || zero.allSkipped() || zero.NumRowGroups() != 0 || zero.Deleted() != nil {
		t.Fatalf("the zero FileAccess must read everything: %+v", zero)
	}
	if rg := zero.RowGroup(3); rg.Skip || rg.Rows != nil || rg.RowsExact {
		t.Fatalf("a row group of an unshaped access must be read whole, got %+v", rg)
	}
	var a FileAccess
	a.shape(make([]RowGroupAccess, 2))
	if a.allSkipped() || a.RowGroup(0).Skip || a.RowGroup(1).Rows != nil {
		t.Fatalf("a fresh shaped access must read every row group whole: %+v", a)
	}
	if err := a.narrowRowGroup(0, 100, RowGroupAccess{Rows: RowSet{{10, 20}, {40, 50}}}); err != nil {
		t.Fatal(err)
	}
	for _, wider := range []RowSet{nil, {{10, 21}}, {{5, 15}}, {{10, 20}, {30, 35}}, {{0, 100}}} {
		err := a.narrowRowGroup(0, 100, RowGroupAccess{Rows: wider})
		if perr.KindOf(err) != perr.Internal {
			t.Fatalf("narrowing rows {10-20, 40-50} to %v: err %v, want an Internal refusal", wider, err)
		}
	}
	if got := a.RowGroup(0).Rows; !slices.Equal(got, RowSet{{10, 20}, {40, 50}}) {
		t.Fatalf("a refused widening changed the rows to %v", got)
	}
	if err := a.narrowRowGroup(1, 100, RowGroupAccess{Rows: RowSet{{0, 101}}}); err == nil {
		t.Fatal("rows past the row group's end must be refused")
	}
	a.skipRowGroup(1, TierBloom)
	if err := a.narrowRowGroup(1, 100, RowGroupAccess{}); err != nil || !a.RowGroup(1).Skip || a.RowGroup(1).SkipTier != TierBloom {
		t.Fatalf("a skipped row group must stay skipped by its tier: %+v, %v", a.RowGroup(1), err)
	}
	a.skipRowGroup(1, TierDeletes)
	if a.RowGroup(1).SkipTier != TierBloom {
		t.Fatalf("skipping again must keep the first tier, got %s", a.RowGroup(1).SkipTier)
	}
	if err := a.intersectRowGroup(0, 100, RowGroupAccess{Rows: RowSet{{15, 45}}}, TierPageIndex); err != nil {
		t.Fatal(err)
	}
	if got := a.RowGroup(0).Rows; !slices.Equal(got, RowSet{{15, 20}, {40, 45}}) {
		t.Fatalf("intersecting {10-20, 40-50} with {15-45}: %v", got)
	}
	del := roaring64.BitmapOf(1, 2)
	a.addDeleted(del)
	a.addDeleted(roaring64.BitmapOf(7))
	if got := a.Deleted().ToArray(); !slices.Equal(got, []uint64{1, 2, 7}) || del.GetCardinality() != 2 {
		t.Fatalf("deleted positions only add up (and the caller's bitmap is not modified): %v, %v", got, del.ToArray())
	}
}

// randomAccess is an access of f's row groups as earlier tiers might have
// left it: some row groups skipped, some narrowed to random row ranges.
func randomAccess(r *rand.Rand, f *footer.Footer) FileAccess {
	var a FileAccess
	a.shape(make([]RowGroupAccess, f.Meta.NumRowGroups()))
	for rg := range a.rowGroups {
		n := f.RowGroupRows(rg)
		switch k := r.IntN(6); {
		case k == 0:
			a.rowGroups[rg] = RowGroupAccess{Skip: true, SkipTier: Tiers[1+r.IntN(len(Tiers)-1)]}
		case k <= 2 || n < 2:
		default:
			var rs []RowRange
			for i := 1 + r.IntN(5); i > 0; i-- {
				s := r.Int64N(n)
				rs = append(rs, RowRange{s, s + 1 + r.Int64N(n-s)})
			}
			a.rowGroups[rg].Rows = normalize(rs)
		}
	}
	return a
}

// cloneAccess copies an access deep, row sets included.
func cloneAccess(a FileAccess) FileAccess {
	c := a
	c.rowGroups = make([]RowGroupAccess, len(a.rowGroups))
	for i, rg := range a.rowGroups {
		c.rowGroups[i] = rg
		if rg.Rows != nil {
			c.rowGroups[i].Rows = slices.Clone(rg.Rows)
		}
	}
	return c
}

// keptRows are the file positions an access reads.
func keptRows(a *FileAccess, f *footer.Footer) *roaring64.Bitmap {
	out := roaring64.New()
	if a.skip {
		return out
	}
	var first int64
	for rg, rga := range a.rowGroups {
		n := f.RowGroupRows(rg)
		switch {
		case rga.Skip:
		case rga.Rows == nil:
			out.AddRange(uint64(first), uint64(first+n))
		default:
			for _, rr := range rga.Rows {
				out.AddRange(uint64(first+rr.Start), uint64(first+rr.End))
			}
		}
		first += n
	}
	return out
}

// checkOnlyNarrowed asserts that out reads no row in reads none of, keeps
// every skip of in, and (keepMatches) reads every row of matching in reads.
func checkOnlyNarrowed(t *testing.T, what string, f *footer.Footer, in, out *FileAccess, matching *roaring64.Bitmap, keepMatches bool) {
	t.Helper()
	if in.skip && !out.skip {
		t.Fatalf("%s: the file skipped by %s is read again", what, in.skipTier)
	}
	for rg := range in.rowGroups {
		if a, b := in.rowGroups[rg], out.rowGroups[rg]; a.Skip && (!b.Skip || b.SkipTier != a.SkipTier) {
			t.Fatalf("%s: row group %d skipped by %s became %+v", what, rg, a.SkipTier, b)
		}
	}
	before, after := keptRows(in, f), keptRows(out, f)
	if wider := roaring64.AndNot(after, before); !wider.IsEmpty() {
		t.Fatalf("%s: widened: %d rows read that were not before (first %d)", what, wider.GetCardinality(), wider.Minimum())
	}
	if keepMatches {
		if lost := roaring64.AndNot(roaring64.And(before, matching), after); !lost.IsEmpty() {
			t.Fatalf("%s: dropped %d matching rows (first %d)", what, lost.GetCardinality(), lost.Minimum())
		}
	}
}

// TestEveryFileTierOnlyNarrowsARandomAccessAndKeepsEveryMatchingRow feeds
// each tier step random accesses of generated files under random
// predicates, deletes and side index answers: what it returns must lie
// within what it was given and still read every matching row (not
// deleted) that it was given, the oracle deciding which rows match.
func TestEveryFileTierOnlyNarrowsARandomAccessAndKeepsEveryMatchingRow(t *testing.T) {
	files, schema := generatedFiles(t, 3600)
	mem := memFiles{}
	for _, f := range files {
		mem[f.file.Path] = f.data
	}
	ctx := context.Background()
	p := &Planner{Cache: footer.NewCache("test", 64<<20, mem.open)}
	steps := append(slices.Clone(fileTiers), memoFileTiers[0])
	var stepNames []string
	for _, s := range steps {
		stepNames = append(stepNames, s.name)
	}
	stepNames[len(steps)-1] += " (memoized verdicts)"
	n := 300
	if testing.Short() {
		n = 60
	}
	r := rand.New(rand.NewPCG(27, 1))
	narrowed := map[string]int{}
	for i := 0; i < n; i++ {
		f := files[i%len(files)]
		e := randomBoundPredicate(t, r, schema, f.df)
		ftr, _, err := p.Cache.Get(ctx, footer.Identity{Path: f.file.Path, Size: f.file.Size})
		if err != nil {
			t.Fatal(err)
		}
		req := &Request{Table: Table{Schema: schema}, Files: []DataFile{f.file}, Predicate: e, Options: DefaultOptions()}
		fp := &FilePlan{File: &req.Files[0], Footer: ftr}
		fp.state = fileStateOf(ftr, nil, "")
		fp.Columns = fp.state.columns
		var deleted *roaring64.Bitmap
		if r.IntN(2) == 0 {
			deleted = randomDeletes(r, f.df)
		}
		matching := roaring64.New()
		for _, row := range f.df.Matching(e) {
			matching.Add(uint64(row))
		}
		switch r.IntN(3) {
		case 0: // sound candidates
			bms, _, err := sideIndexFor(r, f.df, e).Select(ctx, []*DataFile{&req.Files[0]}, 0)
			if err != nil {
				t.Fatal(err)
			}
			fp.SideIndex = bms[0]
		case 1: // the exact answer, sometimes read under a LIMIT
			fp.SideIndex, fp.SideIndexExact = matching.Clone(), true
			if r.IntN(2) == 0 {
				req.Limit = 1 + r.Int64N(200)
			}
		}
		fc := &fileContext{hashes: &bloomHashMemo{}}
		fc.reset(&req.Table, ftr, fp.state)
		fc.req, fc.plan, fc.e, fc.cache = req, fp, e, p.Cache
		// the footer tiers' verdicts of a fresh access, for the memoized step
		fresh := FileAccess{}
		fresh.shape(make([]RowGroupAccess, ftr.Meta.NumRowGroups()))
		for _, s := range fileTiers[:3] {
			if err := s.tier.Narrow(ctx, fc, &fresh); err != nil {
				t.Fatal(err)
			}
		}
		fc.verdicts = fc.newTierVerdicts(1, 0, fresh.rowGroups)
		live := roaring64.AndNot(matching, orEmpty(deleted))
		for k, s := range steps {
			in := randomAccess(r, ftr)
			in.addDeleted(deleted)
			pristine := cloneAccess(in)
			// the step's access shares its row sets with in's: a step must
			// replace them, never write into them (memoized verdicts share
			// theirs with every plan)
			fp.FileAccess = in
			fp.rowGroups = slices.Clone(in.rowGroups)
			if err := s.tier.Narrow(ctx, fc, &fp.FileAccess); err != nil {
				t.Fatalf("%s over %s: %s: %v", stepNames[k], f.name, e, err)
			}
			what := fmt.Sprintf("%s over %s, %s (limit %d)", stepNames[k], f.name, e, req.Limit)
			// a LIMIT's walk may leave out matching rows past the limit's
			checkOnlyNarrowed(t, what, ftr, &pristine, &fp.FileAccess, live, req.Limit == 0)
			if !keptRows(&fp.FileAccess, ftr).Equals(keptRows(&pristine, ftr)) {
				narrowed[stepNames[k]]++
			}
			if fmt.Sprint(in.rowGroups) != fmt.Sprint(pristine.rowGroups) {
				t.Fatalf("%s: the step wrote into the row sets it was given", what)
			}
		}
	}
	t.Logf("%d predicates: steps that narrowed their input: %v", n, narrowed)
	for _, name := range stepNames {
		if narrowed[name] == 0 {
			t.Errorf("the %s step never narrowed anything: the test does not exercise it", name)
		}
	}
}

func orEmpty(b *roaring64.Bitmap) *roaring64.Bitmap {
	if b == nil {
		return roaring64.New()
	}
	return b
}

// TestTheFileLevelTiersOnlySkipFiles runs the manifest and limit tiers,
// which decide whole files, over random accesses: a file skipped stays
// skipped, and the manifest tier never skips a file holding a matching
// row.
func TestTheFileLevelTiersOnlySkipFiles(t *testing.T) {
	files, schema := generatedFiles(t, 1200)
	r := rand.New(rand.NewPCG(27, 2))
	for i := 0; i < 200; i++ {
		e := randomBoundPredicate(t, r, schema, files[i%len(files)].df)
		plans := make([]*FilePlan, len(files))
		was := make([]bool, len(files))
		for k := range files {
			plans[k] = &FilePlan{File: &files[k].file}
			if was[k] = r.IntN(4) == 0; was[k] {
				plans[k].skipFile(TierManifest)
			}
		}
		narrowFilesByManifest(&Table{Schema: schema}, e, plans, 2)
		for k, fp := range plans {
			if was[k] && !fp.Skipped() {
				t.Fatalf("%s: the manifest tier read a skipped file again", e)
			}
			if !was[k] && fp.Skipped() && len(files[k].df.Matching(e)) > 0 {
				t.Fatalf("%s: the manifest tier skipped %s, which holds matching rows", e, files[k].name)
			}
		}
		// the limit tier over files whose plans hold random rows certain to
		// match: it only skips row groups of the files past the limit
		var limit int64 = 1 + r.Int64N(3000)
		for k, fp := range plans {
			fp.Footer = nil
			fp.FileAccess = FileAccess{}
			fp.shape(make([]RowGroupAccess, 1+r.IntN(3)))
			fp.limitCertain = r.Int64N(1000)
			if r.IntN(3) == 0 {
				fp.skipRowGroup(0, TierFooter)
			}
			was[k] = fp.rowGroups[0].Skip
		}
		var c tierCounter
		past := narrowFilesByLimit(plans, limit, &c)
		var certain int64
		for k, fp := range plans {
			isPast := slices.Contains(past, k)
			if isPast != (certain >= limit) {
				t.Fatalf("limit %d: file %d past the limit %v, but the files before it hold %d certain rows", limit, k, isPast, certain)
			}
			if isPast && !fp.allSkipped() || was[k] && fp.rowGroups[0].SkipTier != TierFooter {
				t.Fatalf("limit %d: file %d: %+v", limit, k, fp.rowGroups)
			}
			certain += fp.limitCertain
		}
	}
}
