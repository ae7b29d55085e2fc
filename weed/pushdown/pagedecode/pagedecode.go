// Package pagedecode decodes chosen rows of a flat (non-repeated) column
// chunk from chosen pages of it: arrow-go's page and column readers run
// over the pages' bytes (no Parquet file is built around them), and the
// values between the wanted rows are skipped, not decoded:
//
//	dictionary page + the data pages holding a wanted row (their bytes)
//	  ─▶ PagesReader: file.NewPageReader ─▶ file.NewColumnReader (typed)
//	  ─▶ Runs: Skip to each run of wanted rows, ReadBatch the run; the
//	     pages must then end exactly (fewer or more rows is an error)
//	  ─▶ an Arrow array of the wanted rows' values, in row order
//
// The connector decodes planned pages this way (decode_sparse.go), the
// volume its scans' candidates and matching rows (volume_grpc_scan.go).
package pagedecode

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// PagesReader is a column chunk reader of column descr over pages: the
// bytes of whole pages (each its header and body) of one chunk compressed
// with codec, a dictionary page first when the chunk has one, holding
// nrows rows.
func PagesReader(descr *schema.Column, codec compress.Compression, pages []byte, nrows int64, mem memory.Allocator) (file.ColumnChunkReader, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	pr, err := pageReader(codec, pages, nrows, mem)
	if err != nil {
		return nil, err
	}
	pool := &sync.Pool{New: func() any { return memory.NewResizableBuffer(mem) }}
	//lint:ignore SA1019 the column reader over a page reader is what decodes pages without a file around them
	return file.NewColumnReader(descr, pr, mem, pool), nil //nolint:staticcheck
}

// pageReader is arrow-go's page reader over pages (PagesReader). Buffered:
// the pages are read through a buffer of about a page, not copied whole
// into a new one (an allocation the size of the chunk's chosen pages, for
// every column of every row group decoded).
func pageReader(codec compress.Compression, pages []byte, nrows int64, mem memory.Allocator) (file.PageReader, error) {
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled, props.BufferSize = true, pageStreamBuffer
	stream, err := props.GetStream(bytes.NewReader(pages), 0, int64(len(pages)))
	if err != nil {
		return nil, err
	}
	return file.NewPageReader(stream, nrows, codec, mem, nil)
}

// Selection is what to decode of one chunk: the byte ranges of its
// dictionary region (Len 0: none) and of the pages holding a wanted row,
// in file order, their rows, and the wanted rows as runs of positions
// among those pages' rows.
type Selection struct {
	Dict  footer.Page // Offset, Length of the dictionary region
	Pages []footer.Page
	NRows int64
	Runs  plan.RowSet
	Bytes int64 // dictionary region and pages
}

// Select chooses the pages of all (a flat chunk's pages in row order,
// starting at or after the chunk's start chunkStart) holding a row of
// rows (row-group-local, ascending); ok is false when a page is out of
// order or a row lies in no page.
func Select(all []footer.Page, chunkStart int64, rows []int64) (s Selection, ok bool) {
	if len(all) == 0 {
		return s, false
	}
	if first := all[0].Offset; first > chunkStart {
		s.Dict = footer.Page{Offset: chunkStart, Length: first - chunkStart}
		s.Bytes = s.Dict.Length
	}
	prevEnd := int64(0)
	k := 0
	for _, pg := range all {
		if pg.FirstRow != prevEnd || pg.EndRow < pg.FirstRow || pg.StartsInsideRow {
			return Selection{}, false
		}
		prevEnd = pg.EndRow
		if k < len(rows) && rows[k] < pg.FirstRow {
			return Selection{}, false // before this page, in none
		}
		if k == len(rows) || rows[k] >= pg.EndRow {
			continue
		}
		base := s.NRows
		s.Pages = append(s.Pages, pg)
		s.Bytes += pg.Length
		s.NRows += pg.EndRow - pg.FirstRow
		for ; k < len(rows) && rows[k] < pg.EndRow; k++ {
			at := base + rows[k] - pg.FirstRow
			if n := len(s.Runs); n > 0 && s.Runs[n-1].End == at {
				s.Runs[n-1].End = at + 1
			} else {
				s.Runs = append(s.Runs, plan.RowRange{Start: at, End: at + 1})
			}
		}
	}
	return s, k == len(rows) && len(s.Pages) > 0
}

// Runs decodes the values at runs (ascending positions among the nrows
// rows cr holds) of a non-repeated column as an array of typ, when typ is
// the plain Arrow image of its physical values — ints, dates, times,
// timestamps, floats, booleans, strings, binary, fixed-size binary of
// typeLength bytes; nil, nil for any other type (the caller decodes
// another way).
func Runs(cr file.ColumnChunkReader, typ arrow.DataType, typeLength int, runs plan.RowSet, nrows int64, maxDef int16) (arr arrow.Array, err error) {
	mem := memory.DefaultAllocator
	switch cr := cr.(type) {
	case *file.Int32ColumnChunkReader:
		switch typ.ID() {
		case arrow.INT32, arrow.UINT32, arrow.DATE32, arrow.TIME32:
			return fixed(cr, typ, runs, nrows, maxDef)
		}
	case *file.Int64ColumnChunkReader:
		switch typ.ID() {
		case arrow.INT64, arrow.UINT64, arrow.TIMESTAMP, arrow.TIME64:
			return fixed(cr, typ, runs, nrows, maxDef)
		}
	case *file.Float32ColumnChunkReader:
		if typ.ID() == arrow.FLOAT32 {
			return fixed(cr, typ, runs, nrows, maxDef)
		}
	case *file.Float64ColumnChunkReader:
		if typ.ID() == arrow.FLOAT64 {
			return fixed(cr, typ, runs, nrows, maxDef)
		}
	case *file.BooleanColumnChunkReader:
		if typ.ID() == arrow.BOOL {
			b := array.NewBooleanBuilder(mem)
			return built(cr, b, b.Append, runs, nrows, maxDef, readThrough, nil)
		}
	case *file.ByteArrayColumnChunkReader:
		switch typ.ID() {
		case arrow.STRING:
			b := array.NewStringBuilder(mem)
			return built(cr, b, func(v parquet.ByteArray) { b.BinaryBuilder.Append(v) }, runs, nrows, maxDef, 0, reserveBytes(b.BinaryBuilder))
		case arrow.BINARY:
			b := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			return built(cr, b, func(v parquet.ByteArray) { b.Append(v) }, runs, nrows, maxDef, 0, reserveBytes(b))
		}
	case *file.FixedLenByteArrayColumnChunkReader:
		if ft, isFixed := typ.(*arrow.FixedSizeBinaryType); isFixed && ft.ByteWidth == typeLength {
			b := array.NewFixedSizeBinaryBuilder(mem, ft)
			return built(cr, b, func(v parquet.FixedLenByteArray) { b.Append(v) }, runs, nrows, maxDef, 0, nil)
		}
	}
	return nil, nil
}

// pageStreamBuffer is the buffer pages are read through (it grows to a
// page larger than it).
const pageStreamBuffer = 64 << 10

// Runs of fixed-width values at most readThrough rows apart are read in
// one window of at most readWindow rows (readRuns).
const (
	readThrough = 256
	readWindow  = 8192
)

// batchReader is a typed column chunk reader of arrow-go.
type batchReader[T any] interface {
	Skip(nvalues int64) (int64, error)
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
}

// readRuns reads the values at the runs (ascending positions) of a
// non-repeated column of nrows rows: vals are the non-NULL ones in order,
// valid[i] tells whether the i-th wanted row is not NULL (nil: none is).
// The pages must hold exactly nrows rows.
//
// Runs at most through rows apart are read as one window, the rows
// between them decoded and dropped, rather than skipped: Skip decodes what
// it skips anyway, and every call costs arrow-go's dictionary decoder a
// 4 KiB index buffer on the heap — with a few matches in every page of a
// fixed-width column that was most of the connector's allocations (0:
// every gap skipped, as for byte arrays, whose ReadBatch copies every
// value it reads).
func readRuns[T any](cr batchReader[T], runs plan.RowSet, nrows int64, maxDef int16, through int64) (vals []T, valid []bool, err error) {
	n := runs.Rows()
	vals = make([]T, n)
	var defs []int16
	if maxDef > 0 {
		defs = make([]int16, n)
	}
	var at, got int64
	nv := 0
	// read reads rows [at, end) into v (and d): the values, the levels read
	read := func(end int64, v []T, d []int16) (int, error) {
		nr := 0
		for at < end {
			var dd []int16
			if d != nil {
				dd = d[at-(end-int64(len(d))):]
			}
			lv, r, err := cr.ReadBatch(end-at, v[nr:], dd, nil)
			if err != nil {
				return 0, err
			}
			if lv == 0 {
				return 0, fmt.Errorf("the pages end at row %d, before the %d rows they are planned to hold", at, nrows)
			}
			at, nr = at+lv, nr+r
		}
		return nr, nil
	}
	var wv []T
	var wd []int16
	for i := 0; i < len(runs); {
		start, end, j := runs[i].Start, runs[i].End, i+1
		for through > 0 && j < len(runs) && runs[j].Start-end <= through && runs[j].End-start <= readWindow {
			end = runs[j].End
			j++
		}
		if start > at {
			if _, err := cr.Skip(start - at); err != nil {
				return nil, nil, err
			}
			at = start
		}
		if j == i+1 {
			// one run: straight into vals
			var d []int16
			if defs != nil {
				d = defs[got : got+(end-start)]
			}
			r, err := read(end, vals[nv:], d)
			if err != nil {
				return nil, nil, err
			}
			got, nv, i = got+(end-start), nv+r, j
			continue
		}
		span := int(end - start)
		if cap(wv) < span {
			wv = make([]T, span)
			if defs != nil {
				wd = make([]int16, span)
			}
		}
		var d []int16
		if defs != nil {
			d = wd[:span]
		}
		if _, err := read(end, wv[:span], d); err != nil {
			return nil, nil, err
		}
		vi, k := 0, i
		for r := 0; r < span; r++ {
			row := start + int64(r)
			for k < j && row >= runs[k].End {
				k++
			}
			isVal := d == nil || d[r] == maxDef
			if k < j && row >= runs[k].Start {
				if defs != nil {
					defs[got] = d[r]
				}
				if isVal {
					vals[nv] = wv[vi]
					nv++
				}
				got++
			}
			if isVal {
				vi++
			}
		}
		i = j
	}
	// the pages hold nrows rows, no more, no fewer: the last row reads,
	// then nothing
	var probe [1]T
	var probeDef [1]int16
	if at < nrows {
		if _, err := cr.Skip(nrows - 1 - at); err != nil {
			return nil, nil, err
		}
		if lv, _, err := cr.ReadBatch(1, probe[:], probeDef[:], nil); err != nil || lv != 1 {
			return nil, nil, fmt.Errorf("the pages hold fewer than the %d rows they are planned to hold", nrows)
		}
	}
	if lv, _, err := cr.ReadBatch(1, probe[:], probeDef[:], nil); err != nil || lv != 0 {
		return nil, nil, fmt.Errorf("the pages hold more than the %d rows they are planned to hold", nrows)
	}
	if defs != nil {
		valid = make([]bool, n)
		k := 0
		for i, d := range defs {
			if valid[i] = d == maxDef; valid[i] {
				k++
			}
		}
		if k != nv {
			return nil, nil, fmt.Errorf("%d values for %d non-NULL rows", nv, k)
		}
	} else if int64(nv) != n {
		return nil, nil, fmt.Errorf("%d values for %d rows", nv, n)
	}
	return vals[:nv], valid, nil
}

// fixed reads the runs of a fixed-width column into an array of typ
// (whose layout is T's).
func fixed[T arrow.FixedWidthType](cr batchReader[T], typ arrow.DataType, runs plan.RowSet, nrows int64, maxDef int16) (arrow.Array, error) {
	vals, valid, err := readRuns(cr, runs, nrows, maxDef, readThrough)
	if err != nil {
		return nil, err
	}
	n := len(vals)
	var bitmap *memory.Buffer
	nulls := 0
	if valid != nil {
		n = len(valid)
		spread := make([]T, n)
		bits := make([]byte, bitutil.BytesForBits(int64(n)))
		j := 0
		for i, ok := range valid {
			if ok {
				spread[i] = vals[j]
				j++
				bitutil.SetBit(bits, i)
			} else {
				nulls++
			}
		}
		vals = spread
		if nulls > 0 {
			bitmap = memory.NewBufferBytes(bits)
		}
	}
	data := array.NewData(typ, n, []*memory.Buffer{bitmap, memory.NewBufferBytes(arrow.GetBytes(vals))}, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data), nil
}

// reserveBytes reserves b's data buffer for the values (one allocation,
// not a doubling per overflow).
func reserveBytes(b *array.BinaryBuilder) func([]parquet.ByteArray) {
	return func(vals []parquet.ByteArray) {
		n := 0
		for _, v := range vals {
			n += len(v)
		}
		b.ReserveData(n)
	}
}

// built reads the runs of a column into builder b through appendOne
// (reserve, when set, reserves its data for the values first).
func built[T any](cr batchReader[T], b array.Builder, appendOne func(T), runs plan.RowSet, nrows int64, maxDef int16, through int64, reserve func([]T)) (arrow.Array, error) {
	defer b.Release()
	vals, valid, err := readRuns(cr, runs, nrows, maxDef, through)
	if err != nil {
		return nil, err
	}
	if reserve != nil {
		reserve(vals)
	}
	if valid == nil {
		b.Reserve(len(vals))
		for _, v := range vals {
			appendOne(v)
		}
		return b.NewArray(), nil
	}
	b.Reserve(len(valid))
	j := 0
	for _, ok := range valid {
		if !ok {
			b.AppendNull()
			continue
		}
		appendOne(vals[j])
		j++
	}
	return b.NewArray(), nil
}
