package connector

// Sparse decode: a field whose wanted rows are few against the rows of its
// planned pages (a btree lookup landing in 1 MB pages), or of its whole
// chunk when the plan gave rows but no pages, decodes only those rows. The
// pages are still decompressed, but the values between the wanted rows
// are skipped, not decoded, and no array of the whole pages is built.
//
//	planned pages + dictionary region ─▶ pagedecode.PagesReader (no file
//	  built around them), or the whole chunk in the file
//	   │ arrow-go's column chunk reader: Skip to each run of wanted rows,
//	   │ ReadBatch the run; then Skip to the pages' end, which must be there
//	   ▼
//	column{arr: the wanted rows' values, rows: the wanted rows}
//
// Taken only for one top-level, non-repeated leaf whose Arrow type is the
// plain image of its physical values (ints, dates, times, timestamps,
// floats, booleans, strings, binary, fixed-size binary) and equal to the
// file's Arrow type; anything else decodes as before (decodePages,
// decodeWhole).

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pagedecode"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// sparseShare: rows decode sparsely when they are at most 1/sparseShare of
// the planned pages' rows.
const sparseShare = 8

// sparseRows are the rows of r to decode of pages (file order): planned,
// not deleted, inside a page; mini are their positions in the pages
// concatenated, as runs. ok is false when the pages are not in row order
// or the rows are too many to gain.
func sparseRows(r *rowGroupRead, pages []pageRange) (rows []int64, mini plan.RowSet, nrows int64, ok bool) {
	prevEnd := int64(-1)
	for _, p := range pages {
		if p.rowCount <= 0 || p.firstRow < prevEnd {
			return nil, nil, 0, false
		}
		prevEnd = p.firstRow + p.rowCount
		nrows += p.rowCount
	}
	if r.rows == nil || r.rows.Rows()*sparseShare > nrows {
		return nil, nil, 0, false
	}
	rows = make([]int64, 0, r.rows.Rows()) // not nil: nil rows would mean every row
	pg, base := 0, int64(0)                // base: position of pages[pg]'s first row
	for _, rr := range r.rows {
		for row := rr.Start; row < rr.End && row < r.numRows; row++ {
			if r.deleted != nil && r.deleted.Contains(uint64(r.firstRow+row)) {
				continue
			}
			for pg < len(pages) && row >= pages[pg].firstRow+pages[pg].rowCount {
				base += pages[pg].rowCount
				pg++
			}
			if pg == len(pages) {
				return rows, mini, nrows, true
			}
			if row < pages[pg].firstRow {
				continue // outside the planned pages: not decoded
			}
			rows = append(rows, row)
			at := base + row - pages[pg].firstRow
			if n := len(mini); n > 0 && mini[n-1].End == at {
				mini[n-1].End++
			} else {
				mini = append(mini, plan.RowRange{Start: at, End: at + 1})
			}
		}
	}
	return rows, mini, nrows, true
}

// decodeSparseTops decodes those of tops that decode sparsely into cols,
// side by side on up to GOMAXPROCS goroutines (a point lookup is one row
// group: its columns are the only parallelism); rest are the others.
func decodeSparseTops(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, tops []int, cols map[int]*column) (rest []int, err error) {
	type result struct {
		col *column
		ok  bool
		err error
	}
	outs := make([]result, len(tops))
	run := func(i int) {
		defer func() {
			if p := recover(); p != nil {
				outs[i].err = fmt.Errorf("%s row group %d: the sparse decoder failed: %v", fl.path, r.rg, p)
			}
		}()
		outs[i].col, outs[i].ok, outs[i].err = decodeSparse(ctx, fl, sf, r, tops[i])
	}
	var eligible []int
	for i, top := range tops {
		if fl.pageAwareOK(top, r) || (r.rows != nil && fl.lateEligible(top)) {
			eligible = append(eligible, i)
		}
	}
	parallel(len(eligible), func(k int) { run(eligible[k]) })
	for i, top := range tops {
		o := outs[i]
		if o.col != nil {
			cols[top] = o.col
		}
		if o.err != nil && err == nil {
			err = o.err
		}
		if !o.ok {
			rest = append(rest, top)
		}
	}
	return rest, err
}

// decodeSparse decodes top of r at its wanted rows (see sparseRows): from
// its planned pages (page-aware), else from its whole chunk when the plan
// narrowed the row group to rows. ok is false when it does not apply (the
// caller decodes the pages or the chunk).
func decodeSparse(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, top int) (col *column, ok bool, err error) {
	leaf := fl.leavesOf[top][0]
	if fl.md.Schema.Column(leaf).MaxRepetitionLevel() > 0 {
		return nil, false, nil // a list: its pages decode whole (decode_lists.go)
	}
	if fl.readsAsDict(r.rg, top) {
		// a string column every page of which is dictionary-encoded
		// decodes cheaper the usual way: indices only, each value once
		// (read sparsely, every wanted value is a new byte slice: twice
		// the CPU of a 1%-selective tenant_id query on the demo)
		return nil, false, nil
	}
	var (
		rows  []int64
		runs  plan.RowSet
		nrows int64
		cr    file.ColumnChunkReader
		typ   arrow.DataType
	)
	if fl.pageAwareOK(top, r) {
		if rows, runs, nrows, ok = sparseRows(r, r.pages[leaf]); !ok {
			return nil, false, nil
		}
		cr, typ, err = pagesReader(fl, sf, r, top, nrows)
	} else {
		if r.rows == nil || !fl.lateEligible(top) {
			return nil, false, nil
		}
		if pages, dict, found := fl.headerPagesOf(sf, r, top); found {
			// the pages holding the rows, found by their headers: only
			// those are decompressed
			pr := *r
			pr.pages, pr.dict = map[int][]pageRange{leaf: pages}, map[int]byteRange{}
			if dict.Len > 0 {
				pr.dict[leaf] = dict
			}
			if rows, runs, nrows, ok = sparseRows(&pr, pages); ok {
				cr, typ, err = pagesReader(fl, sf, &pr, top, nrows)
			}
		}
		if cr == nil && err == nil {
			// the chunk as one page of every row
			if rows, runs, nrows, ok = sparseRows(r, []pageRange{{firstRow: 0, rowCount: r.numRows}}); !ok {
				return nil, false, nil
			}
			cr, typ, err = chunkReader(fl, sf, r.rg, top)
		}
	}
	if err != nil || cr == nil {
		return nil, false, err
	}
	maxDef := fl.md.Schema.Column(leaf).MaxDefinitionLevel()
	arr, err := pagedecode.Runs(cr, typ, fl.md.Schema.Column(leaf).TypeLength(), runs, nrows, maxDef)
	if err != nil {
		return nil, false, fmt.Errorf("%s row group %d column %s: decode pages: %w", fl.path, r.rg, fl.md.Schema.Column(leaf).Path(), err)
	}
	if arr == nil {
		return nil, false, nil
	}
	if arr.Len() != len(rows) {
		arr.Release()
		return nil, false, fmt.Errorf("%s row group %d column %s: %d values for %d rows", fl.path, r.rg, fl.arrow.Field(top).Name, arr.Len(), len(rows))
	}
	if n, _ := ctx.Value(sparseCountKey{}).(*atomic.Int64); n != nil {
		n.Add(1)
	}
	return &column{arr: arr, rows: rows}, true, nil
}

// headerPagesOf selects, as latePages does, the pages of top's chunk in
// row group r.rg holding a row of r.rows, listed from the page headers of
// the chunk (fetched whole in sf; cached with the footer): a file without
// an offset index. ok is false when the headers do not list the chunk's
// pages or the selection is not at most half the chunk.
func (fl *fileLayout) headerPagesOf(sf *sparseFile, r *rowGroupRead, top int) (pages []pageRange, dict byteRange, ok bool) {
	leaf := fl.leavesOf[top][0]
	ch := fl.chunks[r.rg][leaf]
	key := [2]int{r.rg, leaf}
	var all []footer.Page
	if v, cached := fl.metaHeaderPages(key); cached {
		all = v
	} else {
		b, held := sf.bytesAt(ch.Start, ch.Length)
		if !held {
			return nil, byteRange{}, false
		}
		var err error
		if all, err = sideindex.FlatChunkPages(ch, b, r.numRows); err != nil {
			all = nil // read whole (and not tried again)
		}
		if fl.meta != nil {
			fl.meta.headerPages.Store(key, all)
		}
	}
	if all == nil {
		return nil, byteRange{}, false
	}
	return pagesWithRows(all, ch, r.rows)
}

// metaHeaderPages are the cached page-header pages of key ([row group,
// leaf]).
func (fl *fileLayout) metaHeaderPages(key [2]int) ([]footer.Page, bool) {
	if fl.meta == nil {
		return nil, false
	}
	v, ok := fl.meta.headerPages.Load(key)
	if !ok {
		return nil, false
	}
	pages, _ := v.([]footer.Page)
	return pages, true
}

// sparseCountKey keys the query's count of sparse decodes (Stats.SparseColumns)
// in its context.
type sparseCountKey struct{}

// pagesReader is a column chunk reader of top's planned pages of r (and
// dictionary region), arrow-go's page and column readers over their bytes
// (pagedecode.PagesReader: no file is built around them), and their Arrow
// type; nil when that is not the file's Arrow type of top.
func pagesReader(fl *fileLayout, sf *sparseFile, r *rowGroupRead, top int, nrows int64) (file.ColumnChunkReader, arrow.DataType, error) {
	leaf := fl.leavesOf[top][0]
	typ := plainImage(fl, top)
	if typ == nil {
		return nil, nil, nil
	}
	pp, err := fl.plannedPages(sf, r, leaf)
	if err != nil {
		return nil, nil, err
	}
	cr, err := pagedecode.PagesReader(fl.md.Schema.Column(leaf), pp.codec, pp.bytes, nrows, decodeMem)
	if err != nil {
		return nil, nil, fmt.Errorf("%s row group %d: page decoder: %w", fl.path, r.rg, err)
	}
	return cr, typ, nil
}

// pageBytes are leaf's dictionary region (when it has one) and planned
// pages of r, back to back: what pagedecode's readers take.
func pageBytes(sf *sparseFile, r *rowGroupRead, leaf int) ([]byte, error) {
	parts := r.pages[leaf]
	if d, hasDict := r.dict[leaf]; hasDict {
		parts = append([]pageRange{{byteRange: d}}, parts...)
	}
	size := int64(0)
	for _, p := range parts {
		size += p.Len
	}
	buf := make([]byte, size)
	at := int64(0)
	for _, p := range parts {
		if _, err := sf.ReadAt(buf[at:at+p.Len], p.Off); err != nil {
			return nil, err
		}
		at += p.Len
	}
	return buf, nil
}

// chunkReader is a column chunk reader of top's whole chunk in row group
// rg (fetched in sf), and its Arrow type; nil when that is not the file's
// Arrow type of top.
func chunkReader(fl *fileLayout, sf *sparseFile, rg, top int) (file.ColumnChunkReader, arrow.DataType, error) {
	typ := plainImage(fl, top)
	if typ == nil {
		return nil, nil, nil
	}
	rdr, err := file.NewParquetReader(sf, file.WithMetadata(fl.md), file.WithReadProps(readProps())) // the chunk read through a buffer, not copied whole
	if err != nil {
		return nil, nil, fmt.Errorf("%s row group %d: chunk decoder: %w", fl.path, rg, err)
	}
	cr, err := rdr.RowGroup(rg).Column(fl.leavesOf[top][0])
	if err != nil {
		return nil, nil, fmt.Errorf("%s row group %d: chunk decoder: %w", fl.path, rg, err)
	}
	return cr, typ, nil
}

// plainImage is the Arrow type pqarrow gives top without the file's
// stored Arrow schema (fl.inferred, made once with the layout), when it is
// the file's Arrow type of top (nil otherwise: pqarrow converts the
// values).
func plainImage(fl *fileLayout, top int) arrow.DataType {
	if fl.inferred == nil || top >= fl.inferred.NumFields() {
		return nil
	}
	if typ := fl.inferred.Field(top).Type; arrow.TypeEqual(typ, fl.arrow.Field(top).Type) {
		return typ
	}
	return nil
}
