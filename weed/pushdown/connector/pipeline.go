package connector

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// rowGroupPipeline is the stages one query's row groups run through, top
// down, each a type of its own (read.go's diagram):
//
//	plan      fileRead (planfiles.go): the plan's row group ─▶ rowGroupRead
//	volume    volumeStage (fetch_rows.go, fetch_scan.go): rows the volume
//	          decoded or filtered ─▶ project        (or, declined: ▼)
//	fetch     fetcher (fetch.go): the plan's ranges and what decoding needs
//	decode    fileLayout (decode.go): columns from planned pages or chunks
//	filter    rowFilter (filter.go): the rows the predicate keeps
//	late      fetch + decode of the other columns' pages of those rows
//	project   fileNeed.project (project.go): the SELECT's columns of those rows
type rowGroupPipeline struct {
	p         *prepared
	pageAware bool
	prepare   func(ctx context.Context, p *prepared, f *fileRead) error // a file's footer and need, once
	volume    *volumeStage
	fetch     *fetcher
	filter    rowFilter
}

// pipeline is the connector's pipeline for query p.
func (c *Connector) pipeline(p *prepared) *rowGroupPipeline {
	return &rowGroupPipeline{p: p, pageAware: c.opts.Mode == PageAware, prepare: c.prepareFile,
		volume: c.volumeStage(), fetch: c.fetch, filter: rowFilterOf(p)}
}

// read is readUnit with a panic of a decoder turned into an error naming
// the row group.
func (pl *rowGroupPipeline) read(ctx context.Context, u *unit) (res unitResult) {
	defer func() {
		if r := recover(); r != nil {
			res = unitResult{err: fmt.Errorf("%s row group %d: the decoder failed: %v", u.file.pf.File, u.ref.RowGroup, r)}
		}
	}()
	rec, err := pl.readUnit(ctx, u)
	return unitResult{rec, err}
}

// readUnit runs the stages on one row group.
func (pl *rowGroupPipeline) readUnit(ctx context.Context, u *unit) (arrow.RecordBatch, error) {
	p, f := pl.p, u.file
	if err := pl.prepare(ctx, p, f); err != nil {
		return nil, err
	}
	fl, n := f.fl, f.need
	r, err := f.rowGroupRead(u.ref, pl.pageAware)
	if err != nil {
		return nil, err
	}
	if _, isConst := p.expr.(predicate.Const); r.exact && !isConst {
		if n, _ := ctx.Value(exactCountKey{}).(*atomic.Int64); n != nil {
			n.Add(1) // read without evaluating the predicate, however read
		}
	}
	// fetch: an exact row group's few rows from the volume holding them
	if rec, ok, err := pl.volume.rows(ctx, p, f, r); ok || err != nil {
		return rec, err
	}
	// filter: a row group's predicate evaluated by the volume holding it
	if rec, ok, err := pl.volume.filter(ctx, p, f, r); ok || err != nil {
		return rec, err
	}
	pageAware := pl.pageAware
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
	sf, err := pl.fetch.fetch(ctx, f.pf, given, append(rest, extra...))
	if err != nil {
		return nil, err
	}
	if windowed {
		return pl.windows(ctx, f, r, sf)
	}
	rec, err := pl.rowGroup(ctx, f, r, now, sf)
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

// windows runs decode, filter and project on one row group (its
// whole chunks in sf) a window of rows at a time (the plan's rows of it,
// when it names them), until the windows hold
// the LIMIT's rows or the row group ends: the rows it returns are the
// first matching rows of the row group, as many as the LIMIT takes.
func (pl *rowGroupPipeline) windows(ctx context.Context, f *fileRead, r *rowGroupRead, sf *sparseFile) (arrow.RecordBatch, error) {
	p, fl, n := pl.p, f.fl, f.need
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
		keep, err := pl.filter.keep(fl, &w, cols)
		var rec arrow.RecordBatch
		if err == nil {
			taken := keep[:min(int64(len(keep)), p.q.Limit-found)] // the rows past the LIMIT are not taken
			rec, err = n.project(ctx, p, fl, &w, cols, taken)
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
func (pl *rowGroupPipeline) rowGroup(ctx context.Context, f *fileRead, r *rowGroupRead, now []int, sf *sparseFile) (arrow.RecordBatch, error) {
	p, fl, n := pl.p, f.fl, f.need
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
	if err := decodeTops(ctx, fl, sf, r, now, pl.pageAware, cols); err != nil {
		return nil, err
	}
	countDecoded(ctx, r.numRows)
	// filter
	keep, err := pl.filter.keep(fl, r, cols)
	if err != nil {
		return nil, err
	}
	defer rowScratch.Put(keep)
	// late columns: fetch and decode the pages of the matching rows
	if len(r.late) > 0 && len(keep) > 0 {
		lr := fl.lateRead(sf, r, keep)
		given, rest := coveredBy(f.given, lr.wholeChunks)
		sf2, err := pl.fetch.fetch(ctx, f.pf, given, append(rest, lr.pageRanges...))
		if err != nil {
			return nil, err
		}
		if err := decodeTops(ctx, fl, sf2, lr.sel, r.late, true, cols); err != nil {
			return nil, err
		}
	}
	// project
	return n.project(ctx, p, fl, r, cols, keep)
}
