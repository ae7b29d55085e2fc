package sideindex

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"

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
)

func (pageIndexKind) Name() string { return "page_index" }

func (pageIndexKind) Supports(t iceberg.Type) bool {
	_, ok := value.KindOf(t)
	return ok
}

// CheckParams: the kind takes no build parameters.
func (pageIndexKind) CheckParams(p map[string]string) error { return checkParams(p) }

func (k pageIndexKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if err := checkInput(in, k); err != nil {
		return nil, err
	}
	if err := k.CheckParams(in.Params); err != nil {
		return nil, err
	}
	col := in.Footer.Meta.Schema.Column(in.Column)
	descr, err := describeColumn(col)
	if err != nil {
		return nil, err
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
		ci := metadata.NewColumnIndexBuilder(col)
		oi := &metadata.OffsetIndexBuilder{}
		var seenRows, seenValues int64
		for pos := int64(0); pos < ch.Length && seenValues < ch.NumValues; {
			h, err := readPageHeader(chunk[pos:])
			if err != nil {
				return nil, fmt.Errorf("page_index: row group %d, byte %d of the chunk: %w", rg, pos, err)
			}
			size := int64(h.headerSize) + int64(h.compressedSize)
			if pos+size > ch.Length {
				return nil, fmt.Errorf("page_index: row group %d: page at byte %d overruns its column chunk", rg, pos)
			}
			switch h.typ {
			case 0, 3: // DATA_PAGE, DATA_PAGE_V2
				pageRows := int64(h.numValues)
				if h.typ == 3 {
					pageRows = int64(h.numRows)
				}
				if err := ci.AddPage(encodedStats(h)); err != nil {
					return nil, err
				}
				if err := oi.AddPage(ch.Start+pos, seenRows, int32(size)); err != nil {
					return nil, err
				}
				seenRows += pageRows
				seenValues += int64(h.numValues)
			}
			pos += size
		}
		if seenRows != rows || seenValues != ch.NumValues {
			return nil, fmt.Errorf("page_index: row group %d: pages hold %d rows and %d values, the footer says %d and %d", rg, seenRows, seenValues, rows, ch.NumValues)
		}
		if err := firstErr(ci.Finish(), oi.Finish(0)); err != nil {
			return nil, err
		}
		props := map[string]string{"row-group": strconv.Itoa(rg), "first-row": strconv.FormatInt(first, 10), "rows": strconv.FormatInt(rows, 10),
			"chunk-start": strconv.FormatInt(ch.Start, 10), "chunk-length": strconv.FormatInt(ch.Length, 10)}
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
	return writePuffin(headerOf(in, k.Name()), map[string]string{pageColumnProp: descr.encode(),
		pageLeafProp: strconv.Itoa(in.Column), pageLeavesProp: strconv.Itoa(in.Footer.Meta.Schema.NumColumns())}, blobs)
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
