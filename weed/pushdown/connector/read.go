package connector

// Reading a plan, top down: the plan's files and row groups (plan stage),
// scheduled on the cores with results in plan order (scheduler), each row
// group run through the pipeline's stages (rowGroupPipeline), one type and
// one file a stage:
//
//	plan      planfiles.go   the response's files ─▶ fileRead; per file, once:
//	                         footer + layout (fetch.go: cached by file
//	                         identity) and what the query decodes (fileNeed)
//	schedule  schedule.go    units (file, row group) in plan order on the
//	                         workers; read-ahead bounded by Options.MaxBufferBytes
//	per row group (pipeline.go):
//	  volume   fetch_rows.go, fetch_scan.go   rows the volume decoded or
//	                         filtered (volumeStage), else:
//	  fetch    fetch.go      the plan's ranges of it (fetcher)
//	  decode   decode.go     its columns (fileLayout)
//	  filter   filter.go     candidates − deletes ∩ predicate (rowFilter)
//	  late     decode.go, fetch.go   fetch + decode the other columns'
//	                         pages of the matching rows
//	  project  project.go    SELECT columns of the matching rows
//	in plan order ─▶ output (output.go); LIMIT reached: nothing more is
//	                 scheduled, running units are cancelled
//
// Under a LIMIT one unit runs at first, one more at once for each unit
// taken short of it; a row group the plan did not narrow runs decode →
// filter → project a window of rows at a time (rowGroupPipeline.windows),
// its pages decompressed only as far as the windows reach, until it holds
// the LIMIT's rows.

import (
	"context"
	"runtime"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// readPlan reads the planned files.
func (c *Connector) readPlan(ctx context.Context, p *prepared, resp *pushdown_pb.ParquetPushdownResponse) (*Result, error) {
	return c.readFiles(ctx, p, filesOf(resp))
}

// readFiles reads planned files (filesOf), in order: their row groups
// scheduled on the workers (scheduler), each run through the pipeline
// (rowGroupPipeline), the results conformed to one schema and handed to
// the query's output.
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
	pl := c.pipeline(p)
	// a row group takes its decoded size of the budget: what its needed
	// columns hold uncompressed, by the footer (prepared here, once per
	// file; a file that fails to prepare keeps the estimate and its unit
	// reports the error)
	cost := func(ctx context.Context, u *unit) int64 {
		if pl.prepare(ctx, p, u.file) == nil {
			return u.file.decodedBytes(u.ref.GetRowGroup(), u.file.cost)
		}
		return u.file.cost
	}
	var outSchema *arrow.Schema
	filesDone, completed := map[*fileRead]int{}, 0
	take := func(u *unit, r unitResult) (bool, error) {
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
			return false, err
		}
		return p.q.out.add(rec)
	}
	s := &scheduler{workers: workers, budget: newBudget(c.opts.MaxBufferBytes), limited: p.q.Limit > 0}
	if err := s.run(ctx, units, cost, pl.read, take); err != nil {
		return nil, err
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
