package plan

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// Planner plans requests against a footer cache.
type Planner struct {
	Cache *footer.Cache
}

// peekBatch is how many footers a plan looks up in the cache per lock.
const peekBatch = 1024

// tierCounter accumulates one tier's figures.
type tierCounter struct {
	files, rowGroups, pages int64
	dur                     time.Duration
}

// Plan narrows one FileAccess per file by every tier (the manifest tier
// over the files, the file tiers' loop over each file, the limit tier
// over the files) and builds the response from them.
func (p *Planner) Plan(ctx context.Context, req Request) (*pushdown_pb.ParquetPushdownResponse, []*FilePlan, error) {
	start := Clock()
	o := req.Options
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultOptions().Concurrency
	}
	e := req.Predicate
	if e == nil {
		e = predicate.Const{Value: true}
	}
	hasPredicate := !isTrue(e)
	if hasPredicate {
		req.verdictKey, req.storeVerdicts = verdictKeyOf(e, o)
	}
	req.Table.nameMappingKey = nameMappingKey(req.Table.NameMapping)
	tiers := map[string]*tierCounter{}
	for _, t := range Tiers {
		tiers[t] = &tierCounter{}
	}
	fieldIDs := append(append([]int{}, req.Projection...), predicate.FieldIDs(e)...)
	if len(req.Projection) == 0 {
		fieldIDs = nil // every column
	}

	// a. manifest tier (pure CPU per file, spread over the cores), then
	// one batch of footer cache lookups for the survivors.
	t0 := time.Now()
	workers := max(1, runtime.GOMAXPROCS(0))
	plans := make([]*FilePlan, len(req.Files))
	planSlab := make([]FilePlan, len(req.Files)) // one allocation for every file's plan
	for i := range plans {
		plans[i] = &planSlab[i]
		plans[i].File = &req.Files[i]
	}
	if hasPredicate && !o.Disable[TierManifest] {
		narrowFilesByManifest(&req.Table, e, plans, workers)
	}
	live := make([]*FilePlan, 0, len(plans))
	ids := make([]footer.Identity, 0, len(plans))
	for _, fp := range plans {
		if fp.skip {
			tiers[TierManifest].files++
			continue
		}
		live = append(live, fp)
		ids = append(ids, footer.Identity{Path: fp.File.Path, Size: fp.File.Size})
	}
	cached := make([]*footer.Footer, len(ids))
	var hits, misses int64
	for lo := 0; lo < len(ids); lo += peekBatch { // the cache's lock held for a batch at a time
		hi := min(lo+peekBatch, len(ids))
		hits += int64(p.Cache.PeekMany(ids[lo:hi], cached[lo:hi]))
	}
	var cold []*FilePlan
	for i, fp := range live {
		if fp.Footer = cached[i]; fp.Footer == nil {
			cold = append(cold, fp)
		}
	}
	tiers[TierManifest].dur = time.Since(t0)
	projectedIDs := projectedFieldSet(&req, fieldIDs)
	if req.DecideEarly {
		// The pay-off decision from manifest-level figures, before any
		// footer is read: the plain scan reads at most the projected bytes
		// of the files left.
		var scan, rows, total int64
		for _, fp := range live {
			scan += manifestProjectedBytes(fp.File, projectedIDs)
			rows += fp.File.RecordCount
		}
		for _, fp := range plans {
			total += fp.File.RecordCount
		}
		if worth, reason := decideBeforePlanning(o, hasPredicate, scan, len(live), len(plans), fraction(rows, total)); !worth {
			return skippedPlan(plans, projectedIDs, scan, tiers, reason, start), plans, nil
		}
	}

	// Deletes of the surviving files are computed (beside the data) while
	// their footers load.
	var delStats DeleteStats
	deletesDone := make(chan error, 1)
	go func() {
		t0 := time.Now()
		err := safe.Call("planning deletes", func() (err error) {
			delStats, err = computeDeletes(ctx, req.Deletes, live)
			return err
		})
		tiers[TierDeletes].dur += time.Since(t0)
		deletesDone <- err
	}()
	sideDone := make(chan error, 1)
	go func() {
		if !hasPredicate || o.Disable[TierSideIndex] {
			sideDone <- nil
			return
		}
		t0 := time.Now()
		first := int64(0)
		if req.Limit > 0 {
			first = req.Limit + max(0, o.LimitSlack)
		}
		err := safe.Call("planning side indexes", func() error { return computeSideIndex(ctx, req.SideIndex, live, first) })
		tiers[TierSideIndex].dur += time.Since(t0)
		sideDone <- err
	}()

	// Footers of the surviving files not cached: cold loads in parallel.
	var mu sync.Mutex
	g, gctx := safe.Group(ctx, "plan")
	g.SetLimit(o.Concurrency)
	for _, fp := range cold {
		g.Go(func() error {
			f, hit, err := p.Cache.Get(gctx, footer.Identity{Path: fp.File.Path, Size: fp.File.Size})
			if err != nil {
				return err
			}
			mu.Lock()
			if hit {
				hits++
			} else {
				misses++
			}
			mu.Unlock()
			fp.Footer = f
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		<-deletesDone
		<-sideDone
		return nil, nil, err
	}
	if err := <-deletesDone; err != nil {
		<-sideDone
		return nil, nil, err
	}
	if err := <-sideDone; err != nil {
		return nil, nil, err
	}
	for _, fp := range live {
		if rows := fp.Footer.NumRows(); fp.File.RecordCount > 0 && rows != fp.File.RecordCount {
			return nil, nil, perr.New(perr.FailedPrecondition, "%s holds %d rows, the table metadata says %d: the file changed or the metadata is wrong", fp.File.Path, rows, fp.File.RecordCount)
		}
	}
	idsKey := fmt.Sprint(fieldIDs)
	if hasPredicate && !o.Disable[TierSideIndex] && !o.Disable[TierPageIndex] {
		t0 := time.Now()
		if err := attachSidePageIndexes(ctx, req.SidePages, &req, live, fieldIDs, idsKey); err != nil {
			return nil, nil, err
		}
		tiers[TierSideIndex].dur += time.Since(t0)
	}

	// b-f. the file tiers (planFile's loop): CPU work, one worker per core
	// over the files (I/O for page indexes and bloom filters happens on
	// first use only). The response pieces of each file are built from
	// its FileAccess by the same worker.
	tierWorkers := workers
	if cold != nil {
		tierWorkers = o.Concurrency
	}
	outs := make([]*fileOutput, len(live))
	// every surviving file's PlannedFile, filled by its worker
	planned := make([]*pushdown_pb.PlannedFile, len(live))
	// Workers claim runs of neighbouring files (each writes its own stretch
	// of outs, planned and the plans); one at a time while footers load.
	run := int64(64)
	if cold != nil {
		run = 1
	}
	var claimed atomic.Int64
	// The workers' time per tier is summed over the workers; it is
	// reported as each tier's share of the phase's wall time (parallel),
	// so no tier reads longer than the plan.
	phase, parallel := time.Now(), map[string]time.Duration{}
	g, gctx = safe.Group(ctx, "plan")
	for w := 0; w < tierWorkers; w++ {
		g.Go(func() error {
			local := newTierCounters()
			fc := &fileContext{hashes: &bloomHashMemo{}, lookups: p.Cache.Lookups()}
			fc.planned.chunk = min(512, len(live)/tierWorkers+1) // few if most are shared
			defer fc.lookups.Flush()
			defer func() {
				mu.Lock()
				for t, c := range local {
					tiers[t].files += c.files
					tiers[t].rowGroups += c.rowGroups
					parallel[t] += c.dur
				}
				mu.Unlock()
			}()
			for {
				lo := int(claimed.Add(run) - run)
				if lo >= len(live) {
					return nil
				}
				for i := lo; i < min(lo+int(run), len(live)); i++ {
					fp := live[i]
					if err := p.planFile(gctx, &req, fp, e, hasPredicate, local, fc); err != nil {
						return err
					}
					if fp.skip || fp.sideIndexSkipped {
						// a file the side indexes were not asked about is
						// most likely past the limit: its pieces wait for it
						continue
					}
					out := fileOutputOf(fp, fieldIDs, idsKey, o.CoalesceGap, req.RowPositions)
					outs[i] = out
					if out.rowGroupsLeft > 0 {
						planned[i] = out.plannedFile(fp, &fc.planned)
					}
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	addWallShares(tiers, parallel, time.Since(phase))
	t0 = time.Now()
	past := narrowFilesByLimit(live, req.Limit, tiers[TierLimit])
	tiers[TierLimit].dur += time.Since(t0)
	for _, i := range past {
		if outs[i] != nil {
			outs[i] = fileOutputOf(live[i], fieldIDs, idsKey, o.CoalesceGap, req.RowPositions)
		}
		planned[i] = nil
	}
	noteSkippedSideIndexes(live, past)
	var fc fileContext
	fc.planned.chunk = 8 // few: a file whose indexes were skipped is rarely planned
	for i, fp := range live {
		if fp.sideIndexSkipped && !fp.skip && outs[i] == nil {
			outs[i] = fileOutputOf(fp, fieldIDs, idsKey, o.CoalesceGap, req.RowPositions)
			if !fp.allSkipped() && outs[i].rowGroupsLeft > 0 {
				planned[i] = outs[i].plannedFile(fp, &fc.planned)
			}
		}
	}
	for i, fp := range live {
		fp.output = outs[i]
	}

	resp := buildResponse(&responseInputs{req: &req, o: o, e: e, hasPredicate: hasPredicate, plans: plans, live: live,
		outs: outs, planned: planned, projectedIDs: projectedIDs, tiers: tiers, hits: hits, misses: misses, delStats: delStats, start: start})
	return resp, plans, nil
}

// addWallShares adds to each tier its share of a parallel phase's wall
// time: the time its workers spent in it (summed over the workers, so
// up to workers × wall), scaled down when the sum exceeds the wall time.
func addWallShares(tiers map[string]*tierCounter, summed map[string]time.Duration, wall time.Duration) {
	var total time.Duration
	for _, d := range summed {
		total += d
	}
	for t, d := range summed {
		if total > wall {
			d = time.Duration(float64(d) * float64(wall) / float64(total))
		}
		tiers[t].dur += d
	}
}

func isTrue(e predicate.Expr) bool {
	c, ok := e.(predicate.Const)
	return ok && c.Value
}

// fileTier is one tier's step over a file: Narrow narrows fa, the access
// of fc's file, through FileAccess's methods, which cannot widen it.
type fileTier interface {
	Narrow(ctx context.Context, fc *fileContext, fa *FileAccess) error
}

// tierStep is a file tier as the tier loop runs it.
type tierStep struct {
	name string
	tier fileTier
	// needsPredicate: the tier has nothing to say without a predicate
	needsPredicate bool
	// verdict: one of the footer tiers, whose answers are memoized per
	// predicate together (verdicts.go)
	verdict bool
	// idle says the step has nothing to do on this file (nil: never): it
	// is neither run nor timed (a clock read costs about a microsecond
	// here, a warm plan of many files a few per file)
	idle func(fc *fileContext, fa *FileAccess) bool
}

// fileTiers are the tiers run over each file, cheapest first; a file
// whose footer tiers' answers are memoized runs memoFileTiers instead.
var (
	fileTiers = []tierStep{
		{TierFooter, footerStatsTier{}, true, true, nil},
		{TierBloom, bloomTier{}, true, true, idleWhen(TierBloom, noRowGroupLeft)},
		{TierPageIndex, pageIndexTier{}, true, true, idleWhen(TierPageIndex, noRowGroupLeft)},
		{TierSideIndex, sideIndexTier{}, true, false, idleWhen(TierSideIndex, func(fc *fileContext, _ *FileAccess) bool { return fc.plan.SideIndex == nil })},
		{TierDeletes, deletesTier{}, false, false, func(_ *fileContext, fa *FileAccess) bool {
			return fa.deleted == nil || fa.deleted.IsEmpty() || fa.allSkipped()
		}},
	}
	memoFileTiers = append([]tierStep{{TierFooter, memoizedVerdictsTier{}, true, true, nil}}, fileTiers[3:]...)
)

// idleWhen is idle when tier is switched off or when nothing does.
func idleWhen(tier string, nothing func(*fileContext, *FileAccess) bool) func(*fileContext, *FileAccess) bool {
	return func(fc *fileContext, fa *FileAccess) bool { return fc.off(tier) || nothing(fc, fa) }
}

// noRowGroupLeft: every row group is skipped.
func noRowGroupLeft(_ *fileContext, fa *FileAccess) bool { return fa.allSkipped() }

// planFile runs the file tiers over one file, cheapest first, each timed
// and its prunes counted into local (the calling worker's counters).
// fc is the worker's file context, reset for this file.
func (p *Planner) planFile(ctx context.Context, req *Request, fp *FilePlan, e predicate.Expr, hasPredicate bool, local map[string]*tierCounter, fc *fileContext) error {
	md := fp.Footer.Meta
	fp.state = fileStateOf(fp.Footer, req.Table.NameMapping, req.Table.nameMappingKey)
	fp.Columns = fp.state.columns
	fc.reset(&req.Table, fp.Footer, fp.state)
	fc.req, fc.plan, fc.e, fc.cache = req, fp, e, p.Cache
	if !fp.state.mapped {
		fp.Missing = append(fp.Missing, "field ids (no Parquet field ids and no name mapping)")
	}
	fa := &fp.FileAccess
	fa.shape(fc.rowGroups.take(md.NumRowGroups()))
	steps := fileTiers
	side := fp.Footer.SidePageColumns()
	fc.verdicts = nil
	if hasPredicate {
		if fc.verdicts = fp.state.verdictsOf(req.verdictKey, side); fc.verdicts != nil {
			// this predicate's verdicts on this file, memoized by an earlier plan
			steps = memoFileTiers
		}
	}
	fc.skippedIn = slices.Grow(fc.skippedIn[:0], len(fa.rowGroups))[:len(fa.rowGroups)]
	for i := range fc.skippedIn {
		fc.skippedIn[i] = -1
	}
	verdictsDone := false
	for i, s := range steps {
		if s.needsPredicate && !hasPredicate {
			continue
		}
		if !s.verdict && !verdictsDone {
			verdictsDone = true
			if hasPredicate {
				fc.afterVerdicts(fp, side)
			}
		}
		if s.idle != nil && s.idle(fc, fa) {
			continue
		}
		t0 := time.Now()
		if err := s.tier.Narrow(ctx, fc, fa); err != nil {
			return err
		}
		local[s.name].dur += time.Since(t0)
		fc.countPrunes(fa, i, steps, local)
	}
	return nil
}

// afterVerdicts memoizes the footer tiers' answers on fp's file state and
// notes what they used and missed (a memo hit: its notes).
func (fc *fileContext) afterVerdicts(fp *FilePlan, side int32) {
	if fc.verdicts != nil {
		fc.verdicts.addNotes(fp)
		return
	}
	if req := fc.req; req.verdictKey != 0 && req.storeVerdicts && !fc.volatile {
		fp.state.storeVerdicts(fc.newTierVerdicts(req.verdictKey, side, fp.rowGroups))
	}
	fp.Missing = fc.noteStrings(fp.Missing, fc.missing)
	fp.Used = fc.noteStrings(fp.Used, fc.used)
}

// countPrunes counts the row groups step i of steps skipped, each under
// the tier that skipped it, and the file under the tier of its last row
// group skipped when the step left none: the footer tiers' steps count as
// one (their verdicts are memoized together), so a memoized plan counts
// as an evaluated one.
func (fc *fileContext) countPrunes(fa *FileAccess, i int, steps []tierStep, local map[string]*tierCounter) {
	newly, alive := 0, 0
	for rg := range fa.rowGroups {
		switch {
		case !fa.rowGroups[rg].Skip:
			alive++
		case fc.skippedIn[rg] < 0:
			fc.skippedIn[rg] = int16(i)
			local[fa.rowGroups[rg].SkipTier].rowGroups++
			newly++
		}
	}
	if newly == 0 || alive > 0 {
		return
	}
	from := i // the first step whose skips count for the file
	for from > 0 && steps[i].verdict && steps[from-1].verdict {
		from--
	}
	for rg := len(fa.rowGroups) - 1; rg >= 0; rg-- {
		if int(fc.skippedIn[rg]) >= from {
			local[fa.rowGroups[rg].SkipTier].files++
			return
		}
	}
}

// newTierCounters are one worker's counters of the file tiers.
func newTierCounters() map[string]*tierCounter {
	local := map[string]*tierCounter{}
	for _, t := range Tiers[1:] {
		local[t] = &tierCounter{}
	}
	return local
}

// computeDeletes asks src for the deleted positions of the files that have
// deletes.
func computeDeletes(ctx context.Context, src DeleteSource, live []*FilePlan) (DeleteStats, error) {
	var files []*DataFile
	var plans []*FilePlan
	for _, fp := range live {
		if fp.File.HasDeletes {
			files = append(files, fp.File)
			plans = append(plans, fp)
		}
	}
	if len(files) == 0 {
		return DeleteStats{}, nil
	}
	if src == nil {
		return DeleteStats{}, perr.New(perr.Internal, "%d files have delete files but the plan has no delete source", len(files))
	}
	bms, st, err := src.Deleted(ctx, files)
	if err != nil {
		return st, err
	}
	if len(bms) != len(files) {
		return st, perr.New(perr.Internal, "delete source returned %d bitmaps for %d files", len(bms), len(files))
	}
	for i, fp := range plans {
		fp.addDeleted(bms[i])
	}
	return st, nil
}

// projectionOf returns the (memoized) leaf columns of a projection.
func projectionOf(fp *FilePlan, ids []int, idsKey string) []int {
	type key struct {
		cm  *ColumnMap
		ids string
	}
	k := key{cm: fp.Columns, ids: idsKey}
	return fp.Footer.SmallMemo(k, func() any { return fp.Columns.Projection(fp.Footer.Meta, ids) }).([]int)
}

// nameMappingKey is a digest of a name mapping's content ("" for none).
func nameMappingKey(nm iceberg.NameMapping) string {
	if len(nm) == 0 {
		return ""
	}
	b, err := json.Marshal(nm)
	if err != nil {
		return fmt.Sprintf("%p", &nm[0]) // not expected; an address still keys correctly
	}
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// projectedFieldSet is the set of field ids (nested ones included) whose
// bytes a projection reads; nil means every column.
func projectedFieldSet(req *Request, fieldIDs []int) map[int]bool {
	if len(fieldIDs) == 0 {
		return nil
	}
	ids := map[int]bool{}
	for _, id := range fieldIDs {
		ids[id] = true
		if field, ok := req.Table.Schema.FindFieldByID(id); ok {
			for nid := range nestedIDs(field) {
				ids[nid] = true
			}
		}
	}
	return ids
}

// manifestProjectedBytes estimates the projected bytes of a file pruned
// before its footer was read: the manifest's column sizes of the projected
// fields (ids, nil = all), or the whole file when they are not recorded.
func manifestProjectedBytes(f *DataFile, ids map[int]bool) int64 {
	if len(f.Stats.ColumnSizes) == 0 {
		return f.Size
	}
	var n int64
	for id, sz := range f.Stats.ColumnSizes {
		if ids == nil || ids[id] {
			n += sz
		}
	}
	return n
}

// forEachIndex calls fn(i) for every i in [0, n) on up to workers
// goroutines; fn must only touch index i's state.
func forEachIndex(n, workers int, fn func(i int)) {
	if workers <= 1 || n < 64 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	// each worker a contiguous stretch: neighbours' writes share no cache
	// lines across cores
	safe.ForEach(n, workers, (n+workers-1)/workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(i)
		}
	})
}

func nestedIDs(f iceberg.NestedField) map[int]bool {
	out := map[int]bool{f.ID: true}
	var walk func(t iceberg.Type)
	walk = func(t iceberg.Type) {
		switch x := t.(type) {
		case *iceberg.StructType:
			for _, c := range x.FieldList {
				out[c.ID] = true
				walk(c.Type)
			}
		case *iceberg.ListType:
			out[x.ElementID] = true
			walk(x.Element)
		case *iceberg.MapType:
			out[x.KeyID], out[x.ValueID] = true, true
			walk(x.KeyType)
			walk(x.ValueType)
		}
	}
	walk(f.Type)
	return out
}

// decideCost applies the design's "when not to push down" rules.
func decideCost(o Options, hasPredicate bool, planned, total int64, filesLeft, filesTotal int, selectivity float64, projectionPrunes bool) (bool, string) {
	summary := fmt.Sprintf("planned %s of %s projected (%s), %d of %d files, estimated selectivity %.4f",
		HumanBytes(planned), HumanBytes(total), percent(planned, total), filesLeft, filesTotal, selectivity)
	if ok, rule := manifestRules(o, hasPredicate, planned, filesLeft); !ok {
		return false, rule + "; " + summary
	}
	switch {
	case selectivity > o.MaxSelectivity && !projectionPrunes:
		return false, fmt.Sprintf("predicate is not selective (%.2f > %.2f) and the projection prunes few bytes; %s", selectivity, o.MaxSelectivity, summary)
	}
	return true, summary
}

// manifestRules are the cost model's rules that need only manifest-level
// figures (scan: the bytes a scan reads at most, in files files).
func manifestRules(o Options, hasPredicate bool, scan int64, files int) (bool, string) {
	switch {
	case !hasPredicate:
		return false, "no predicate: Iceberg file pruning alone does the job"
	case scan < o.MinScanBytes && files <= o.MinFiles:
		return false, fmt.Sprintf("planned scan below %s in at most %d file(s): a direct ranged read is cheaper than a planning round-trip",
			HumanBytes(o.MinScanBytes), o.MinFiles)
	}
	return true, ""
}

// decideBeforePlanning applies the manifest-level rules to the files the
// manifest tier left (scan: their projected bytes from the manifests, an
// upper bound of what a plan would read, so a rule that fires here fires
// on the plan too).
func decideBeforePlanning(o Options, hasPredicate bool, scan int64, filesLeft, filesTotal int, selectivity float64) (bool, string) {
	ok, rule := manifestRules(o, hasPredicate, scan, filesLeft)
	if ok {
		return true, ""
	}
	return false, fmt.Sprintf("%s; decided before planning from the manifests: a plain scan reads at most %s, %d of %d files, estimated selectivity %.4f",
		rule, HumanBytes(scan), filesLeft, filesTotal, selectivity)
}

// skippedPlan is the response of a plan the manifest-level cost model
// stopped after the manifest tier: no file planned, the figures known.
func skippedPlan(plans []*FilePlan, projectedIDs map[int]bool, scan int64, tiers map[string]*tierCounter, reason string, start time.Time) *pushdown_pb.ParquetPushdownResponse {
	st := &pushdown_pb.PushdownStats{PlanningSkipped: true, BytesPlainScan: scan, CostReason: reason}
	var rows, total int64
	for _, fp := range plans {
		st.FilesTotal++
		st.BytesTotal += manifestProjectedBytes(fp.File, projectedIDs)
		st.RowGroupsTotal += int64(len(fp.File.SplitOffsets))
		total += fp.File.RecordCount
		if fp.skip {
			st.FilesPruned++
			st.RowGroupsPruned += int64(len(fp.File.SplitOffsets))
		} else {
			rows += fp.File.RecordCount
		}
	}
	st.EstimatedSelectivity = fraction(rows, total)
	st.Tiers = tierStats(tiers, 0)
	st.PlanMicros = time.Since(start).Microseconds()
	return &pushdown_pb.ParquetPushdownResponse{Stats: st}
}

func fraction(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func percent(a, b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(a)/float64(b))
}

// HumanBytes renders a byte count.
func HumanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0") + " " + units[i]
}
