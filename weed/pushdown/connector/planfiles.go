package connector

// The plan stage: the catalog's response as the reads of its files. Each
// planned file becomes a fileRead (its row groups, pages and coalesced
// ranges, as the catalog nested them); the first of its row groups to run
// reads its footer and works out what the query decodes of it (fileNeed);
// each row group's entry becomes a rowGroupRead (rows, deletes, pages).

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

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

// prepareFile reads f's footer and works out what p decodes of it, once
// (the pipeline's stages call it for any file they reach first).
func (c *Connector) prepareFile(ctx context.Context, p *prepared, f *fileRead) error {
	return f.prepare(ctx, c, p)
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

// rowGroupRead is what the plan says to decode of one of f's row groups
// (its planned pages only when pageAware).
func (f *fileRead) rowGroupRead(ref *pushdown_pb.RowGroupRef, pageAware bool) (*rowGroupRead, error) {
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
	if !pageAware {
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
