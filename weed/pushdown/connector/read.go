package connector

// Reading a plan: the stages in order, row group by row group, spread over
// the cores, results in plan order.
//
//	plan (plan.go) ─▶ units: (file, row group) in plan order
//	   │ workers (one per core); read-ahead bounded by Options.MaxBufferBytes
//	   ▼
//	per file, once:  footer + layout (fetch.go: cached by file identity)
//	per row group:   fetch    the plan's ranges of it (fetch.go)
//	                 decode   its columns (decode.go)
//	                 filter   candidates − deletes ∩ predicate (filter.go)
//	                 late     fetch + decode the other columns' pages of
//	                          the matching rows (decode.go, fetch.go)
//	                 project  SELECT columns of the matching rows (project.go)
//	   ▼
//	in plan order ─▶ LIMIT reached: nothing more is scheduled, running
//	                 units are cancelled
//
// Under a LIMIT one unit runs at first, one more at once for each unit
// taken short of it; a row group the plan did not narrow runs decode →
// filter → project a window of rows at a time (rowGroupWindows), its
// pages decompressed only as far as the windows reach, until it holds
// the LIMIT's rows.

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// fileRead is one planned file: what the plan says of it, and (prepared
// once, by the first of its row groups to run) its layout and what to
// decode.
type fileRead struct {
	pf     *pushdown_pb.PlannedFile
	rgRefs []*pushdown_pb.RowGroupRef
	pages  []*pushdown_pb.PageRef
	given  []byteRange // the plan's coalesced ranges of the file
	cost   int64       // read-ahead one row group of it takes, estimated from the plan (before its footer is read)

	once sync.Once
	err  error
	fl   *fileLayout
	need *fileNeed

	scanOnce sync.Once // the file's ScanRows call (fetch_scan.go), made once
	scan     *fileScan
	scanErr  error
	ahead    []*fileRead // the files after it whose calls its first call starts
	started  atomic.Bool // its call was started ahead
}

// fileNeed is what a query decodes of one file.
type fileNeed struct {
	tops, early, late []int // top-level fields: all, decoded first, decoded after the predicate
	predIDs           []int
	outSchema         *arrow.Schema
	outTops           []int
}

// unit is one row group of one file.
type unit struct {
	file *fileRead
	ref  *pushdown_pb.RowGroupRef
	cost int64 // of the read-ahead budget (set when it is dispatched)
	out  chan unitResult
}

type unitResult struct {
	rec arrow.RecordBatch
	err error
}

// FilePlan is one planned file with what the plan reads of it.
type FilePlan struct {
	File      *pushdown_pb.PlannedFile
	RowGroups []*pushdown_pb.RowGroupRef
	Pages     []*pushdown_pb.PageRef
	Ranges    []*pushdown_pb.FileRange
}

// PlanFiles is a plan's files, in its order, each with its row groups,
// pages and byte ranges: as the catalog nested them in each PlannedFile
// (the connector asks for nest_by_file), or grouped here from the flat
// lists of a catalog that does not nest (one pass). Entries of the flat
// lists that name no planned file are dropped (nothing reads them).
func PlanFiles(resp *pushdown_pb.ParquetPushdownResponse) []FilePlan {
	out := make([]FilePlan, len(resp.GetFiles()))
	flat := len(resp.GetRowGroups()) > 0 || len(resp.GetPages()) > 0 || len(resp.GetFileRanges()) > 0
	at := make(map[string]int, len(out))
	for i, pf := range resp.GetFiles() {
		out[i] = FilePlan{File: pf, RowGroups: pf.GetRowGroups(), Pages: pf.GetPages(), Ranges: pf.GetRanges()}
		if flat {
			at[pf.GetFile()] = i
		}
	}
	if !flat {
		return out
	}
	for _, rg := range resp.GetRowGroups() {
		if i, ok := at[rg.GetFile()]; ok {
			out[i].RowGroups = append(out[i].RowGroups, rg)
		}
	}
	for _, pg := range resp.GetPages() {
		if i, ok := at[pg.GetFile()]; ok {
			out[i].Pages = append(out[i].Pages, pg)
		}
	}
	for _, fr := range resp.GetFileRanges() {
		if i, ok := at[fr.GetFile()]; ok {
			out[i].Ranges = append(out[i].Ranges, fr)
		}
	}
	return out
}

// filesOf is the plan's files (PlanFiles) as the reads of them, the
// coalesced ranges sorted. Every reader of a plan (readFiles, the
// volumes' aggregation, ExplainFilterSites) starts from these.
func filesOf(resp *pushdown_pb.ParquetPushdownResponse) []*fileRead {
	plans := PlanFiles(resp)
	order := make([]*fileRead, len(plans))
	for i, fp := range plans {
		f := &fileRead{pf: fp.File, rgRefs: fp.RowGroups, pages: fp.Pages}
		for _, fr := range fp.Ranges {
			f.given = append(f.given, byteRange{Off: fr.GetOffset(), Len: fr.GetLength()})
		}
		sort.Slice(f.given, func(i, j int) bool { return f.given[i].Off < f.given[j].Off })
		order[i] = f
	}
	return order
}

// readPlan reads the planned files.
func (c *Connector) readPlan(ctx context.Context, p *prepared, resp *pushdown_pb.ParquetPushdownResponse) (*Result, error) {
	return c.readFiles(ctx, p, filesOf(resp))
}

// readFiles reads planned files (filesOf), in order.
func (c *Connector) readFiles(ctx context.Context, p *prepared, order []*fileRead) (*Result, error) {
	res := &Result{Stats: Stats{Pushdown: true, Mode: map[Mode]string{PageAware: "page-aware", RowGroup: "row-group"}[c.opts.Mode]}}
	var units []*unit
	workers := c.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	for i, f := range order {
		f.ahead = order[i+1 : min(len(order), i+1+workers)]
		var planned int64
		for _, r := range f.given {
			planned += r.Len
		}
		// decoded values take a few times their compressed bytes
		f.cost = 4 * planned / int64(max(1, len(f.rgRefs)))
		for _, ref := range f.rgRefs {
			units = append(units, &unit{file: f, ref: ref, out: make(chan unitResult, 1)})
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sparse, decoded, exact, volumeRows, dictCounted atomic.Int64
	ctx = context.WithValue(ctx, sparseCountKey{}, &sparse)
	ctx = context.WithValue(ctx, dictCountKey{}, &dictCounted)
	ctx = context.WithValue(ctx, decodedCountKey{}, &decoded)
	ctx = context.WithValue(ctx, exactCountKey{}, &exact)
	ctx = context.WithValue(ctx, volumeRowsKey{}, &volumeRows)
	scans := &scanCounters{}
	ctx = context.WithValue(ctx, scanCountersKey{}, scans)
	defer func() {
		res.Stats.SparseColumns, res.Stats.RowsDecoded, res.Stats.ExactRowGroups = sparse.Load(), decoded.Load(), exact.Load()
		res.Stats.VolumeRowGroups, res.Stats.DictionaryCountedRowGroups = volumeRows.Load(), dictCounted.Load()
		scans.fill(&res.Stats, c.opts.FilterAt)
	}()
	budget := newBudget(c.opts.MaxBufferBytes)
	sem := make(chan struct{}, workers)
	// under a LIMIT one unit runs at first: each unit taken without
	// meeting it lets one more run at once, up to workers; a unit's slot
	// is freed when it is taken, not when it ends, so no unit starts
	// that the LIMIT may not need (started, it would be cancelled before
	// its reads reach the range cache: read again by each query)
	narrowed, limited := 0, p.q.Limit > 0
	if limited {
		for ; narrowed < workers-1; narrowed++ {
			sem <- struct{}{}
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, u := range units {
			// a row group takes its decoded size of the budget: what its
			// needed columns hold uncompressed, by the footer (prepared
			// here, once per file; a file that fails to prepare keeps the
			// estimate and its unit reports the error)
			u.cost = u.file.cost
			if u.file.prepare(ctx, c, p) == nil {
				u.cost = u.file.decodedBytes(u.ref.GetRowGroup(), u.file.cost)
			}
			if !budget.acquire(ctx, u.cost) {
				u.out <- unitResult{err: ctx.Err()}
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				budget.release(u.cost)
				u.out <- unitResult{err: ctx.Err()}
				continue
			}
			wg.Add(1)
			go func(u *unit) {
				defer wg.Done()
				if !limited {
					defer func() { <-sem }()
				}
				u.out <- c.safeReadUnit(ctx, p, u)
			}(u)
		}
	}()

	var outSchema *arrow.Schema
	filesDone, completed := map[*fileRead]int{}, 0
	fail := func(err error) (*Result, error) {
		cancel()
		return nil, err
	}
	for i, u := range units {
		r := <-u.out
		if r.err != nil {
			return fail(r.err)
		}
		filesDone[u.file]++
		res.Stats.RowGroups++
		if filesDone[u.file] == 1 {
			res.Stats.Files++ // a file some row group was read of
		}
		if filesDone[u.file] == len(u.file.rgRefs) {
			completed++
			if c.opts.Progress != nil {
				c.opts.Progress(completed, len(order))
			}
		}
		if outSchema == nil {
			outSchema = u.file.need.outSchema
		}
		rec, err := conform(ctx, r.rec, outSchema)
		if err != nil {
			r.rec.Release()
			return fail(err)
		}
		done, err := p.q.out.add(rec)
		if err != nil {
			return fail(err)
		}
		if done {
			cancel() // LIMIT reached: stop what still runs
			for _, rest := range units[i+1:] {
				if r := <-rest.out; r.rec != nil {
					r.rec.Release()
				}
			}
			break
		}
		budget.release(u.cost) // taken: the next may start
		if limited {
			<-sem
		}
		if narrowed > 0 {
			<-sem
			narrowed--
		}
	}
	if outSchema == nil {
		outSchema = emptySchema(p)
		if p.q.CountOnly {
			outSchema = countSchema
		}
	}
	res.Schema = outSchema
	return res, nil
}

// budget bounds the read-ahead: the bytes of units started but not yet
// taken in order. One unit always runs, however large.
type budget struct {
	mu       sync.Mutex
	cond     *sync.Cond
	capacity int64 // <= 0: unbounded
	held     int64
}

func newBudget(capacity int64) *budget {
	b := &budget{capacity: capacity}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *budget) acquire(ctx context.Context, n int64) bool {
	if b.capacity <= 0 {
		return ctx.Err() == nil
	}
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.held > 0 && b.held+n > b.capacity && ctx.Err() == nil {
		b.cond.Wait()
	}
	if ctx.Err() != nil {
		return false
	}
	b.held += n
	return true
}

func (b *budget) release(n int64) {
	if b.capacity <= 0 {
		return
	}
	b.mu.Lock()
	b.held -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}

// decodedBytes is what row group rg of the file holds uncompressed in
// the columns the query decodes (a bound of its decoded Arrow size, bar
// offsets and validity); orElse when the footer does not say.
func (f *fileRead) decodedBytes(rg int32, orElse int64) int64 {
	if f.fl == nil || f.need == nil || f.fl.md == nil || int(rg) < 0 || int(rg) >= f.fl.md.NumRowGroups() {
		return orElse
	}
	md := f.fl.md.RowGroup(int(rg))
	var n int64
	for _, top := range f.need.tops {
		if top < 0 || top >= len(f.fl.leavesOf) {
			continue
		}
		for _, leaf := range f.fl.leavesOf[top] {
			cc, err := md.ColumnChunk(leaf)
			if err != nil {
				return orElse
			}
			n += cc.TotalUncompressedSize()
		}
	}
	if n <= 0 {
		return orElse
	}
	return n
}

// prepare reads the file's footer (cached) and works out what to decode.
func (f *fileRead) prepare(ctx context.Context, c *Connector, p *prepared) error {
	f.once.Do(func() {
		f.fl, f.err = c.layoutOf(ctx, f.pf, p.mapping)
		if f.err != nil {
			return
		}
		f.need, f.err = c.needOf(ctx, p, f.fl)
	})
	return f.err
}

// needOf lists the top-level fields of fl to decode (the projection's and
// the predicate's) and which of them are read late.
func (c *Connector) needOf(ctx context.Context, p *prepared, fl *fileLayout) (*fileNeed, error) {
	n := &fileNeed{predIDs: predicate.FieldIDs(p.expr)}
	if err := c.applyPartitionConstants(ctx, p, fl, append(append([]int{}, p.selectIDs...), n.predIDs...)); err != nil {
		return nil, err
	}
	need := map[int]bool{}
	addField := func(id int) {
		if top, ok := fl.topFieldOf(id); ok && !need[top] {
			need[top] = true
			n.tops = append(n.tops, top)
		}
	}
	// a count decodes the predicate's columns alone (the projection's
	// only when no predicate column is stored: a row group's rows are
	// counted through some column)
	countOnly := p.q.CountOnly && len(n.predIDs) > 0
	if !countOnly {
		for _, id := range p.selectIDs {
			addField(id)
		}
	}
	predTop := map[int]bool{}
	addPred := func(id int) {
		addField(id)
		if top, ok := fl.topFieldOf(id); ok {
			predTop[top] = true
		}
	}
	for _, id := range n.predIDs {
		addPred(id)
		// a nested field the file lacks: its nearest stored ancestor struct
		// (whose NULLs make it NULL)
		if _, ok := fl.topFieldOf(id); !ok {
			for a, has := p.parents[id]; has; a, has = p.parents[a] {
				if _, stored := fl.topFieldOf(a); stored {
					addPred(a)
					break
				}
			}
		}
	}
	if countOnly && len(n.tops) == 0 {
		for _, id := range p.selectIDs {
			addField(id)
		}
	}
	// Late materialization (page-aware mode): in a row group the plan could
	// not narrow, the predicate's columns are read first; the other
	// columns are then read only in the pages holding matching rows.
	_, always := p.expr.(predicate.Const)
	for _, top := range n.tops {
		if c.opts.Mode == PageAware && !always && !predTop[top] && fl.lateEligible(top) {
			n.late = append(n.late, top)
		} else {
			n.early = append(n.early, top)
		}
	}
	n.outSchema, n.outTops = outputSchema(p, fl)
	if p.q.CountOnly {
		n.outSchema, n.outTops = countSchema, nil // row counts only: nothing projected
	}
	return n, nil
}

// rowGroupReadOf is what the plan says to decode of one row group.
func (c *Connector) rowGroupReadOf(f *fileRead, ref *pushdown_pb.RowGroupRef) (*rowGroupRead, error) {
	r := &rowGroupRead{rg: int(ref.RowGroup), numRows: ref.RowCount, pages: map[int][]pageRange{}, dict: map[int]byteRange{}, firstRow: ref.FirstRow, exact: ref.RowsExact}
	if r.rg < 0 || r.rg >= len(f.fl.chunks) {
		return nil, fmt.Errorf("%s: the plan names row group %d of %d", f.pf.File, r.rg, len(f.fl.chunks))
	}
	if len(ref.DeletedPositions) > 0 {
		var err error
		if r.deleted, err = rowbits.Decode(ref.DeletedPositions); err != nil {
			return nil, fmt.Errorf("%s row group %d: the plan's deleted positions do not decode: %w", f.pf.File, ref.RowGroup, err)
		}
	}
	switch {
	case len(ref.RowPositions) > 0 && len(ref.RowRanges) > 0:
		return nil, fmt.Errorf("%s row group %d: the plan gives both row ranges and row positions", f.pf.File, ref.RowGroup)
	case len(ref.RowPositions) > 0:
		rows, err := plan.RowSetOfPositions(ref.RowPositions, ref.RowCount)
		if err != nil {
			return nil, fmt.Errorf("%s row group %d: the plan's row positions: %w", f.pf.File, ref.RowGroup, err)
		}
		r.rows = rows
	case len(ref.RowRanges) > 0:
		rs := make([]plan.RowRange, len(ref.RowRanges))
		for i, rr := range ref.RowRanges {
			rs[i] = plan.RowRange{Start: rr.Start, End: rr.End}
		}
		r.rows = plan.Union(nil, rs)
	}
	if c.opts.Mode != PageAware {
		return r, nil
	}
	for _, pg := range f.pages {
		if int(pg.RowGroup) != r.rg {
			continue
		}
		leaf := f.fl.md.Schema.ColumnIndexByName(pg.GetColumn().GetPath())
		if leaf < 0 {
			continue
		}
		if pg.Dictionary {
			r.dict[leaf] = byteRange{Off: pg.Offset, Len: pg.Length}
			continue
		}
		r.pages[leaf] = append(r.pages[leaf], pageRange{byteRange{Off: pg.Offset, Len: pg.Length}, pg.FirstRowIndex, pg.RowCount, pg.StartsInsideRow, pg.EndsInsideRow})
	}
	return r, nil
}

// safeReadUnit is readUnit with a panic of a decoder turned into an error
// naming the row group.
func (c *Connector) safeReadUnit(ctx context.Context, p *prepared, u *unit) (res unitResult) {
	defer func() {
		if r := recover(); r != nil {
			res = unitResult{err: fmt.Errorf("%s row group %d: the decoder failed: %v", u.file.pf.File, u.ref.RowGroup, r)}
		}
	}()
	rec, err := c.readUnit(ctx, p, u)
	return unitResult{rec, err}
}

// readUnit runs the stages on one row group.
func (c *Connector) readUnit(ctx context.Context, p *prepared, u *unit) (arrow.RecordBatch, error) {
	f := u.file
	if err := f.prepare(ctx, c, p); err != nil {
		return nil, err
	}
	fl, n := f.fl, f.need
	r, err := c.rowGroupReadOf(f, u.ref)
	if err != nil {
		return nil, err
	}
	if _, isConst := p.expr.(predicate.Const); r.exact && !isConst {
		if n, _ := ctx.Value(exactCountKey{}).(*atomic.Int64); n != nil {
			n.Add(1) // read without evaluating the predicate, however read
		}
	}
	// fetch: an exact row group's few rows from the volume holding them
	if rec, ok, err := c.volumeRows(ctx, p, f, r); ok || err != nil {
		return rec, err
	}
	// filter: a row group's predicate evaluated by the volume holding it
	if rec, ok, err := c.volumeFilter(ctx, p, f, r); ok || err != nil {
		return rec, err
	}
	pageAware := c.opts.Mode == PageAware
	now := n.tops
	// under a LIMIT, a row group the plan did not narrow to a few of its
	// rows, or whose planned rows no planned pages locate (its chunks read
	// whole either way), decodes a window of rows at a time from its whole
	// chunks, all its columns at once, until the LIMIT is met
	windowed := p.q.Limit > 0 && (r.rows == nil || r.rows.Rows()*sparseShare > r.numRows || !fl.pagesLocate(now, r, pageAware))
	var needs, extra []byteRange
	if !windowed && r.rows == nil && len(n.late) > 0 {
		r.late, now = n.late, n.early
		extra = fl.offsetIndexRanges(r.rg, n.late)
	}
	if windowed && r.rows != nil {
		whole := *r
		whole.rows = nil
		needs = fl.needRanges(now, &whole, pageAware)
	} else {
		needs = fl.needRanges(now, r, pageAware)
	}

	given, rest := coveredBy(f.given, needs)
	sf, err := c.fetch.fetch(ctx, f.pf, given, append(rest, extra...))
	if err != nil {
		return nil, err
	}
	if windowed {
		return c.rowGroupWindows(ctx, p, f, r, sf)
	}
	rec, err := c.rowGroup(ctx, p, f, r, now, sf)
	if _, isConst := p.expr.(predicate.Const); err == nil && !r.exact && !isConst {
		if sc := scanCountersOf(ctx); sc != nil {
			// what the predicate kept here feeds the selectivity estimate
			cands := r.numRows
			if r.rows != nil {
				cands = r.rows.Rows()
			}
			sc.evaluated.Add(cands)
			sc.matched.Add(rec.NumRows())
		}
	}
	return rec, err
}

// firstWindow is the size of a LIMIT's first window of a row group: a
// few times the LIMIT, within bounds; each next window doubles.
func firstWindow(limit int64) int64 {
	return min(max(8*limit, 256), 4096)
}

// rowGroupWindows runs decode, filter and project on one row group (its
// whole chunks in sf) a window of rows at a time (the plan's rows of it,
// when it names them), until the windows hold
// the LIMIT's rows or the row group ends: the rows it returns are the
// first matching rows of the row group, as many as the LIMIT takes.
func (c *Connector) rowGroupWindows(ctx context.Context, p *prepared, f *fileRead, r *rowGroupRead, sf *sparseFile) (arrow.RecordBatch, error) {
	fl, n := f.fl, f.need
	cs, err := newChunkStream(ctx, fl, sf, r.rg, n.tops)
	if err != nil {
		return nil, err
	}
	defer cs.release()
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	var found int64
	for window := firstWindow(p.q.Limit); cs.at < r.numRows && found < p.q.Limit; window *= 2 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		first := cs.at
		cols, err := cs.next(window)
		if err != nil {
			return nil, err
		}
		countDecoded(ctx, cs.at-first)
		w := *r
		w.rows = plan.RowSet{{Start: first, End: cs.at}} // the window's planned rows, exact when the plan's are
		if r.rows != nil {
			w.rows = plan.Intersect(r.rows, w.rows)
		}
		keep, err := c.keepRows(ctx, p, fl, &w, cols)
		var rec arrow.RecordBatch
		if err == nil {
			taken := keep[:min(int64(len(keep)), p.q.Limit-found)] // the rows past the LIMIT are not taken
			rec, err = project(ctx, p, fl, &w, cols, taken, n.outSchema, n.outTops)
			rowScratch.Put(keep)
		}
		releaseColumns(cols)
		if err != nil {
			return nil, err
		}
		found += rec.NumRows()
		recs = append(recs, rec)
	}
	return concatRecords(n.outSchema, recs)
}

// rowGroup runs the stages after the first fetch (sf) on one row group:
// decode now, filter, fetch and decode the late columns, project.
func (c *Connector) rowGroup(ctx context.Context, p *prepared, f *fileRead, r *rowGroupRead, now []int, sf *sparseFile) (arrow.RecordBatch, error) {
	fl, n := f.fl, f.need
	// a COUNT(*) on one dictionary-encoded column: its rows by code
	if rec, ok := countOnDictionary(ctx, p, fl, sf, r); ok {
		return rec, nil
	}
	// decode
	cols := map[int]*column{}
	defer func() {
		for _, col := range cols {
			col.arr.Release()
		}
	}()
	if err := decodeTops(ctx, fl, sf, r, now, c.opts.Mode == PageAware, cols); err != nil {
		return nil, err
	}
	countDecoded(ctx, r.numRows)
	// filter
	keep, err := c.keepRows(ctx, p, fl, r, cols)
	if err != nil {
		return nil, err
	}
	defer rowScratch.Put(keep)
	// late columns: fetch and decode the pages of the matching rows
	if len(r.late) > 0 && len(keep) > 0 {
		lr := fl.lateRead(sf, r, keep)
		given, rest := coveredBy(f.given, lr.wholeChunks)
		sf2, err := c.fetch.fetch(ctx, f.pf, given, append(rest, lr.pageRanges...))
		if err != nil {
			return nil, err
		}
		if err := decodeTops(ctx, fl, sf2, lr.sel, r.late, true, cols); err != nil {
			return nil, err
		}
	}
	// project
	return project(ctx, p, fl, r, cols, keep, n.outSchema, n.outTops)
}

// keepRows are r's candidates the predicate keeps, evaluated on cols —
// or, when side indexes answered every leaf exactly (r.exact), all of
// them without evaluating it. The slice is rowScratch's: the caller
// releases it when done.
func (c *Connector) keepRows(ctx context.Context, p *prepared, fl *fileLayout, r *rowGroupRead, cols map[int]*column) ([]int64, error) {
	k, isConst := p.expr.(predicate.Const)
	switch {
	case isConst && k.Value:
		return candidates(r), nil // no predicate: every candidate
	case r.exact && !isConst:
		return candidates(r), nil // the planned rows are exactly the matching ones
	}
	if keep, ok := denseLeafRows(p, fl, r, cols); ok {
		return keep, nil
	}
	rows := candidates(r)
	defer rowScratch.Put(rows)
	sel, err := (&colfilter.Filter{Expr: p.expr, Scratch: true}).SelectRows(decodedBatch(fl, r.rg, cols, p.schema, p.parents, rows))
	if err != nil {
		return nil, err
	}
	defer posScratch.Put(sel)
	keep := rowScratch.Get(len(sel))
	for i, j := range sel {
		keep[i] = rows[j]
	}
	return keep, nil
}

// exactCountKey keys the query's count of row groups read without
// evaluating the predicate (Stats.ExactRowGroups) in its context.
type exactCountKey struct{}

// candidates are the row group's planned rows less its deleted ones.
func candidates(r *rowGroupRead) []int64 {
	ranges := r.rows
	if ranges == nil {
		ranges = plan.All(r.numRows)
	}
	rows := rowScratch.Get(int(ranges.Rows()))[:0]
	for _, rr := range ranges {
		for row := rr.Start; row < rr.End && row < r.numRows; row++ {
			if r.deleted == nil || !r.deleted.Contains(uint64(r.firstRow+row)) {
				rows = append(rows, row)
			}
		}
	}
	return rows
}

// coveredBy splits needed ranges into the plan's ranges (given, sorted)
// that hold them, read as they are, and the needs no single one of them
// holds. A plan's range much larger than what the row group needs of it
// (a plan reading every column coalesces a whole file into one range) is
// not read whole for one row group: its needs are read instead, so a
// row group holds its own bytes, not the file's (wholeGivenSlack).
func coveredBy(given []byteRange, needs []byteRange) (use, rest []byteRange) {
	served := map[int][]byteRange{}
	var order []int
	for _, nd := range needs {
		i := searchRange(given, nd.Off)
		if i < len(given) && given[i].Off <= nd.Off && nd.Off+nd.Len <= given[i].Off+given[i].Len {
			if served[i] == nil {
				order = append(order, i)
			}
			served[i] = append(served[i], nd)
			continue
		}
		rest = append(rest, nd)
	}
	for _, i := range order {
		var n int64
		for _, nd := range served[i] {
			n += nd.Len
		}
		if given[i].Len <= 2*n || given[i].Len-n <= wholeGivenSlack {
			use = append(use, given[i])
		} else {
			rest = append(rest, served[i]...)
		}
	}
	return use, rest
}

// wholeGivenSlack: a plan's range is read whole for a row group when it
// holds at most this many bytes more than the row group needs of it (or
// at most twice what it needs).
const wholeGivenSlack = 1 << 20

// searchRange is the first range of sorted rs ending after off.
func searchRange(rs []byteRange, off int64) int {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := (lo + hi) / 2
		if rs[m].Off+rs[m].Len <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// decodedCountKey keys the query's count of rows decoded (Stats.RowsDecoded)
// in its context.
type decodedCountKey struct{}

// countDecoded adds n rows decoded to the query's count.
func countDecoded(ctx context.Context, n int64) {
	if c, _ := ctx.Value(decodedCountKey{}).(*atomic.Int64); c != nil {
		c.Add(n)
	}
}
