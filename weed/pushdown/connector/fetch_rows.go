package connector

// Rows next to the data: when side indexes answered a row group's
// predicate exactly (RowGroupRef.rows_exact) and few rows match, the fetch
// stage asks the volume pushdown service holding the file for those rows'
// projected columns (ReadRows), decoded there, instead of fetching and
// decoding their pages here:
//
//	exact rows of a row group (deletes taken out; under a LIMIT the first
//	rows up to it), at most volumeRowsMax and 1/volumeRowsShare of it,
//	whose planned pages are over volumeRowsMinBytes (64 KiB; smaller ones
//	of columns that are not lists are fetched and decoded here, and the
//	range cache keeps them)
//	   │ ReadRows, signed like ReadRanges
//	   ├─ ok: Arrow IPC of exactly those rows ─▶ project
//	   └─ any failure or a column not as this file's layout types it
//	      ─▶ the pages, fetched and decoded here (a fallback, counted)
//
// The volume keeps the row groups it decoded in memory, so warm reads of
// the same row groups decode nothing anywhere. Bytes received count as
// bytes read from the volume.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// volumeRowsMax bounds the rows of one row group read as rows from the
// volume (under a LIMIT, the rows up to it): past it, decoding the pages
// here in parallel is as cheap.
const volumeRowsMax = 8192

// volumeRowsShare: a row group whose rows read from the volume would be
// more than 1/volumeRowsShare of its rows is decoded here instead. Rows
// taken one by one from the volume's decoded row groups cost ~0.65 µs
// each (volume and connector, warm); decoding three columns' pages here
// ~0.08 µs a row of the row group: scattered rows hitting every page are
// cheaper as pages past ~12% of the row group (status = 'error', 20%).
const volumeRowsShare = 8

// volumeRowsMinBytes (the default of Options.VolumeRowsMinBytes): an
// exact row group whose planned pages (and dictionaries) of the columns
// read are at most this many bytes is read here: fetching them costs
// about what the rows' answer does, and once in the range cache they are
// read again with no call at all, where asking the volume is a round trip
// every time (the peer benchmark's side-index LIMIT 10 plans 7.7 KB: read
// here it was faster in 4 of 5 interleaved runs, e.g. 1.49 against 1.57 ms
// a warm query, and took ~10% less of the cluster's CPU).
const volumeRowsMinBytes = 64 << 10

// volumeRowsKey keys the query's count of row groups read with ReadRows
// (Stats.VolumeRowGroups) in its context.
type volumeRowsKey struct{}

// volumeStage is the pipeline's stage that asks the volume pushdown
// service holding a file for a row group's rows instead of reading its
// pages here: exact rows (rows, this file) and rows it filters (filter,
// fetch_scan.go).
type volumeStage struct {
	ft *fetcher
	// prepare reads a file's footer and what the query decodes of it,
	// once (a file whose call starts ahead of its row groups)
	prepare      func(ctx context.Context, p *prepared, f *fileRead) error
	pageAware    bool
	noRows       bool       // Options.NoVolumeRows
	rowsMinBytes int64      // Options.VolumeRowsMinBytes
	site         FilterSite // Options.FilterAt
}

// volumeStage is the connector's volume stage.
func (c *Connector) volumeStage() *volumeStage {
	return &volumeStage{ft: c.fetch, prepare: c.prepareFile, pageAware: c.opts.Mode == PageAware, noRows: c.opts.NoVolumeRows,
		rowsMinBytes: c.opts.VolumeRowsMinBytes, site: c.opts.FilterAt}
}

// rows answers an exact row group with rows the volume decoded; ok
// false: read it here (not exact, too many rows, no volume route, or the
// call failed — counted as a read fallback).
func (v *volumeStage) rows(ctx context.Context, p *prepared, f *fileRead, r *rowGroupRead) (rec arrow.RecordBatch, ok bool, err error) {
	if v.noRows || !r.exact || r.rows == nil {
		return nil, false, nil
	}
	// under a LIMIT an exact row group's first rows are its answer
	want := r.rows.Rows()
	if p.q.Limit > 0 {
		want = min(want, p.q.Limit)
	}
	if want > volumeRowsMax || want*volumeRowsShare > r.numRows {
		return nil, false, nil
	}
	if floor := v.rowsMinBytes; floor >= 0 && f.fl.cheapHere(r, f.need.tops, v.pageAware, cmp.Or(floor, volumeRowsMinBytes)) {
		return nil, false, nil
	}
	addr, routed, err := v.ft.volumeRoute(f.pf)
	if err != nil || !routed {
		return nil, false, err
	}
	fl, n := f.fl, f.need
	all := candidates(r)
	defer rowScratch.Put(all)
	if len(all) == 0 {
		return nil, false, nil
	}
	keep := all[:min(int64(len(all)), want)]
	var ids []int32
	tops := map[string]int{} // the file's top-level name → top
	for i, top := range n.outTops {
		if top >= 0 {
			ids = append(ids, int32(p.selectIDs[i]))
			tops[fl.arrow.Field(top).Name] = top
		}
	}
	cols := map[int]*column{}
	defer func() {
		for _, col := range cols {
			col.arr.Release()
		}
	}()
	if len(ids) > 0 {
		if err := v.ft.readRows(ctx, addr, f.pf, fl, r, keep, ids, tops, cols); err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			v.ft.fellBack(addr, f.pf, err)
			return nil, false, nil
		}
	}
	if k, _ := ctx.Value(volumeRowsKey{}).(*atomic.Int64); k != nil {
		k.Add(1)
	}
	rec, err = n.project(ctx, p, fl, r, cols, keep)
	return rec, err == nil, err
}

// cheapHere reports whether reading tops of r here costs about what asking
// the volume does: the ranges decoding them here needs (needRanges) at most
// floor bytes, and no list column (a list's pages decode whole here, where
// the volume keeps its row groups decoded: array_contains over label_list
// rows read here took 3.9× the connector CPU and 20.8 against 13.9 ms,
// bench/peer's kinds benchmark).
func (fl *fileLayout) cheapHere(r *rowGroupRead, tops []int, pageAware bool, floor int64) bool {
	for _, top := range tops {
		for _, leaf := range fl.leavesOf[top] {
			if fl.md.Schema.Column(leaf).MaxRepetitionLevel() > 0 {
				return false
			}
		}
	}
	var n int64
	for _, br := range fl.needRanges(tops, r, pageAware) {
		if n += br.Len; n > floor {
			return false
		}
	}
	return true
}

// readRows calls ReadRows for the rows keep of row group r and puts each
// returned column of a wanted top, typed as the file's layout types it,
// into cols.
func (ft *fetcher) readRows(ctx context.Context, addr string, pf *pushdown_pb.PlannedFile, fl *fileLayout, r *rowGroupRead, keep []int64, ids []int32, want map[string]int, cols map[int]*column) error {
	bm := roaring64.New()
	for _, row := range keep {
		bm.Add(uint64(r.firstRow + row))
	}
	positions, err := bm.ToBytes()
	if err != nil {
		return err
	}
	req := &pushdown_pb.ReadRowsRequest{ProjectedFieldIds: ids, Files: []*pushdown_pb.ReadRowsFile{{
		Path: pf.GetFile(), SizeBytes: pf.GetSizeBytes(), RecordCount: pf.GetRecordCount(), Identity: pf.GetIdentity(), Positions: positions}}}
	if fl.mapping != nil {
		if req.NameMappingJson, err = json.Marshal(fl.mapping); err != nil {
			return err
		}
	}
	conn, err := ft.volume.conn(addr)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, volumeCallTimeout)
	defer cancel()
	if cctx, err = ft.volume.sign(cctx, addr, "ReadRows", req); err != nil {
		return fmt.Errorf("sign ReadRows: %w", err)
	}
	resp, err := pushdown_pb.NewPushdownVolumeClient(conn).ReadRows(cctx, req)
	if err != nil {
		return fmt.Errorf("ReadRows %s: %w", pf.GetFile(), err)
	}
	if len(resp.GetFiles()) != 1 || resp.Files[0].GetRows() != int64(len(keep)) {
		return fmt.Errorf("ReadRows %s: answered %d files for 1, or not %d rows", pf.GetFile(), len(resp.GetFiles()), len(keep))
	}
	raw := resp.Files[0].GetColumnsIpc()
	if err := ipcColumns(raw, fl, keep, want, cols); err != nil {
		return fmt.Errorf("ReadRows %s: %w", pf.GetFile(), err)
	}
	ft.vol.bytes.Add(int64(len(raw)))
	ft.vol.calls.Add(1)
	return nil
}
