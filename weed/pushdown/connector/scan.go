package connector

import (
	"bytes"
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// scanFile reads one planned file: its footer, the byte ranges the chosen
// mode needs, then every planned row group, returning one record per row
// group (matching rows, projected columns in SELECT order).
func (c *Connector) scanFile(ctx context.Context, p *prepared, pf *pushdown_pb.PlannedFile, rgRefs []*pushdown_pb.RowGroupRef,
	pageRefs []*pushdown_pb.PageRef, limit int64) ([]arrow.RecordBatch, *arrow.Schema, error) {
	fb, err := c.fetch.fetch(ctx, pf.File, pf.SizeBytes, []byteRange{{pf.FooterOffset, pf.FooterLength}})
	if err != nil {
		return nil, nil, err
	}
	raw := make([]byte, pf.FooterLength)
	if _, err := fb.ReadAt(raw, pf.FooterOffset); err != nil {
		return nil, nil, err
	}
	md, err := footer.ParseFooterBytes(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: footer: %w", pf.File, err)
	}
	md.SetSourceFileSize(pf.SizeBytes)
	fl, err := newFileLayout(pf.File, pf.SizeBytes, md, p.mapping)
	if err != nil {
		return nil, nil, err
	}
	if fl.chunks, err = footer.Layout(md, pf.FooterOffset); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pf.File, err)
	}
	predIDs := predicate.FieldIDs(p.expr)
	if err := c.applyPartitionConstants(ctx, p, fl, append(append([]int{}, p.selectIDs...), predIDs...)); err != nil {
		return nil, nil, err
	}

	// Top-level fields to decode: the projection and the predicate's.
	need := map[int]bool{}
	var tops []int
	addField := func(id int) {
		if top, ok := fl.topFieldOf(id); ok && !need[top] {
			need[top] = true
			tops = append(tops, top)
		}
	}
	for _, id := range p.selectIDs {
		addField(id)
	}
	parents := p.parents
	predTop := map[int]bool{}
	addPred := func(id int) {
		addField(id)
		if top, ok := fl.topFieldOf(id); ok {
			predTop[top] = true
		}
	}
	for _, id := range predIDs {
		addPred(id)
		// a nested field the file lacks: its nearest stored ancestor struct
		// (whose NULLs make it NULL)
		if _, ok := fl.topFieldOf(id); !ok {
			for a, has := parents[id]; has; a, has = parents[a] {
				if _, stored := fl.topFieldOf(a); stored {
					addPred(a)
					break
				}
			}
		}
	}

	reads := make([]*rowGroupRead, 0, len(rgRefs))
	byRG := map[int]*rowGroupRead{}
	for _, ref := range rgRefs {
		r := &rowGroupRead{rg: int(ref.RowGroup), numRows: ref.RowCount, pages: map[int][]pageRange{}, dict: map[int]byteRange{}, firstRow: ref.FirstRow}
		if len(ref.DeletedPositions) > 0 {
			r.deleted = roaring64.New()
			if _, err := r.deleted.ReadFrom(bytes.NewReader(ref.DeletedPositions)); err != nil {
				return nil, nil, fmt.Errorf("%s row group %d: the plan's deleted positions do not decode: %w", pf.File, ref.RowGroup, err)
			}
		}
		if len(ref.RowRanges) > 0 {
			var rs []plan.RowRange
			for _, rr := range ref.RowRanges {
				rs = append(rs, plan.RowRange{Start: rr.Start, End: rr.End})
			}
			r.rows = plan.Union(nil, rs)
		}
		reads = append(reads, r)
		byRG[r.rg] = r
	}
	if c.opts.Mode == PageAware {
		for _, pg := range pageRefs {
			r := byRG[int(pg.RowGroup)]
			leaf := md.Schema.ColumnIndexByName(pg.GetColumn().GetPath())
			if r == nil || leaf < 0 {
				continue
			}
			if pg.Dictionary {
				r.dict[leaf] = byteRange{pg.Offset, pg.Length}
				continue
			}
			r.pages[leaf] = append(r.pages[leaf], pageRange{byteRange{pg.Offset, pg.Length}, pg.FirstRowIndex, pg.RowCount})
		}
	}
	// Late materialization (page-aware mode): in a row group the plan could
	// not narrow, the predicate's columns are read first; the other
	// columns are then read only in the pages holding matching rows, found
	// through their offset indexes.
	var early, late []int
	_, always := p.expr.(predicate.Const)
	for _, top := range tops {
		if c.opts.Mode == PageAware && !always && !predTop[top] && fl.lateEligible(top) {
			late = append(late, top)
		} else {
			early = append(early, top)
		}
	}
	var ranges []byteRange
	for _, r := range reads {
		if r.rows == nil && len(late) > 0 {
			r.late = late
			ranges = append(ranges, fl.needRanges(early, r, true)...)
			ranges = append(ranges, fl.offsetIndexRanges(r.rg, late)...)
			continue
		}
		ranges = append(ranges, fl.needRanges(tops, r, c.opts.Mode == PageAware)...)
	}
	sf, err := c.fetch.fetch(ctx, pf.File, pf.SizeBytes, ranges)
	if err != nil {
		return nil, nil, err
	}

	outSchema, outTops := c.outputSchema(p, fl)
	var out []arrow.RecordBatch
	for _, r := range reads {
		rec, err := c.scanRowGroup(ctx, p, pf, fl, sf, r, tops, outSchema, outTops, predIDs)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, nil, err
		}
		out = append(out, rec)
	}
	return out, outSchema, nil
}

// outputSchema is the result schema in SELECT order with the file's Arrow
// types; outTops[i] is the file's top-level field of output column i (-1:
// not in this file, read as NULL).
func (c *Connector) outputSchema(p *prepared, fl *fileLayout) (*arrow.Schema, []int) {
	var fields []arrow.Field
	var tops []int
	for _, id := range p.selectIDs {
		name, _ := p.schema.FindColumnName(id)
		if top, ok := fl.topFieldOf(id); ok {
			f := fl.arrow.Field(top)
			f.Name = name
			if fld, _ := p.schema.FindFieldByID(id); isStruct(fld.Type) {
				// projected onto the table's struct (see evolve.go)
				if as := emptySchemaOf(p, id); as != nil {
					f.Type, f.Nullable = as, !fld.Required
				}
			}
			fields = append(fields, f)
			tops = append(tops, top)
			continue
		}
		// A field the file does not store: NULL, typed from the table schema.
		fld, _ := p.schema.FindFieldByID(id)
		typ := arrow.Null
		if as := emptySchemaOf(p, fld.ID); as != nil {
			typ = as
		}
		fields = append(fields, arrow.Field{Name: name, Type: typ, Nullable: true})
		tops = append(tops, -1)
	}
	return arrow.NewSchema(fields, nil), tops
}

func isStruct(t iceberg.Type) bool {
	_, ok := t.(*iceberg.StructType)
	return ok
}

func emptySchemaOf(p *prepared, id int) arrow.DataType {
	q := *p
	q.selectIDs = []int{id}
	s := emptySchema(&q)
	if s.NumFields() == 1 {
		return s.Field(0).Type
	}
	return nil
}

func (c *Connector) scanRowGroup(ctx context.Context, p *prepared, pf *pushdown_pb.PlannedFile, fl *fileLayout, sf *sparseFile, r *rowGroupRead, tops []int,
	outSchema *arrow.Schema, outTops []int, predIDs []int) (arrow.RecordBatch, error) {
	cols := map[int]*column{}
	defer func() {
		for _, col := range cols {
			col.arr.Release()
		}
	}()
	lateTop := map[int]bool{}
	for _, top := range r.late {
		lateTop[top] = true
	}
	var now []int
	for _, top := range tops {
		if !lateTop[top] {
			now = append(now, top)
		}
	}
	if err := c.decodeTops(ctx, fl, sf, r, now, cols); err != nil {
		return nil, err
	}

	// Candidate rows, then the predicate on each.
	candidates := r.rows
	if candidates == nil {
		candidates = plan.All(r.numRows)
	}
	var rows []int64
	for _, rr := range candidates {
		for row := rr.Start; row < rr.End && row < r.numRows; row++ {
			if r.deleted == nil || !r.deleted.Contains(uint64(r.firstRow+row)) {
				rows = append(rows, row)
			}
		}
	}
	f := &filter{expr: p.expr}
	sel, err := f.selectRows(decodedBatch(fl, r.rg, cols, p.schema, p.parents, rows))
	if err != nil {
		return nil, err
	}
	keep := make([]int64, len(sel))
	for i, j := range sel {
		keep[i] = rows[j]
	}
	if len(r.late) > 0 {
		if len(keep) == 0 {
			// nothing matched: the other columns are not read at all
			arrs := make([]arrow.Array, len(outTops))
			for i := range arrs {
				arrs[i] = array.MakeArrayOfNull(memory.DefaultAllocator, outSchema.Field(i).Type, 0)
			}
			rec := array.NewRecordBatch(outSchema, arrs, 0)
			for _, a := range arrs {
				a.Release()
			}
			return rec, nil
		}
		if err := c.decodeLate(ctx, pf, fl, sf, r, keep, cols); err != nil {
			return nil, err
		}
	}
	arrs := make([]arrow.Array, len(outTops))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, top := range outTops {
		if top < 0 {
			if d, ok := fl.defaults[p.selectIDs[i]]; ok {
				a, err := defaultArray(d, outSchema.Field(i).Type, len(keep))
				if err != nil {
					name, _ := p.schema.FindColumnName(p.selectIDs[i])
					return nil, fmt.Errorf("%s: column %s, absent from the file: %w", fl.path, name, err)
				}
				arrs[i] = a
				continue
			}
			arrs[i] = array.MakeArrayOfNull(memory.DefaultAllocator, outSchema.Field(i).Type, len(keep))
			continue
		}
		col := cols[top]
		taken, missing, err := takeRows(ctx, col, keep)
		if err != nil {
			return nil, err
		}
		if missing >= 0 {
			return nil, fmt.Errorf("%s row group %d: row %d was planned but its column %s was not decoded", fl.path, r.rg, missing, outSchema.Field(i).Name)
		}
		if fld, _ := p.schema.FindFieldByID(p.selectIDs[i]); isStruct(fld.Type) && !arrow.TypeEqual(taken.DataType(), outSchema.Field(i).Type) {
			ev := &structEvolver{ctx: ctx, defaults: fl.defaults}
			mf := topMapping(p.mapping, fl.arrow.Field(top).Name)
			projected, err := ev.project(taken, fld, outSchema.Field(i).Type, outSchema.Field(i).Name, mf)
			taken.Release()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", fl.path, err)
			}
			taken = projected
		}
		arrs[i] = taken
	}
	return array.NewRecordBatch(outSchema, arrs, int64(len(keep))), nil
}

// takeRows gathers the values of rows (ascending) from a decoded column:
// a slice when they are contiguous and at least half the column (a slice
// keeps the whole column alive), Arrow's take otherwise. missing is a
// row the column does not hold (-1: none).
func takeRows(ctx context.Context, col *column, rows []int64) (taken arrow.Array, missing int64, err error) {
	pos := positions(col, rows)
	for i, p := range pos {
		if p < 0 {
			return nil, rows[i], nil
		}
	}
	if n := len(pos); n == 0 || (int(pos[n-1])-int(pos[0]) == n-1 && 2*n >= col.arr.Len()) {
		lo := 0
		if n > 0 {
			lo = int(pos[0])
		}
		return array.NewSlice(col.arr, int64(lo), int64(lo+n)), -1, nil
	}
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(pos, nil)
	indices := b.NewArray()
	defer indices.Release()
	taken, err = compute.TakeArray(ctx, col.arr, indices)
	return taken, -1, err
}
