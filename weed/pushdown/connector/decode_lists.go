package connector

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pagedecode"
)

// Planned pages of a list column, from a page_index side index, are the
// writer's pages: one may start inside a row (arrow-go's V1 writer cuts
// pages inside records) and the plan says so (startsInside, endsInside).
// The pages are laid out as one column chunk, runs of adjacent pages
// joining the records they split:
//
//	planned:  [p3 ends inside]  [p4 starts inside]   ...   [p9 starts inside]
//	laid out: p3 p4  (row 41 whole: p4 follows p3)  tail p9 (tail: a page of
//	          one empty list the leading levels of p9 join: a record dropped)
//
// A run ending inside a row (its last page endsInside, the next page not
// planned) ends in a truncated record: dropped, and an error if the row is
// a candidate (the plan must have planned the page continuing it).

// decodeListPages decodes a list (or large list) of one leaf from its
// planned pages with pagedecode.ListRecords: the dictionary region, then
// the pages in order with a tail before each run starting inside a row
// (layOutListPages), each page checked to start where the plan says; the
// records the tails and truncated runs add are dropped.
func decodeListPages(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, top int) (*column, error) {
	leaf := fl.leavesOf[top][0]
	descr := fl.md.Schema.Column(leaf)
	field, ok := fl.oneLeafField(top, pagedecode.ListRecordsBuilds)
	if !ok {
		return nil, fmt.Errorf("%s row group %d column %s: no page decoder builds its pages", fl.path, r.rg, descr.Path())
	}
	list, err := layOutListPages(fl, r, leaf)
	if err != nil {
		return nil, fmt.Errorf("%s row group %d column %s: planned pages: %w", fl.path, r.rg, descr.Path(), err)
	}
	pages := r.pages[leaf]
	size := int64(len(list.tail)) * int64(list.tails)
	d, hasDict := r.dict[leaf]
	if hasDict {
		size += d.Len
	}
	for _, p := range pages {
		size += p.Len
	}
	// one buffer, read into in place
	buf := make([]byte, 0, size)
	read := func(br byteRange) error {
		n := len(buf)
		buf = buf[:n+int(br.Len)]
		_, err := sf.ReadAt(buf[n:], br.Off)
		return err
	}
	if hasDict {
		if err := read(d); err != nil {
			return nil, err
		}
	}
	dataOffset := int64(len(buf))
	for i, p := range pages {
		if list.tailBefore[i] {
			buf = append(buf, list.tail...)
		}
		if err := read(p.byteRange); err != nil {
			return nil, err
		}
	}
	if err := listPagesStartAsPlanned(fl, r.rg, leaf, buf, dataOffset, pages, list); err != nil {
		return nil, fmt.Errorf("%s row group %d column %s: planned pages: %w", fl.path, r.rg, descr.Path(), err)
	}
	cc, err := fl.md.RowGroup(r.rg).ColumnChunk(leaf)
	if err != nil {
		return nil, err
	}
	// the pages hold more values than rows, how many their headers say:
	// the reader is bounded by the chunk's values and the tails' records
	values := fl.chunks[r.rg][leaf].NumValues + int64(list.tails)
	arr, ok, err := pagedecode.ListRecords(field, descr, cc.Compression(), buf, values, int64(len(list.records)), decodeMem)
	if err != nil {
		return nil, fmt.Errorf("%s row group %d column %s: decode pages: %w", fl.path, r.rg, descr.Path(), err)
	}
	if !ok {
		return nil, fmt.Errorf("%s row group %d column %s: no page decoder builds its pages", fl.path, r.rg, descr.Path())
	}
	if arr, err = asFileType(ctx, fl, top, arr, false); err != nil {
		return nil, err
	}
	return list.dropPartial(ctx, arr)
}

// listLayout is how a list column's planned pages decode.
type listLayout struct {
	// tail is the page of one empty list laid before each page starting
	// a run inside a row (tailBefore); tails counts them.
	tail       []byte
	tailBefore []bool
	tails      int
	// records are the rows of the records the laid-out pages decode to,
	// in order; -1: a record dropped (a tail's, or truncated)
	records []int64
	dropped int
}

// layOutListPages checks r's planned pages of list column leaf and says
// how they decode.
func layOutListPages(fl *fileLayout, r *rowGroupRead, leaf int) (*listLayout, error) {
	pages := r.pages[leaf]
	n := len(pages) // a tail a page at most
	for _, p := range pages {
		n += int(p.rowCount)
	}
	l := &listLayout{tailBefore: make([]bool, len(pages)), records: make([]int64, 0, n)}
	for i, p := range pages {
		follows := i > 0 && pages[i-1].Off+pages[i-1].Len == p.Off
		if follows && pages[i-1].endsInside != p.startsInside {
			return nil, fmt.Errorf("planned page from row %d: the page before it ends inside a row %v, it starts inside one %v", p.firstRow, pages[i-1].endsInside, p.startsInside)
		}
		if p.startsInside && !follows {
			l.tailBefore[i] = true
			l.tails++
			l.records = append(l.records, -1)
			l.dropped++
		}
		for k := int64(0); k < p.rowCount; k++ {
			l.records = append(l.records, p.firstRow+k)
		}
		followed := i+1 < len(pages) && p.Off+p.Len == pages[i+1].Off
		if p.endsInside && !followed {
			last := len(l.records) - 1
			if row := l.records[last]; row >= 0 {
				if isCandidate(r, row) {
					return nil, fmt.Errorf("row %d is planned but the page continuing it is not", row)
				}
				l.records[last] = -1
				l.dropped++
			}
		}
	}
	if l.tails > 0 {
		cc, err := fl.md.RowGroup(r.rg).ColumnChunk(leaf)
		if err != nil {
			return nil, err
		}
		if l.tail, err = emptyListPage(fl.md.Schema.Column(leaf), cc.Compression()); err != nil {
			return nil, fmt.Errorf("a page of one empty list: %w", err)
		}
	}
	return l, nil
}

// isCandidate reports whether row is planned in r and not deleted.
func isCandidate(r *rowGroupRead, row int64) bool {
	if r.rows != nil && !r.rows.Overlaps(row, row+1) {
		return false
	}
	return r.deleted == nil || !r.deleted.Contains(uint64(r.firstRow+row))
}

// dropPartial is the decoded column of arr (one element a record) without
// the dropped records.
func (l *listLayout) dropPartial(ctx context.Context, arr arrow.Array) (*column, error) {
	if l.dropped == 0 {
		return &column{arr: arr, rows: l.records}, nil
	}
	defer arr.Release()
	rows := make([]int64, 0, len(l.records)-l.dropped)
	pos := make([]int32, 0, len(l.records)-l.dropped)
	for i, row := range l.records {
		if row >= 0 {
			rows = append(rows, row)
			pos = append(pos, int32(i))
		}
	}
	indices := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, len(pos),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(pos))}, nil, 0, 0))
	defer indices.Release()
	kept, err := compute.TakeArray(compute.WithAllocator(ctx, decodeMem), arr, indices)
	if err != nil {
		return nil, fmt.Errorf("drop partial records: %w", err)
	}
	return &column{arr: kept, rows: rows}, nil
}

// emptyListPages caches emptyListPage by column levels and codec.
var emptyListPages sync.Map // emptyListKey → []byte

type emptyListKey struct {
	maxDef, emptyDef int16
	codec            compress.Compression
}

// emptyListPage is a V1 data page of one record, an empty list (no
// values: repetition level 0, definition level that of the list present
// without elements), of a flat list column like col, compressed with
// codec: written by arrow-go's writer in a one-column file of its own.
func emptyListPage(col *schema.Column, codec compress.Compression) ([]byte, error) {
	if col.MaxRepetitionLevel() != 1 {
		return nil, fmt.Errorf("column %s is not the element column of a flat list", col.Path())
	}
	// definition level of the repeated node: the leaf's, less the
	// optional nodes below it
	def := col.MaxDefinitionLevel()
	n := col.SchemaNode()
	for ; n != nil && n.RepetitionType() != parquet.Repetitions.Repeated; n = n.Parent() {
		if n.RepetitionType() == parquet.Repetitions.Optional {
			def--
		}
	}
	if n == nil || def < 1 {
		return nil, fmt.Errorf("column %s has no repeated node", col.Path())
	}
	key := emptyListKey{col.MaxDefinitionLevel(), def - 1, codec}
	if b, ok := emptyListPages.Load(key); ok {
		return b.([]byte), nil
	}
	// the column's own path of nodes, rebuilt from the root's field
	top := n
	for top.Parent() != nil && top.Parent().Parent() != nil {
		top = top.Parent()
	}
	field, err := cloneNode(top)
	if err != nil {
		return nil, err
	}
	root := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{field}, -1))
	var out bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(codec), parquet.WithDictionaryDefault(false), parquet.WithStats(false),
		parquet.WithDataPageVersion(parquet.DataPageV1), parquet.WithPageIndexEnabled(false), parquet.WithAllocator(memory.DefaultAllocator))
	w := file.NewParquetWriter(&out, root, file.WithWriterProps(props))
	rgw := w.AppendRowGroup()
	cw, err := rgw.NextColumn()
	if err != nil {
		return nil, err
	}
	defs, reps := []int16{def - 1}, []int16{0}
	switch c := cw.(type) {
	case *file.BooleanColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	case *file.Int32ColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	case *file.Int64ColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	case *file.Int96ColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	case *file.Float32ColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	case *file.Float64ColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	case *file.ByteArrayColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	case *file.FixedLenByteArrayColumnChunkWriter:
		_, err = c.WriteBatch(nil, defs, reps)
	default:
		err = fmt.Errorf("column writer %T not understood", cw)
	}
	if err != nil {
		return nil, err
	}
	if err := errors.Join(cw.Close(), rgw.Close(), w.Close()); err != nil {
		return nil, err
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(out.Bytes()))
	if err != nil {
		return nil, err
	}
	cc, err := rdr.MetaData().RowGroup(0).ColumnChunk(0)
	if err != nil {
		return nil, err
	}
	off, size := cc.DataPageOffset(), cc.TotalCompressedSize()
	if cc.NumValues() != 1 || cc.HasDictionaryPage() || off < 4 || size <= 0 || off+size > int64(out.Len()) {
		return nil, fmt.Errorf("the writer wrote %d values in [%d, +%d)", cc.NumValues(), off, size)
	}
	page := bytes.Clone(out.Bytes()[off : off+size])
	emptyListPages.Store(key, page)
	return page, nil
}

// listPagesUnderstood reports whether planned pages of a list column
// lie inside its chunk in file order, each holding rows after the last
// (a page starting inside a row may start none).
func listPagesUnderstood(pages []pageRange, ch footer.Chunk, numRows int64) bool {
	at, row := ch.Start, int64(0)
	for _, p := range pages {
		if p.Off < at || p.Len <= 0 || p.Off+p.Len > ch.Start+ch.Length || p.firstRow < row || p.rowCount < 0 ||
			(p.rowCount == 0 && !p.startsInside) || (p.startsInside && p.firstRow < 1) || p.firstRow+p.rowCount > numRows {
			return false
		}
		at, row = p.Off+p.Len, p.firstRow+p.rowCount
	}
	return len(pages) > 0
}

// listPagesStartAsPlanned checks that each planned page of a list column
// (laid out from dataOffset of b, in order, tails where l lays them)
// starts inside a row exactly where the plan says: its first repetition
// level is not 0. A page beginning inside a record the decoder does not
// expect would join part of a record to the row before it, or decode it
// as a row of its own.
func listPagesStartAsPlanned(fl *fileLayout, rg, leaf int, b []byte, dataOffset int64, pages []pageRange, l *listLayout) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("page levels not understood: %v", p)
		}
	}()
	cc, err := fl.md.RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		return err
	}
	props := readProps()
	src := bytes.NewReader(b)
	at := dataOffset
	for i, p := range pages {
		if l.tailBefore[i] {
			at += int64(len(l.tail))
		}
		stream, err := props.GetStream(src, at, p.Len)
		if err != nil {
			return err
		}
		at += p.Len
		pr, err := file.NewPageReader(stream, cc.NumValues(), cc.Compression(), decodeMem, nil)
		if err != nil {
			return err
		}
		if !pr.Next() {
			return fmt.Errorf("planned page %d holds no page: %v", i, pr.Err())
		}
		var levels []byte
		switch pg := pr.Page().(type) {
		case *file.DataPageV1:
			d := pg.Data()
			if pg.RepetitionLevelEncoding() != parquet.Encodings.RLE || len(d) < 4 {
				return fmt.Errorf("planned page %d: repetition levels in %s not understood", i, pg.RepetitionLevelEncoding())
			}
			levels = d[4:] // after the levels' 4-byte length
		case *file.DataPageV2:
			levels = pg.Data()[:pg.RepetitionLevelByteLen()]
		default:
			return fmt.Errorf("planned page %d is not a data page", i)
		}
		first, ok := firstLevel(levels)
		if !ok {
			return fmt.Errorf("planned page %d (rows from %d): first repetition level not understood", i, p.firstRow)
		}
		if inside := first != 0; inside != p.startsInside {
			return fmt.Errorf("planned page %d (rows from %d) starts inside a row %v, the plan says %v", i, p.firstRow, inside, p.startsInside)
		}
	}
	return nil
}

// firstLevel is the first value of RLE/bit-packed hybrid levels of bit
// width 1 (a flat list's repetition levels): a run header (varint; low bit
// 0: a repeated run, its value in the next byte; 1: bit-packed groups,
// the first value the low bit of the next byte).
func firstLevel(b []byte) (int, bool) {
	h, n := binary.Uvarint(b)
	if n <= 0 || n >= len(b) || h>>1 == 0 {
		return 0, false
	}
	if h&1 == 0 {
		return int(b[n]), b[n] <= 1
	}
	return int(b[n] & 1), true
}
