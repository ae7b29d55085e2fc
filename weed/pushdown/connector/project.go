package connector

// Project stage: the SELECT columns, in SELECT order, of a row group's
// matching rows — taken from the decoded columns, a field the file lacks
// as its default or NULL, structs projected onto the table's struct
// (evolve.go) — and records of files with other physical types cast to
// the result's.

import (
	"context"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
)

// outputSchema is the result schema in SELECT order with the file's Arrow
// types; outTops[i] is the file's top-level field of output column i (-1:
// not in this file, read as NULL).
func outputSchema(p *prepared, fl *fileLayout) (*arrow.Schema, []int) {
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

// project is the pipeline's project stage: the record of a row group's
// matching rows keep, in the file's output columns (n.outSchema: the
// SELECT's, from the decoded columns cols, defaults or NULLs for fields
// the file lacks, structs evolved to the table's schema).
func (n *fileNeed) project(ctx context.Context, p *prepared, fl *fileLayout, r *rowGroupRead, cols map[int]*column, keep []int64) (arrow.RecordBatch, error) {
	outSchema, outTops := n.outSchema, n.outTops
	if len(keep) == 0 {
		// nothing matched (late columns were not even read)
		arrs := make([]arrow.Array, len(outTops))
		for i := range arrs {
			arrs[i] = array.MakeArrayOfNull(decodeMem, outSchema.Field(i).Type, 0)
		}
		rec := array.NewRecordBatch(outSchema, arrs, 0)
		for _, a := range arrs {
			a.Release()
		}
		return rec, nil
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
			arrs[i] = array.MakeArrayOfNull(decodeMem, outSchema.Field(i).Type, len(keep))
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

// concatRecords is one record of recs (of schema sch) in order; it takes
// recs' references.
func concatRecords(sch *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		rec := recs[0]
		rec.Retain()
		return rec, nil
	}
	arrs := make([]arrow.Array, sch.NumFields())
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	var rows int64
	for _, rec := range recs {
		rows += rec.NumRows()
	}
	for i := range arrs {
		parts := make([]arrow.Array, len(recs))
		for j, rec := range recs {
			parts[j] = rec.Column(i)
		}
		a, err := array.Concatenate(parts, decodeMem)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", sch.Field(i).Name, err)
		}
		arrs[i] = a
	}
	return array.NewRecordBatch(sch, arrs, rows), nil
}

// takeRows gathers the values of rows (ascending) from a decoded column:
// a slice when they are contiguous and at least half the column (a slice
// keeps the whole column alive), Arrow's take otherwise. missing is a
// row the column does not hold (-1: none).
func takeRows(ctx context.Context, col *column, rows []int64) (taken arrow.Array, missing int64, err error) {
	ctx = compute.WithAllocator(ctx, decodeMem)
	pos := positions(col, rows)
	defer posScratch.Put(pos) // take's indices wrap it: released before
	for i, p := range pos {
		if p < 0 {
			return nil, rows[i], nil
		}
	}
	if d, ok := col.arr.(*array.Dictionary); ok {
		if taken, ok := gatherDictionaryBytes(d, pos); ok {
			return taken, -1, nil
		}
		// the values of the rows' dictionary indices
		b := array.NewInt32Builder(decodeMem)
		defer b.Release()
		b.Reserve(len(pos))
		index := colfilter.DictIndex(d)
		for _, p := range pos {
			if d.IsNull(int(p)) {
				b.AppendNull()
			} else {
				b.UnsafeAppend(int32(index(int(p))))
			}
		}
		indices := b.NewArray()
		defer indices.Release()
		taken, err = compute.TakeArray(ctx, d.Dictionary(), indices)
		return taken, -1, err
	}
	if n := len(pos); n == 0 || (int(pos[n-1])-int(pos[0]) == n-1 && 2*n >= col.arr.Len()) {
		lo := 0
		if n > 0 {
			lo = int(pos[0])
		}
		return array.NewSlice(col.arr, int64(lo), int64(lo+n)), -1, nil
	}
	// the positions themselves as take's indices (no copy)
	indices := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, len(pos),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(pos))}, nil, 0, 0))
	defer indices.Release()
	taken, err = compute.TakeArray(ctx, col.arr, indices)
	return taken, -1, err
}

// gatherDictionaryBytes is the string or binary values of dictionary d at
// positions pos (valid ones), copied straight into the result's offsets
// and data (a low-cardinality column's matching rows: Arrow's take of the
// dictionary was 8% of a status equality's CPU); ok is false for other
// value types or results past 2 GiB.
func gatherDictionaryBytes(d *array.Dictionary, pos []int32) (arrow.Array, bool) {
	// String and Binary: int32 offsets into one byte buffer
	bin, ok := d.Dictionary().(interface {
		ValueOffsets() []int32
		ValueBytes() []byte
	})
	if !ok {
		return nil, false
	}
	switch d.Dictionary().DataType().ID() {
	case arrow.STRING, arrow.BINARY:
	default:
		return nil, false
	}
	// offsets count from the data buffer's start, values from the first
	// value's (a sliced dictionary)
	valueOffsets, values := bin.ValueOffsets(), bin.ValueBytes()
	base := valueOffsets[0]
	dictValues := d.Dictionary()
	if ix, ok := d.Indices().(*array.Int32); ok && d.NullN() == 0 && dictValues.NullN() == 0 {
		return gatherNoNulls(dictValues.DataType(), ix.Int32Values(), pos, valueOffsets, values)
	}
	index := colfilter.DictIndex(d)
	n := len(pos)
	var size int64
	nulls := 0
	for _, p := range pos {
		if d.IsNull(int(p)) || dictValues.IsNull(index(int(p))) {
			nulls++
			continue
		}
		k := index(int(p))
		if k < 0 || k >= dictValues.Len() {
			return nil, false // Arrow's take names the bad index
		}
		size += int64(valueOffsets[k+1] - valueOffsets[k])
	}
	if size > math.MaxInt32 {
		return nil, false
	}
	offsets := memory.NewResizableBuffer(decodeMem)
	offsets.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	data := memory.NewResizableBuffer(decodeMem)
	data.Resize(int(size))
	var bitmap *memory.Buffer
	var bits []byte
	if nulls > 0 {
		bitmap = memory.NewResizableBuffer(decodeMem)
		bitmap.Resize(int(bitutil.BytesForBits(int64(n))))
		bits = bitmap.Bytes()
	}
	offs, out := arrow.Int32Traits.CastFromBytes(offsets.Bytes()), data.Bytes()
	at := int32(0)
	for i, p := range pos {
		offs[i] = at
		if bits != nil {
			if d.IsNull(int(p)) || dictValues.IsNull(index(int(p))) {
				continue
			}
			bitutil.SetBit(bits, i)
		}
		k := index(int(p))
		at += int32(copy(out[at:], values[valueOffsets[k]-base:valueOffsets[k+1]-base]))
	}
	offs[n] = at
	ad := array.NewData(dictValues.DataType(), n, []*memory.Buffer{bitmap, offsets, data}, nil, nulls, 0)
	defer ad.Release()
	for _, b := range []*memory.Buffer{bitmap, offsets, data} {
		if b != nil {
			b.Release() // ad holds them
		}
	}
	return array.MakeFromData(ad), true
}

// gatherNoNulls is gatherDictionaryBytes without NULLs: the values of
// dictionary entries indices[p] for p in pos, one loop each for the size
// and the copy, no call a row.
func gatherNoNulls(typ arrow.DataType, indices, pos []int32, valueOffsets []int32, values []byte) (arrow.Array, bool) {
	base, nd := valueOffsets[0], int32(len(valueOffsets)-1)
	var size int64
	for _, p := range pos {
		k := indices[p]
		if k < 0 || k >= nd {
			return nil, false // Arrow's take names the bad index
		}
		size += int64(valueOffsets[k+1] - valueOffsets[k])
	}
	if size > math.MaxInt32 {
		return nil, false
	}
	offsets := memory.NewResizableBuffer(decodeMem)
	offsets.Resize(arrow.Int32Traits.BytesRequired(len(pos) + 1))
	data := memory.NewResizableBuffer(decodeMem)
	data.Resize(int(size))
	offs, out := arrow.Int32Traits.CastFromBytes(offsets.Bytes()), data.Bytes()
	at := int32(0)
	for i, p := range pos {
		k := indices[p]
		offs[i] = at
		at += int32(copy(out[at:], values[valueOffsets[k]-base:valueOffsets[k+1]-base]))
	}
	offs[len(pos)] = at
	ad := array.NewData(typ, len(pos), []*memory.Buffer{nil, offsets, data}, nil, 0, 0)
	defer ad.Release()
	offsets.Release()
	data.Release()
	return array.MakeFromData(ad), true
}

// emptySchema is the Arrow schema of a result without files.
func emptySchema(p *prepared) *arrow.Schema {
	var fields []iceberg.NestedField
	for _, id := range p.selectIDs {
		if f, ok := p.schema.FindFieldByID(id); ok {
			fields = append(fields, f)
		}
	}
	as, err := table.SchemaToArrowSchema(iceberg.NewSchema(p.schema.ID, fields...), nil, true, false)
	if err != nil {
		return arrow.NewSchema(nil, nil)
	}
	return as
}

// conform casts a record's columns to the result schema (files written
// with different physical choices of one Iceberg type).
func conform(ctx context.Context, rec arrow.RecordBatch, want *arrow.Schema) (arrow.RecordBatch, error) {
	if rec.Schema().Equal(want) {
		return rec, nil
	}
	cols := make([]arrow.Array, rec.NumCols())
	for i := range cols {
		col := rec.Column(i)
		if arrow.TypeEqual(col.DataType(), want.Field(i).Type) {
			col.Retain()
			cols[i] = col
			continue
		}
		cast, err := compute.CastArray(ctx, col, compute.SafeCastOptions(want.Field(i).Type))
		if err != nil {
			return nil, fmt.Errorf("column %s is %s in one file and %s in another: %w", want.Field(i).Name, col.DataType(), want.Field(i).Type, err)
		}
		cols[i] = cast
	}
	out := array.NewRecordBatch(want, cols, rec.NumRows())
	for _, c := range cols {
		c.Release()
	}
	rec.Release()
	return out, nil
}
