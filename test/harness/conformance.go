package harness

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"sort"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ReadParquetFile decodes every row of a local Parquet file with arrow-go's
// pqarrow, independently of lakeweed's own decoders.
func ReadParquetFile(ctx context.Context, path string) (arrow.Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return pqarrow.ReadTable(ctx, f, nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
}

// dvMagic is the deletion-vector-v1 magic.
var dvMagic = []byte{0xD1, 0xD3, 0x39, 0x64}

// StandaloneDeletionVector decodes a deletion vector stored on its own
// (outside a Puffin file) into its positions with roaring64's ReadFrom.
// framed says whether the blob carries the deletion-vector-v1 framing
// (big-endian length of magic+bitmap, magic D1 D3 39 64, big-endian CRC-32
// of magic+bitmap), which is then checked and removed; a blob without it
// is read as a bare portable roaring64 bitmap. Every byte must be used.
func StandaloneDeletionVector(blob []byte) (positions *roaring64.Bitmap, framed bool, err error) {
	bitmap := blob
	if len(blob) >= 12 && bytes.Equal(blob[4:8], dvMagic) && binary.BigEndian.Uint32(blob) == uint32(len(blob)-8) {
		body := blob[4 : len(blob)-4]
		if got, want := crc32.ChecksumIEEE(body), binary.BigEndian.Uint32(blob[len(blob)-4:]); got != want {
			return nil, true, fmt.Errorf("deletion-vector-v1 CRC-32 %08x, the blob stores %08x", got, want)
		}
		bitmap, framed = body[4:], true
	}
	bm := roaring64.New()
	r := bytes.NewReader(bitmap)
	if _, err := bm.ReadFrom(r); err != nil {
		return nil, framed, fmt.Errorf("roaring64 bitmap: %w", err)
	}
	if r.Len() != 0 {
		return nil, framed, fmt.Errorf("roaring64 bitmap leaves %d of %d bytes unread", r.Len(), len(bitmap))
	}
	return bm, framed, nil
}

// WithoutPositions returns the rows of tbl (in file order, the first row at
// position 0) whose positions deleted does not hold.
func WithoutPositions(ctx context.Context, tbl arrow.Table, deleted *roaring64.Bitmap) (arrow.Table, error) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for pos := int64(0); pos < tbl.NumRows(); pos++ {
		if !deleted.Contains(uint64(pos)) {
			b.Append(pos)
		}
	}
	keep := b.NewArray()
	defer keep.Release()
	cols := make([]arrow.Column, tbl.NumCols())
	for i := range cols {
		taken, err := compute.TakeArray(ctx, concatenated(tbl.Column(i)), keep)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, err
		}
		ch := arrow.NewChunked(taken.DataType(), []arrow.Array{taken})
		taken.Release()
		cols[i] = *arrow.NewColumn(tbl.Schema().Field(i), ch)
		ch.Release()
	}
	out := array.NewTable(tbl.Schema(), cols, int64(keep.Len()))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

func concatenated(c *arrow.Column) arrow.Array {
	chunks := c.Data().Chunks()
	if len(chunks) == 1 {
		return chunks[0]
	}
	a, err := array.Concatenate(chunks, memory.DefaultAllocator)
	if err != nil {
		panic(err)
	}
	return a
}

// RenderedRows is a result rendered for row-by-row comparison.
type RenderedRows struct {
	Rows []string // one line per row, "name=value|..." in the reference's column order, sorted
	// Casts lists the columns whose Arrow type differed from the reference
	// and were cast to it before rendering ("name: from → to").
	Casts []string
}

// RenderLike renders records with the columns, order and Arrow types of
// ref: each of ref's columns is found by name, cast to ref's type when its
// type differs (same values, another physical type), and printed with
// ValueStr. A missing column or a failed cast is an error.
func RenderLike(ctx context.Context, ref *arrow.Schema, sch *arrow.Schema, recs []arrow.RecordBatch) (RenderedRows, error) {
	var out RenderedRows
	idx := map[string]int{}
	if sch != nil {
		for i, f := range sch.Fields() {
			idx[f.Name] = i
		}
	}
	casts := map[string]bool{}
	for _, rec := range recs {
		lines := make([]strings.Builder, rec.NumRows())
		for c, rf := range ref.Fields() {
			i, ok := idx[rf.Name]
			if !ok {
				if rec.NumRows() == 0 {
					continue
				}
				return out, fmt.Errorf("column %q of the reference is missing (columns: %v)", rf.Name, fieldNames(sch))
			}
			col := rec.Column(i)
			if !arrow.TypeEqual(col.DataType(), rf.Type) {
				note := fmt.Sprintf("%s: %s → %s", rf.Name, col.DataType(), rf.Type)
				cast, err := compute.CastArray(ctx, col, compute.SafeCastOptions(rf.Type))
				switch {
				case err == nil:
					defer cast.Release()
					col = cast
				case sameButForWidth(col.DataType(), rf.Type):
					// Arrow cannot cast some nested types (maps) between
					// string widths; their values render the same.
					note += " (rendered uncast: only string/binary/list widths differ)"
				default:
					return out, fmt.Errorf("column %s cannot be cast to the reference type: %w", note, err)
				}
				if !casts[note] {
					casts[note] = true
					out.Casts = append(out.Casts, note)
				}
			}
			for r := 0; r < int(rec.NumRows()); r++ {
				if c > 0 {
					lines[r].WriteByte('|')
				}
				lines[r].WriteString(rf.Name)
				lines[r].WriteByte('=')
				if col.IsNull(r) {
					lines[r].WriteString("NULL")
				} else {
					lines[r].WriteString(col.ValueStr(r))
				}
			}
		}
		for i := range lines {
			out.Rows = append(out.Rows, lines[i].String())
		}
	}
	sort.Strings(out.Rows)
	sort.Strings(out.Casts)
	return out, nil
}

// sameButForWidth says whether two Arrow types differ only in the offset
// width of strings, binaries and lists (utf8 vs large_utf8 ...).
func sameButForWidth(a, b arrow.DataType) bool {
	norm := strings.NewReplacer("large_utf8", "utf8", "large_binary", "binary", "large_list", "list", "string_view", "utf8", "binary_view", "binary")
	return norm.Replace(a.String()) == norm.Replace(b.String())
}

// TableRecords returns an Arrow table's data as records (retained; the
// caller releases them).
func TableRecords(tbl arrow.Table) []arrow.RecordBatch {
	tr := array.NewTableReader(tbl, 1<<16)
	defer tr.Release()
	var out []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	return out
}

func fieldNames(s *arrow.Schema) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}
