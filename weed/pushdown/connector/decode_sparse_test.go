package connector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// sparseColumns are the columns of sparseTestFile; sparse tells whether the
// column decodes sparsely (its Arrow type is the plain image of its
// values) or falls back to page decode.
var sparseColumns = []struct {
	field  arrow.Field
	sparse bool
}{
	{arrow.Field{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, true},
	{arrow.Field{Name: "i64", Type: arrow.PrimitiveTypes.Int64}, true},
	{arrow.Field{Name: "i64_dict", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, true}, // dictionary pages
	{arrow.Field{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true}, true},
	{arrow.Field{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}, true},
	{arrow.Field{Name: "ts_s", Type: &arrow.TimestampType{Unit: arrow.Second}, Nullable: true}, true}, // stored as ms, read as ms
	{arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true}, true},
	{arrow.Field{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true}, true},
	{arrow.Field{Name: "f64", Type: arrow.PrimitiveTypes.Float64}, true},
	{arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}, true},
	{arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, true},          // dictionary pages
	{arrow.Field{Name: "s_plain", Type: arrow.BinaryTypes.String, Nullable: true}, true},    // plain pages
	{arrow.Field{Name: "s_fallback", Type: arrow.BinaryTypes.String, Nullable: true}, true}, // dictionary pages, then plain ones
	{arrow.Field{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true}, true},
	{arrow.Field{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 4}, Nullable: true}, true},
	{arrow.Field{Name: "dec", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true}, false},
	{arrow.Field{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true}, false}, // an INT32 narrowed by pqarrow
}

const sparseFileRows = 7000

// sparseTestFile writes sparseFileRows rows, each value a function of its row
// (so a value read at the wrong row shows), NULLs at irregular rows,
// in row groups of 3000 rows and pages of a few hundred.
func sparseTestFile(t *testing.T, v2 bool, codec compress.Compression) []byte {
	t.Helper()
	var fields []arrow.Field
	for _, c := range sparseColumns {
		fields = append(fields, c.field)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := 0; i < sparseFileRows; i++ {
		null := i%7 == 3 || i%11 == 0
		for c, col := range sparseColumns {
			fb := b.Field(c)
			if null && col.field.Nullable {
				fb.AppendNull()
				continue
			}
			switch x := fb.(type) {
			case *array.Int32Builder:
				x.Append(int32(i*3 - 5000))
			case *array.Int64Builder:
				if col.field.Name == "i64_dict" {
					x.Append(int64(i%50) - 20)
				} else {
					x.Append(int64(i) * 1_000_003)
				}
			case *array.Uint32Builder:
				x.Append(uint32(i) * 4_000_037)
			case *array.TimestampBuilder:
				x.Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1_000_001))
			case *array.Date32Builder:
				x.Append(arrow.Date32(19_000 + i))
			case *array.Float32Builder:
				x.Append(float32(i) / 3)
			case *array.Float64Builder:
				x.Append(float64(i) * 1.25)
			case *array.BooleanBuilder:
				x.Append(i%3 == 1)
			case *array.StringBuilder:
				switch col.field.Name {
				case "s":
					x.Append(fmt.Sprintf("tenant-%03d", i%97))
				case "s_fallback":
					x.Append(fmt.Sprintf("value-%d", i))
				default:
					x.Append(fmt.Sprintf("request %d served in %d ms%s", i, i%977, strings.Repeat("x", i%13)))
				}
			case *array.BinaryBuilder:
				x.Append([]byte(fmt.Sprintf("bin-%d", i*7)))
			case *array.FixedSizeBinaryBuilder:
				x.Append([]byte{byte(i), byte(i >> 8), byte(i % 251), 7})
			case *array.Decimal128Builder:
				x.Append(decimal128.FromI64(int64(i)*101 - 3))
			case *array.Int8Builder:
				x.Append(int8(i))
			default:
				t.Fatalf("no value for %T", fb)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	version := parquet.DataPageV1
	if v2 {
		version = parquet.DataPageV2
	}
	props := parquet.NewWriterProperties(parquet.WithPageIndexEnabled(true), parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("s", true), parquet.WithDictionaryFor("i64_dict", true),
		parquet.WithDictionaryFor("s_fallback", true), parquet.WithDictionaryPageSizeLimit(2048), parquet.WithDataPageSize(2048), parquet.WithBatchSize(64),
		parquet.WithMaxRowGroupLength(3000), parquet.WithDataPageVersion(version), parquet.WithCompression(codec))
	return harness.WriteParquet(t, rec, props)
}

// pagesHolding are pages of top's leaf in row group rg holding the rows
// (ascending), as the plan gives them, and the dictionary region: those
// holding a row, or every page when that is more than half the chunk.
func pagesHolding(t *testing.T, fl *fileLayout, sf *sparseFile, rg, top int, numRows int64, rows []int64) ([]pageRange, map[int]byteRange) {
	leaf := fl.leavesOf[top][0]
	pages, d, ok := fl.latePages(sf, &rowGroupRead{rg: rg, numRows: numRows}, top, rangesOf(rows))
	if !ok {
		ch := fl.chunks[rg][leaf]
		all, err := footer.PagesOf(fl.offsetIndex(sf, rg, leaf), ch, numRows)
		if err != nil {
			t.Fatal(err)
		}
		d = byteRange{Off: ch.Start, Len: all[0].Offset - ch.Start}
		for _, pg := range all {
			pages = append(pages, pageRangeOf(pg))
		}
	}
	dict := map[int]byteRange{}
	if d.Len > 0 {
		dict[leaf] = d
	}
	return pages, dict
}

// Decoding a column's planned pages, or its whole chunk, at a few rows
// gives exactly the values the whole row group decode has at those rows — every type, NULLs, dictionary
// and plain pages, data pages v1 and v2, every row group, deleted rows
// left out — and the columns whose Arrow type pqarrow converts decode
// their pages whole instead, with the same values.
func TestSparseDecodeGivesTheWholeFileValuesAtTheWantedRows(t *testing.T) {
	ctx := context.Background()
	for _, v := range []struct {
		v2    bool
		codec compress.Compression
	}{{false, compress.Codecs.Snappy}, {true, compress.Codecs.Zstd}, {true, compress.Codecs.Uncompressed}} {
		t.Run(fmt.Sprintf("v2=%v/%s", v.v2, v.codec), func(t *testing.T) {
			data := sparseTestFile(t, v.v2, v.codec)
			fl := layoutOf(t, "mem", data)
			sf := sparseOf(data)
			if len(fl.chunks) != 3 {
				t.Fatalf("%d row groups, want 3", len(fl.chunks))
			}
			rnd := rand.New(rand.NewPCG(3, uint64(len(data))))
			firstRow := int64(0)
			sparseSeen, dictOnlySeen := map[int]int{}, map[int]int{}
			for rg := range fl.chunks {
				numRows := fl.md.RowGroup(rg).NumRows()
				var tops []int
				for top := range sparseColumns {
					tops = append(tops, top)
				}
				oracle, err := decodeWhole(ctx, fl, sf, rg, tops) // the row group decoded whole
				if err != nil {
					t.Fatal(err)
				}
				for trial := 0; trial < 15; trial++ {
					// wanted rows: a point, a few scattered, a short run, the first and last rows,
					// many a few rows apart (read in windows, the rows between dropped)
					var rs []plan.RowRange
					switch trial % 5 {
					case 4:
						for row := rnd.Int64N(40); row < numRows; row += 1 + rnd.Int64N(60) {
							rs = append(rs, plan.RowRange{Start: row, End: min(numRows, row+1+rnd.Int64N(3))})
						}
					case 0:
						row := rnd.Int64N(numRows)
						rs = []plan.RowRange{{Start: row, End: row + 1}}
					case 1:
						for k := 0; k < 4; k++ {
							row := rnd.Int64N(numRows)
							rs = append(rs, plan.RowRange{Start: row, End: row + 1})
						}
					case 2:
						row := rnd.Int64N(numRows - 40)
						rs = []plan.RowRange{{Start: row, End: row + 1 + rnd.Int64N(40)}}
					case 3:
						rs = []plan.RowRange{{Start: 0, End: 1}, {Start: numRows - 1, End: numRows}}
					}
					rows := plan.Union(nil, rs)
					deleted := roaring64.New()
					for _, rr := range rows {
						if rnd.IntN(3) == 0 {
							deleted.Add(uint64(firstRow + rr.Start))
						}
					}
					var wanted []int64
					for _, rr := range rows {
						for row := rr.Start; row < rr.End; row++ {
							if !deleted.Contains(uint64(firstRow + row)) {
								wanted = append(wanted, row)
							}
						}
					}
					for i := 0; i < 2*len(sparseColumns); i++ {
						// each column from its planned pages, then from its whole chunk (no pages planned)
						top, c, chunk := i%len(sparseColumns), sparseColumns[i%len(sparseColumns)], i >= len(sparseColumns)
						var planned []int64
						for _, rr := range rows {
							for row := rr.Start; row < rr.End; row++ {
								planned = append(planned, row)
							}
						}
						pages, dict := pagesHolding(t, fl, sf, rg, top, numRows, planned)
						leaf := fl.leavesOf[top][0]
						r := &rowGroupRead{rg: rg, numRows: numRows, rows: rows, pages: map[int][]pageRange{leaf: pages}, dict: dict,
							firstRow: firstRow, deleted: deleted}
						if chunk {
							pages = []pageRange{{firstRow: 0, rowCount: numRows}}
							r.pages, r.dict = map[int][]pageRange{}, map[int]byteRange{}
						}
						cols := map[int]*column{}
						if err := decodeTops(ctx, fl, sf, r, []int{top}, true, cols); err != nil {
							t.Fatalf("row group %d column %s rows %v: %v", rg, c.field.Name, rows, err)
						}
						col := cols[top]
						sparse := col.rows != nil && len(col.rows) == len(wanted)
						if sparse {
							sparseSeen[i]++
						}
						var pageRows int64
						for _, p := range pages {
							pageRows += p.rowCount
						}
						// a string chunk all of whose pages are dictionary-encoded
						// decodes as a dictionary instead (indices, values once)
						dictOnly := fl.dictEligible(top) && fl.chunks[rg][leaf].DictionaryOnly
						if dictOnly {
							dictOnlySeen[i]++
						}
						if want := c.sparse && !dictOnly && int64(len(planned))*sparseShare <= pageRows; sparse != want {
							t.Fatalf("row group %d column %s (whole chunk %v): %d planned rows of %d page rows decoded sparsely %v, want %v", rg, c.field.Name, chunk, len(planned), pageRows, sparse, want)
						}
						for _, row := range wanted {
							i := col.index(row)
							if i < 0 {
								t.Fatalf("row group %d column %s: row %d not decoded", rg, c.field.Name, row)
							}
							if got, want := valueAt(col.arr, i), valueAt(oracle[top].arr, int(row)); got != want {
								t.Fatalf("row group %d column %s row %d (sparse %v): %s, want %s", rg, c.field.Name, row, sparse, got, want)
							}
						}
						col.arr.Release()
					}
				}
				for _, col := range oracle {
					col.arr.Release()
				}
				firstRow += numRows
			}
			for i := 0; i < 2*len(sparseColumns); i++ {
				if c := sparseColumns[i%len(sparseColumns)]; c.sparse && sparseSeen[i] < 6 && dictOnlySeen[i] == 0 {
					t.Fatalf("column %s (whole chunk %v) decoded sparsely %d times, want at least 6", c.field.Name, i >= len(sparseColumns), sparseSeen[i])
				}
			}
		})
	}
}

// valueAt renders value i of arr (through a dictionary's values), NULL as
// "NULL".
func valueAt(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	if d, ok := arr.(*array.Dictionary); ok {
		return d.Dictionary().ValueStr(d.GetValueIndex(i))
	}
	return arr.ValueStr(i)
}

// Pages claiming other row spans than they hold are an error naming the
// column, never values of other rows.
func TestSparseDecodeOfPagesHoldingOtherRowsThanPlannedIsAnError(t *testing.T) {
	data := sparseTestFile(t, true, compress.Codecs.Zstd)
	fl := layoutOf(t, "mem", data)
	sf := sparseOf(data)
	top := 1 // i64, plain pages
	numRows := fl.md.RowGroup(0).NumRows()
	pages, dict := pagesHolding(t, fl, sf, 0, top, numRows, []int64{10})
	if len(pages) != 1 {
		t.Fatalf("%d pages, want 1", len(pages))
	}
	leaf := fl.leavesOf[top][0]
	for _, lie := range []int64{-1, 1} {
		lying := append([]pageRange(nil), pages...)
		lying[0].rowCount += lie
		r := &rowGroupRead{rg: 0, numRows: numRows, rows: rangesOf([]int64{10}), pages: map[int][]pageRange{leaf: lying}, dict: dict}
		col, sparse, err := decodeSparse(context.Background(), fl, sf, r, top)
		if err == nil || !strings.Contains(err.Error(), "column i64") {
			if col != nil {
				col.arr.Release()
			}
			t.Fatalf("a page claiming %+d rows: sparse %v, err %v; want an error naming the column", lie, sparse, err)
		}
	}
}

func TestOnlyStringChunksWhollyDictionaryEncodedDecodeAsDictionaries(t *testing.T) {
	ctx := context.Background()
	data := sparseTestFile(t, false, compress.Codecs.Zstd)
	fl, sf := layoutOf(t, "mem", data), sparseOf(data)
	want := map[string]bool{"s": true, "s_plain": false, "s_fallback": false}
	for rg := range fl.chunks {
		var tops []int
		for name := range want {
			tops = append(tops, fl.topNamed(name))
		}
		cols, err := decodeWhole(ctx, fl, sf, rg, tops)
		if err != nil {
			t.Fatal(err)
		}
		for name, dict := range want {
			arr := cols[fl.topNamed(name)].arr
			if _, isDict := arr.(*array.Dictionary); isDict != dict {
				t.Errorf("row group %d column %s decodes as %s, want a dictionary: %v", rg, name, arr.DataType(), dict)
			}
			if arr.Len() != int(fl.md.RowGroup(rg).NumRows()) {
				t.Errorf("row group %d column %s: %d values", rg, name, arr.Len())
			}
		}
		releaseColumns(cols)
	}
}

// The pages listed from a chunk's page headers are the pages its offset
// index gives: offsets, lengths and rows, every flat column and row
// group, data pages v1 and v2.
func TestPagesFromPageHeadersAreThePagesOfTheOffsetIndex(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		data := sparseTestFile(t, v2, compress.Codecs.Zstd)
		fl, sf := layoutOf(t, "mem", data), sparseOf(data)
		for rg := range fl.chunks {
			numRows := fl.md.RowGroup(rg).NumRows()
			for top := range sparseColumns {
				leaf := fl.leavesOf[top][0]
				ch := fl.chunks[rg][leaf]
				want, err := footer.PagesOf(fl.offsetIndex(sf, rg, leaf), ch, numRows)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sideindex.FlatChunkPages(ch, data[ch.Start:ch.Start+ch.Length], numRows)
				if err != nil {
					t.Fatalf("v2 %v row group %d column %s: %v", v2, rg, sparseColumns[top].field.Name, err)
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("v2 %v row group %d column %s: pages from headers\n%v\nfrom the offset index\n%v", v2, rg, sparseColumns[top].field.Name, got, want)
				}
			}
		}
		// a chunk cut short, or claimed to hold other rows, lists no pages
		ch := fl.chunks[0][fl.leavesOf[1][0]]
		if _, err := sideindex.FlatChunkPages(ch, data[ch.Start:ch.Start+ch.Length/2], fl.md.RowGroup(0).NumRows()); err == nil {
			t.Fatal("half a chunk: no error")
		}
		if _, err := sideindex.FlatChunkPages(ch, data[ch.Start:ch.Start+ch.Length], fl.md.RowGroup(0).NumRows()+1); err == nil {
			t.Fatal("one row more than the pages hold: no error")
		}
	}
}

// In a file without offset indexes, a few rows of a whole chunk decode
// from the pages holding them, found by the page headers: the other
// pages are not decompressed (damage to their data does not reach the
// decode), and the values are the whole decode's.
func TestFewRowsOfAChunkWithoutOffsetIndexDecompressOnlyThePagesHoldingThem(t *testing.T) {
	ctx := context.Background()
	data := sparseTestFile(t, false, compress.Codecs.Zstd)
	fl := layoutOf(t, "mem", data)
	top := fl.topNamed("s_plain") // plain strings: the late column of a point lookup
	leaf := fl.leavesOf[top][0]
	numRows := fl.md.RowGroup(0).NumRows()
	ch := fl.chunks[0][leaf]
	oracle, err := decodeWhole(ctx, fl, sparseOf(data), 0, []int{top})
	if err != nil {
		t.Fatal(err)
	}
	defer releaseColumns(oracle)
	pages, err := sideindex.FlatChunkPages(ch, data[ch.Start:ch.Start+ch.Length], numRows)
	if err != nil || len(pages) < 4 {
		t.Fatalf("%d pages (%v), want several", len(pages), err)
	}
	row := (pages[2].FirstRow + pages[2].EndRow) / 2
	damaged := append([]byte(nil), data...)
	for _, pg := range []footer.Page{pages[0], pages[len(pages)-1]} {
		for i := pg.Offset + pg.Length - 8; i < pg.Offset+pg.Length; i++ {
			damaged[i] ^= 0x5a // the end of the page's compressed data
		}
	}
	for _, d := range []struct {
		name string
		data []byte
	}{{"intact", data}, {"other pages damaged", damaged}} {
		r := &rowGroupRead{rg: 0, numRows: numRows, rows: rangesOf([]int64{row}), pages: map[int][]pageRange{}, dict: map[int]byteRange{}}
		col, sparse, err := decodeSparse(ctx, fl, sparseOf(d.data), r, top)
		if err != nil || !sparse {
			t.Fatalf("%s: sparse %v, err %v", d.name, sparse, err)
		}
		if got, want := valueAt(col.arr, col.index(row)), valueAt(oracle[top].arr, int(row)); got != want {
			t.Fatalf("%s: row %d is %s, want %s", d.name, row, got, want)
		}
		col.arr.Release()
	}
	// the damage is real: the whole chunk does not decode
	if cols, err := decodeWhole(ctx, fl, sparseOf(damaged), 0, []int{top}); err == nil {
		releaseColumns(cols)
		t.Fatal("the damaged chunk decodes whole")
	}
}

// A whole-chunk decode reads without the stored Arrow schema only the
// columns whose Arrow types the Parquet schema gives alone: every column
// decodes as the file's Arrow type, with the values a decode with the
// stored schema gives.
func TestWholeChunksDecodeAsTheFilesArrowTypesWithOrWithoutTheStoredSchema(t *testing.T) {
	ctx := context.Background()
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts_tz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, Nullable: true}, // its zone only in the stored schema
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "big", Type: arrow.BinaryTypes.LargeString, Nullable: true}, // large only with the stored schema
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	for i := 0; i < 5000; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i) * 7)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000 + i))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i%13))
		b.Field(3).(*array.LargeStringBuilder).Append(fmt.Sprintf("large %d", i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := harness.WriteParquet(t, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(2000), parquet.WithCompression(compress.Codecs.Zstd)),
		pqarrow.WithStoreSchema())
	fl, sf := layoutOf(t, "mem", data), sparseOf(data)
	wantBare := map[string]bool{"i64": true, "ts_tz": false, "s": true, "big": false}
	for top := 0; top < sch.NumFields(); top++ {
		name := sch.Field(top).Name
		if bare := fl.bareMeta([]int{top}) != fl.md; bare != wantBare[name] {
			t.Fatalf("column %s decodes without the stored schema: %v, want %v", name, bare, wantBare[name])
		}
		withSchema := *fl
		withSchema.bare = nil // always the stored schema
		got, err := decodeWhole(ctx, fl, sf, 1, []int{top})
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeWhole(ctx, &withSchema, sf, 1, []int{top})
		if err != nil {
			t.Fatal(err)
		}
		typ := sch.Field(top).Type
		if g, w := got[top].arr, want[top].arr; !(arrow.TypeEqual(g.DataType(), typ) || fl.readsAsDict(1, top) && isDictionaryOf(g.DataType(), typ)) || !array.Equal(g, w) || g.Len() != 2000 {
			t.Fatalf("column %s: %s %v, with the stored schema %s %v", name, g.DataType(), g, w.DataType(), w)
		}
		releaseColumns(got)
		releaseColumns(want)
	}
	// several columns: without it only when every one allows
	if fl.bareMeta([]int{0, 1}) != fl.md || fl.bareMeta([]int{0, 2}) == fl.md {
		t.Fatal("several columns: the stored schema is used unless no column's type needs it")
	}
}
