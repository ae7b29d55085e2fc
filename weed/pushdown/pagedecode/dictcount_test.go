package pagedecode

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// writeStrings writes one string column of rows (nil: NULL) as one row
// group and returns the file's bytes.
func writeStrings(t testing.TB, rows []*string, nullable bool, props ...parquet.WriterProperty) []byte {
	t.Helper()
	sch := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: nullable}}, nil)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for _, r := range rows {
		if r == nil {
			b.AppendNull()
		} else {
			b.Append(*r)
		}
	}
	arr := b.NewArray()
	defer arr.Release()
	rec := array.NewRecordBatch(sch, []arrow.Array{arr}, int64(len(rows)))
	defer rec.Release()
	var buf bytes.Buffer
	wp := parquet.NewWriterProperties(append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(int64(len(rows)) + 1)}, props...)...)
	if err := pqarrow.WriteTable(array.NewTableFromRecords(sch, []arrow.RecordBatch{rec}), &buf, int64(len(rows))+1, wp, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// chunkOf is column col of row group 0 of a Parquet file: the file's
// metadata, the chunk's, and its bytes from its dictionary page on.
func chunkOf(t testing.TB, data []byte, col int) (*metadata.FileMetaData, *metadata.ColumnChunkMetaData, []byte) {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.MetaData()
	cc, err := md.RowGroup(0).ColumnChunk(col)
	if err != nil {
		t.Fatal(err)
	}
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() < start {
		start = cc.DictionaryPageOffset()
	}
	return md, cc, data[start : start+cc.TotalCompressedSize()]
}

// countOf runs CountDictionary on the file's only chunk.
func countOf(t *testing.T, data []byte) (*DictionaryCounts, error) {
	t.Helper()
	md, cc, chunk := chunkOf(t, data, 0)
	return CountDictionary(md.Schema.Column(0), cc.Compression(), chunk, md.RowGroup(0).NumRows())
}

// The rows of each value and the NULLs a chunk's dictionary counts give
// are those of its rows as pqarrow decodes them, for required and
// nullable columns, v1 and v2 pages, every codec, dictionaries of one
// value (indices of bit width 0) to hundreds (widths past 8 bits), runs
// (sorted rows) and scattered values, NULLs scattered and in runs.
func TestDictionaryCountsOfAChunkAreTheCountsOfItsDecodedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 12))
	for _, distinct := range []int{1, 2, 5, 17, 300, 2000} {
		for _, shape := range []string{"scattered", "sorted", "null runs"} {
			for _, nullable := range []bool{false, true} {
				for _, v2 := range []bool{false, true} {
					for _, codec := range []compress.Compression{compress.Codecs.Uncompressed, compress.Codecs.Snappy, compress.Codecs.Zstd, compress.Codecs.Gzip} {
						name := fmt.Sprintf("%d values/%s/nullable %v/v2 %v/%s", distinct, shape, nullable, v2, codec)
						t.Run(name, func(t *testing.T) {
							n := 1 + r.IntN(20000)
							rows := make([]*string, n)
							want := map[string]int64{}
							var nulls int64
							for i := range rows {
								k := r.IntN(distinct)
								if shape == "sorted" {
									k = i * distinct / n
								}
								isNull := nullable && ((shape == "null runs" && (i/500)%3 == 1) || (shape != "null runs" && r.IntN(7) == 0))
								if isNull {
									nulls++
									continue
								}
								s := fmt.Sprintf("value-%04d", k)
								rows[i] = &s
								want[s]++
							}
							version := parquet.DataPageV1
							if v2 {
								version = parquet.DataPageV2
							}
							data := writeStrings(t, rows, nullable, parquet.WithCompression(codec), parquet.WithDataPageVersion(version),
								parquet.WithDataPageSize(int64(256+r.IntN(4096))), parquet.WithDictionaryDefault(true))
							got, err := countOf(t, data)
							if err != nil {
								t.Fatalf("%d rows: %v", n, err)
							}
							if got.Nulls != nulls {
								t.Errorf("%d NULLs counted, %d written", got.Nulls, nulls)
							}
							if len(got.Counts) != len(got.Values) {
								t.Fatalf("%d counts for %d values", len(got.Counts), len(got.Values))
							}
							seen := map[string]int64{}
							for code, v := range got.Values {
								seen[string(v)] += got.Counts[code]
							}
							for v, c := range want {
								if seen[v] != c {
									t.Fatalf("%d rows: %q counted %d times, written %d", n, v, seen[v], c)
								}
							}
							for v, c := range seen {
								if c != 0 && want[v] == 0 {
									t.Fatalf("%q counted %d times, never written", v, c)
								}
							}
							// the same chunk as an Arrow dictionary array: the rows written
							md, cc, chunk := chunkOf(t, data, 0)
							arr, err := DictionaryArray(md.Schema.Column(0), cc.Compression(), chunk, int64(n), &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, memory.DefaultAllocator)
							if err != nil {
								t.Fatalf("DictionaryArray: %v", err)
							}
							defer arr.Release()
							d := arr.(*array.Dictionary)
							dict := d.Dictionary().(*array.String)
							if arr.Len() != n || int64(arr.NullN()) != nulls {
								t.Fatalf("DictionaryArray: %d rows, %d NULL; written %d, %d NULL", arr.Len(), arr.NullN(), n, nulls)
							}
							for i, r := range rows {
								if (r == nil) != d.IsNull(i) || (r != nil && dict.Value(d.GetValueIndex(i)) != *r) {
									t.Fatalf("DictionaryArray row %d: %v, written %v", i, d.ValueStr(i), r)
								}
							}
						})
					}
				}
			}
		}
	}
}

// A chunk whose writer fell back to PLAIN pages (its dictionary grew past
// the page limit), or written without a dictionary, has no counts by code.
func TestAChunkNotWhollyDictionaryEncodedIsNotCounted(t *testing.T) {
	rows := make([]*string, 20000)
	for i := range rows {
		s := fmt.Sprintf("distinct-%08d-%s", i, "padding-padding-padding")
		rows[i] = &s
	}
	for name, props := range map[string][]parquet.WriterProperty{
		"fallen back to PLAIN": {parquet.WithDictionaryDefault(true), parquet.WithDictionaryPageSizeLimit(4096)},
		"no dictionary":        {parquet.WithDictionaryDefault(false)},
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := countOf(t, writeStrings(t, rows, true, props...)); err == nil {
				t.Fatalf("counted %d values", len(got.Values))
			}
		})
	}
}

// Damaged index runs are refused, never counted: a value past the
// dictionary, a run header past the data, a bit-packed run cut short.
func TestDamagedIndexRunsAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		data  []byte
		width int
		n     int64
	}{
		"a repeated value past the domain": {[]byte{4 << 1, 9}, 3, 4},      // RLE run of 4, value 9 > 7
		"a run header past the data":       {[]byte{0x80}, 2, 4},           // an unfinished varint
		"a bit-packed run cut short":       {[]byte{1<<1 | 1, 0xff}, 3, 8}, // one group of 8 3-bit values needs 3 bytes
		"an empty run":                     {[]byte{0, 1}, 1, 2},
		"values past the runs":             {[]byte{2 << 1, 1}, 1, 5},
	} {
		t.Run(name, func(t *testing.T) {
			counts := make([]int64, 4)
			if _, err := countRuns(c.data, c.width, c.n, counts[:0]); err == nil && name != "a repeated value past the domain" {
				t.Fatal("counted")
			}
		})
	}
	// a width of at most 16 bits grows the counts to its domain: the value
	// past the dictionary is counted there, and CountDictionary refuses it
	counts, err := countRuns([]byte{4 << 1, 6}, 3, 4, make([]int64, 0, 5))
	if err != nil || len(counts) != 8 || counts[6] != 4 {
		t.Fatalf("counts %v, %v", counts, err)
	}
}

// Whatever bytes a chunk holds, counting it returns counts that add up to
// its rows, and decoding it an array of its rows whose indices are in its
// dictionary, or an error: neither panics.
func FuzzCountDictionary(f *testing.F) {
	type column struct {
		descr *schema.Column
		codec compress.Compression
	}
	var cols [2]column // required, nullable
	for i, nullable := range []bool{false, true} {
		var rows []*string
		for k := range 300 {
			if nullable && k%9 == 0 {
				rows = append(rows, nil)
				continue
			}
			s := fmt.Sprintf("v%d", k%6)
			rows = append(rows, &s)
		}
		for _, v := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
			data := writeStrings(f, rows, nullable, parquet.WithDataPageVersion(v), parquet.WithDataPageSize(128), parquet.WithCompression(compress.Codecs.Snappy))
			md, cc, chunk := chunkOf(f, data, 0)
			cols[i] = column{md.Schema.Column(0), cc.Compression()}
			f.Add(chunk, nullable, int64(300))
		}
	}
	f.Fuzz(func(t *testing.T, chunk []byte, nullable bool, nrows int64) {
		col := cols[0]
		if nullable {
			col = cols[1]
		}
		if nrows < 0 || nrows > 1<<20 {
			return
		}
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
		if arr, err := DictionaryArray(col.descr, col.codec, chunk, nrows, dt, nil); err == nil {
			if int64(arr.Len()) != nrows {
				t.Fatalf("a dictionary array of %d rows for %d", arr.Len(), nrows)
			}
			d := arr.(*array.Dictionary)
			for i := range arr.Len() {
				if d.IsValid(i) && d.GetValueIndex(i) >= d.Dictionary().Len() {
					t.Fatalf("row %d: index %d past %d values", i, d.GetValueIndex(i), d.Dictionary().Len())
				}
			}
			arr.Release()
		}
		got, err := CountDictionary(col.descr, col.codec, chunk, nrows)
		if err != nil {
			return
		}
		total := got.Nulls
		for _, c := range got.Counts {
			if c < 0 {
				t.Fatalf("a negative count %d", c)
			}
			total += c
		}
		if total != nrows || len(got.Counts) != len(got.Values) {
			t.Fatalf("counted %d rows (%d NULL) of %d, %d counts for %d values", total, got.Nulls, nrows, len(got.Counts), len(got.Values))
		}
	})
}
