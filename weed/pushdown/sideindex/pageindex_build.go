package sideindex

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// pageIndexKind rebuilds, for a file written without ColumnIndex and
// OffsetIndex, the page index of one column from its page headers and
// their statistics — with arrow-go's own ColumnIndexBuilder and
// OffsetIndexBuilder, fed what its writer feeds them — and stores per row
// group the Thrift-compact bytes Parquet itself would have written.
// No params.
type pageIndexKind struct{}

func init() { register(pageIndexKind{}) }

const (
	offsetIndexBlob = "lakeweed-parquet-offset-index-v1"
	columnIndexBlob = "lakeweed-parquet-column-index-v1"
	pageColumnProp  = "lakeweed.sideindex.column"
	pageLeafProp    = "lakeweed.sideindex.leaf"
	pageLeavesProp  = "lakeweed.sideindex.leaves"
	// pageRowAlignedProp marks the page index of a repeated column whose
	// pages were merged to start at row boundaries (as earlier builds
	// wrote it); pageListRowsProp one listing the writer's pages with the
	// rows starting in each and, per row group, the pages continuing a
	// row (continuedPagesProp). Open refuses a repeated column's page
	// index with neither.
	pageRowAlignedProp = "lakeweed.sideindex.row-aligned"
	pageListRowsProp   = "lakeweed.sideindex.list-rows"
	continuedPagesProp = "continued-pages"
)

func (pageIndexKind) Name() string { return "page_index" }

// Supports: primitive columns, and lists of primitives (the element
// column, a leaf of a repeated field: its pages with the rows starting in
// each and those continuing a row, see listPageRows).
func (pageIndexKind) Supports(t iceberg.Type) bool {
	if lt, ok := t.(*iceberg.ListType); ok {
		t = lt.Element
	}
	_, ok := value.KindOf(t)
	return ok
}

// CheckParams: the kind takes no build parameters.
func (pageIndexKind) CheckParams(p map[string]string) error { return checkParams(p) }

// dataPage is one data page of a column chunk as its header gives it.
type dataPage struct {
	offset, size int64 // file offset and length, header included
	values       int64 // levels in the page
	rows         int64 // rows starting in the page (V2: num_rows; V1: values of a flat column)
	continues    bool  // a list's page whose first levels end the row begun before it
	stats        *metadata.EncodedStatistics
}

// chunkPages lists the data pages of one column chunk from their headers.
func chunkPages(rg int, ch footer.Chunk, chunk []byte, repeated bool) ([]dataPage, error) {
	var pages []dataPage
	var seenValues int64
	for pos := int64(0); pos < ch.Length && seenValues < ch.NumValues; {
		h, err := readPageHeaderAt(chunk, pos)
		if err != nil {
			return nil, fmt.Errorf("page_index: row group %d, byte %d of the chunk: %w", rg, pos, err)
		}
		size := int64(h.headerSize) + int64(h.compressedSize)
		if pos+size > ch.Length {
			return nil, fmt.Errorf("page_index: row group %d: page at byte %d overruns its column chunk", rg, pos)
		}
		switch h.typ {
		case 0, 3: // DATA_PAGE, DATA_PAGE_V2
			pg := dataPage{offset: ch.Start + pos, size: size, values: int64(h.numValues), rows: int64(h.numValues), stats: encodedStats(h)}
			if h.typ == 3 {
				pg.rows = int64(h.numRows)
			} else if repeated {
				pg.rows = -1 // counted from its repetition levels
			}
			pages = append(pages, pg)
			seenValues += int64(h.numValues)
		}
		pos += size
	}
	return pages, nil
}

// FlatChunkPages lists the data pages of one column chunk of a
// non-repeated column from their headers (chunk: its bytes, from
// ch.Start), as its offset index would: offsets and lengths with the
// headers, the rows of each. An error when a header is malformed, a page
// overruns the chunk or the pages do not hold exactly numRows rows.
func FlatChunkPages(ch footer.Chunk, chunk []byte, numRows int64) ([]footer.Page, error) {
	if int64(len(chunk)) < ch.Length {
		return nil, fmt.Errorf("page headers: %d bytes of a %d-byte column chunk", len(chunk), ch.Length)
	}
	pages, err := chunkPages(0, ch, chunk[:ch.Length], false)
	if err != nil {
		return nil, err
	}
	out := make([]footer.Page, len(pages))
	var row int64
	for i, pg := range pages {
		if pg.rows < 0 {
			return nil, fmt.Errorf("page headers: page %d holds %d rows", i, pg.rows)
		}
		out[i] = footer.Page{Offset: pg.offset, Length: pg.size, FirstRow: row, EndRow: row + pg.rows}
		row += pg.rows
	}
	if row != numRows {
		return nil, fmt.Errorf("page headers: the pages hold %d rows, the row group %d", row, numRows)
	}
	return out, nil
}

func (k pageIndexKind) Build(ctx context.Context, in Input) ([]byte, error) {
	col, repeated, err := k.checkColumn(in)
	if err != nil {
		return nil, err
	}
	if err := k.CheckParams(in.Params); err != nil {
		return nil, err
	}
	descr, err := describeColumn(col)
	if err != nil {
		return nil, err
	}
	var rdr *file.Reader
	if repeated {
		if rdr, err = openData(in, &sourceReader{ctx: ctx, src: in.Source}); err != nil {
			return nil, err
		}
	}
	var blobs []puffinBlob
	first := int64(0)
	for rg := range in.Footer.Chunks {
		ch := in.Footer.Chunks[rg][in.Column]
		rows := in.Footer.Meta.RowGroup(rg).NumRows()
		if ch.Length > maxPayloadBytes {
			return nil, fmt.Errorf("page_index: column chunk of %d bytes is too large", ch.Length)
		}
		chunk := make([]byte, ch.Length)
		if n, err := in.Source.ReadAt(ctx, chunk, ch.Start); n != len(chunk) {
			return nil, fmt.Errorf("page_index: read column chunk of row group %d of %s: %v", rg, short(in.File), err)
		}
		pages, err := chunkPages(rg, ch, chunk, repeated)
		if err != nil {
			return nil, err
		}
		if repeated {
			if err = listPageRows(rdr, rg, in.Column, ch.NumValues, pages); err != nil {
				return nil, fmt.Errorf("page_index: row group %d: %w", rg, err)
			}
		}
		ci := metadata.NewColumnIndexBuilder(col)
		oi := &metadata.OffsetIndexBuilder{}
		var seenRows, seenValues int64
		for _, pg := range pages {
			if err := ci.AddPage(pg.stats); err != nil {
				return nil, err
			}
			if err := oi.AddPage(pg.offset, seenRows, int32(pg.size)); err != nil {
				return nil, err
			}
			seenRows += pg.rows
			seenValues += pg.values
		}
		if seenRows != rows || seenValues != ch.NumValues {
			return nil, fmt.Errorf("page_index: row group %d: pages hold %d rows and %d values, the footer says %d and %d", rg, seenRows, seenValues, rows, ch.NumValues)
		}
		if err := firstErr(ci.Finish(), oi.Finish(0)); err != nil {
			return nil, err
		}
		props := map[string]string{"row-group": strconv.Itoa(rg), "first-row": strconv.FormatInt(first, 10), "rows": strconv.FormatInt(rows, 10),
			"chunk-start": strconv.FormatInt(ch.Start, 10), "chunk-length": strconv.FormatInt(ch.Length, 10)}
		if repeated {
			props[continuedPagesProp] = continuedList(pages)
		}
		var ob, cb bytes.Buffer
		if _, err := oi.WriteTo(&ob, nil); err != nil {
			return nil, err
		}
		blobs = append(blobs, puffinBlob{typ: offsetIndexBlob, props: props, data: ob.Bytes()})
		if _, err := ci.WriteTo(&cb, nil); err != nil {
			return nil, err
		}
		if cb.Len() > 0 { // the writer discards a column index when a page has no min/max
			blobs = append(blobs, puffinBlob{typ: columnIndexBlob, props: props, data: cb.Bytes()})
		}
		first += rows
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	fileProps := map[string]string{pageColumnProp: descr.encode(),
		pageLeafProp: strconv.Itoa(in.Column), pageLeavesProp: strconv.Itoa(in.Footer.Meta.Schema.NumColumns())}
	if repeated {
		fileProps[pageListRowsProp] = "true"
	}
	return writePuffin(headerOf(in, k.Name()), fileProps, blobs)
}

// checkColumn refuses inputs the kind cannot index: a flat column as
// every kind takes it (checkInput), or the element column of a flat list
// (one repetition level) of primitives.
func (k pageIndexKind) checkColumn(in Input) (col *schema.Column, repeated bool, err error) {
	lt, isList := in.Type.(*iceberg.ListType)
	if !isList {
		if err := checkInput(in, k); err != nil {
			return nil, false, err
		}
		return in.Footer.Meta.Schema.Column(in.Column), false, nil
	}
	if in.Footer == nil || in.Footer.Meta == nil || in.Footer.Meta.Schema == nil || in.Source == nil {
		return nil, false, fmt.Errorf("page_index: no parsed footer or source for %s", short(in.File))
	}
	if !k.Supports(in.Type) {
		return nil, false, fmt.Errorf("page_index index cannot index field %d of type %v", in.FieldID, in.Type)
	}
	if in.Column < 0 || in.Column >= in.Footer.Meta.Schema.NumColumns() || in.Footer.Meta.Schema.Column(in.Column).MaxRepetitionLevel() != 1 {
		return nil, false, fmt.Errorf("page_index: column %d of %s is not the element column of a flat list", in.Column, short(in.File))
	}
	col = in.Footer.Meta.Schema.Column(in.Column)
	if _, err := value.NewStatDecoder(col, lt.Element); err != nil {
		return nil, false, fmt.Errorf("page_index: %v", err)
	}
	return col, true, nil
}

// listPageRows gives each data page of a repeated column chunk the rows
// starting in it, from the chunk's repetition levels, and marks a page
// that does not start at a row boundary (its first repetition level is
// not 0: the writer split a record across pages, as arrow-go's V1 writer
// does without a page index) as continuing the row begun before it. A
// reader of such a page alone drops its leading levels; a reader of a row
// reads the pages continuing it too (footer.Page.HeldRows). A V2 page
// must start a row and count the rows its header says; the first page
// must start a row.
func listPageRows(rdr *file.Reader, rg, column int, numValues int64, pages []dataPage) error {
	levels, err := repetitionLevels(rdr, rg, column, numValues)
	if err != nil {
		return err
	}
	at := int64(0)
	for i := range pages {
		pg := &pages[i]
		if pg.values <= 0 || at+pg.values > int64(len(levels)) {
			return fmt.Errorf("page %d holds %d levels, past the chunk's %d", i, pg.values, len(levels))
		}
		lv := levels[at : at+pg.values]
		at += pg.values
		starts := int64(0)
		for _, l := range lv {
			if l == 0 {
				starts++
			}
		}
		if pg.rows >= 0 && (pg.rows != starts || lv[0] != 0) {
			return fmt.Errorf("V2 page %d says %d rows, its repetition levels start %d (first level %d)", i, pg.rows, starts, lv[0])
		}
		pg.rows, pg.continues = starts, lv[0] != 0
		if pg.continues && i == 0 {
			return fmt.Errorf("the chunk's first page does not start a row")
		}
	}
	if at != int64(len(levels)) {
		return fmt.Errorf("pages hold %d levels, the chunk %d", at, len(levels))
	}
	return nil
}

// continuedList is the ordinals of the pages continuing a row, comma
// separated.
func continuedList(pages []dataPage) string {
	var b []byte
	for i, pg := range pages {
		if pg.continues {
			if len(b) > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(i), 10)
		}
	}
	return string(b)
}

// repetitionLevels decodes every repetition level of a column chunk
// with arrow-go's column reader.
func repetitionLevels(rdr *file.Reader, rg, column int, n int64) (levels []int16, err error) {
	defer func() {
		if p := recover(); p != nil {
			levels, err = nil, fmt.Errorf("decode repetition levels: %v", p)
		}
	}()
	if n < 0 || n > maxPayloadBytes {
		return nil, fmt.Errorf("a chunk of %d values is too large", n)
	}
	cr, err := rdr.RowGroup(rg).Column(column)
	if err != nil {
		return nil, err
	}
	levels = make([]int16, n)
	switch c := cr.(type) {
	case *file.BooleanColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	case *file.Int32ColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	case *file.Int64ColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	case *file.Int96ColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	case *file.Float32ColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	case *file.Float64ColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	case *file.ByteArrayColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	case *file.FixedLenByteArrayColumnChunkReader:
		err = readLevels(c.ReadBatch, levels)
	default:
		err = fmt.Errorf("column reader %T not understood", cr)
	}
	return levels, err
}

// readLevels fills levels with the repetition levels read batch by batch.
func readLevels[T any](read func(int64, []T, []int16, []int16) (int64, int, error), levels []int16) error {
	const batch = 4096
	vals, defs := make([]T, batch), make([]int16, batch)
	for got := 0; got < len(levels); {
		n := min(batch, len(levels)-got)
		total, _, err := read(int64(n), vals, defs, levels[got:got+n])
		if err != nil {
			return err
		}
		if total <= 0 {
			return fmt.Errorf("the chunk ends after %d of its %d levels", got, len(levels))
		}
		got += int(total)
	}
	return nil
}

// encodedStats is the page statistics as arrow-go's writer hands them to
// its ColumnIndexBuilder: min_value/max_value (or the deprecated min/max),
// the null count, and "all null" for a page of only NULLs.
func encodedStats(h pageHeader) *metadata.EncodedStatistics {
	e := &metadata.EncodedStatistics{}
	s := h.stats
	if s == nil {
		return e
	}
	switch {
	case s.hasMinValue:
		e.SetMin(s.minValue)
	case s.hasMin:
		e.SetMin(s.min)
	}
	switch {
	case s.hasMaxValue:
		e.SetMax(s.maxValue)
	case s.hasMax:
		e.SetMax(s.max)
	}
	if s.hasNullCount {
		e.SetNullCount(s.nullCount)
		e.AllNullValue = !e.HasMin && !e.HasMax && s.nullCount == int64(h.numValues)
	}
	return e
}
