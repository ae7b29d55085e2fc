package connector

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// pageColumns are the columns of pagesTestFile; records tells whether
// the page decoders build them from planned pages (pagesDecodable; the
// others read their chunks whole).
var pageColumns = []struct {
	field   arrow.Field
	records bool
}{
	{arrow.Field{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true}, true},
	{arrow.Field{Name: "i16", Type: arrow.PrimitiveTypes.Int16}, true},
	{arrow.Field{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true}, true},
	{arrow.Field{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true}, true},
	{arrow.Field{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true}, true},
	{arrow.Field{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true}, true},
	{arrow.Field{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, true},
	{arrow.Field{Name: "i64", Type: arrow.PrimitiveTypes.Int64}, true},
	{arrow.Field{Name: "f16", Type: arrow.FixedWidthTypes.Float16, Nullable: true}, true},
	{arrow.Field{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true}, true},
	{arrow.Field{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, true},
	{arrow.Field{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}, true},
	{arrow.Field{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true}, true},
	{arrow.Field{Name: "t32", Type: arrow.FixedWidthTypes.Time32ms, Nullable: true}, true},
	{arrow.Field{Name: "t64", Type: arrow.FixedWidthTypes.Time64us, Nullable: true}, true},
	{arrow.Field{Name: "ts_ns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true}, true},
	{arrow.Field{Name: "ts_tz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Europe/Paris"}, Nullable: true}, true}, // cast: the zone is in the stored schema
	{arrow.Field{Name: "dec9", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true}, true},                            // INT32
	{arrow.Field{Name: "dec18", Type: &arrow.Decimal128Type{Precision: 18, Scale: 3}, Nullable: true}, true},                          // INT64
	{arrow.Field{Name: "dec30", Type: &arrow.Decimal128Type{Precision: 30, Scale: 4}, Nullable: true}, true},                          // FIXED_LEN_BYTE_ARRAY
	{arrow.Field{Name: "dec50", Type: &arrow.Decimal256Type{Precision: 50, Scale: 4}, Nullable: true}, true},
	{arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, true},        // dictionary pages: an Arrow dictionary
	{arrow.Field{Name: "s_plain", Type: arrow.BinaryTypes.String, Nullable: true}, true},  // plain pages
	{arrow.Field{Name: "big", Type: arrow.BinaryTypes.LargeString, Nullable: true}, true}, // cast from string
	{arrow.Field{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true}, true},
	{arrow.Field{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true}, true},
	{arrow.Field{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true}, true},
	{arrow.Field{Name: "st_req", Type: arrow.StructOf(arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true})}, true},
	{arrow.Field{Name: "st_st", Type: arrow.StructOf(arrow.Field{Name: "in", Type: arrow.StructOf(arrow.Field{Name: "w", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true}), Nullable: true}, false},
}

const pagesFileRows = 5000

// pagesTestFile writes pagesFileRows rows of pageColumns, every value a
// function of its row (negative ones too), NULLs at irregular rows, in row
// groups of 2000 rows and pages of a few hundred, with page indexes;
// legacy: decimals stored as INT32/INT64 where they fit, timestamps as
// INT96 (else every decimal is FIXED_LEN_BYTE_ARRAY, timestamps INT64).
func pagesTestFile(t *testing.T, v2 bool, codec compress.Compression, legacy bool) []byte {
	t.Helper()
	var fields []arrow.Field
	for _, c := range pageColumns {
		fields = append(fields, c.field)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := 0; i < pagesFileRows; i++ {
		null := i%7 == 2 || i%13 == 0
		for c, col := range pageColumns {
			fb := b.Field(c)
			if null && col.field.Nullable {
				fb.AppendNull()
				continue
			}
			n := int64(i)*2_654_435_761 - 3_000_000_000 // wraps narrow types both ways
			switch x := fb.(type) {
			case *array.Int8Builder:
				x.Append(int8(n))
			case *array.Int16Builder:
				x.Append(int16(n))
			case *array.Uint8Builder:
				x.Append(uint8(n))
			case *array.Uint16Builder:
				x.Append(uint16(n))
			case *array.Uint32Builder:
				x.Append(uint32(n)) // the high bit set in half of them
			case *array.Uint64Builder:
				x.Append(uint64(n) * 3_000_000_019)
			case *array.Int32Builder:
				x.Append(int32(n))
			case *array.Int64Builder:
				x.Append(n * 1_000_003)
			case *array.Float16Builder:
				x.Append(float16.New(float32(i%2000) / 8))
			case *array.Float32Builder:
				x.Append(float32(n) / 3)
			case *array.Float64Builder:
				x.Append(float64(n) * 1.25)
			case *array.BooleanBuilder:
				x.Append(i%3 == 1)
			case *array.Date32Builder:
				x.Append(arrow.Date32(i - 2000))
			case *array.Time32Builder:
				x.Append(arrow.Time32(i * 17_000 % 86_400_000))
			case *array.Time64Builder:
				x.Append(arrow.Time64(int64(i) * 17_000_003 % 86_400_000_000))
			case *array.TimestampBuilder:
				x.Append(arrow.Timestamp(1_700_000_000_000_000 + n))
			case *array.Decimal128Builder:
				switch col.field.Name {
				case "dec9":
					x.Append(decimal128.FromI64(n % 999_999_999))
				case "dec18":
					x.Append(decimal128.FromI64(n * 1_000_003 % 999_999_999_999_999_999))
				default:
					x.Append(decimal128.New(n%1_000_000_000, uint64(n)*7)) // wide, negative too
				}
			case *array.Decimal256Builder:
				v := decimal256.New(uint64(i%1000), uint64(n)*7, uint64(n)*11, uint64(n)*13) // every word used
				if i%2 == 1 {
					v = v.Negate()
				}
				x.Append(v)
			case *array.StringBuilder:
				if col.field.Name == "s" {
					x.Append(fmt.Sprintf("tenant-%03d", i%97))
				} else {
					x.Append(fmt.Sprintf("request %d took %d ms", i, i%977))
				}
			case *array.LargeStringBuilder:
				x.Append(fmt.Sprintf("large %d", i))
			case *array.BinaryBuilder:
				x.Append([]byte(fmt.Sprintf("bin-%d", i*7)))
			case *array.FixedSizeBinaryBuilder:
				x.Append([]byte{byte(i), byte(i >> 8), byte(i % 251)})
			case *array.StructBuilder:
				x.Append(true)
				switch c := x.FieldBuilder(0).(type) {
				case *array.Int64Builder:
					if i%5 == 1 {
						c.AppendNull() // a NULL field of a struct that is not
					} else {
						c.Append(n)
					}
				case *array.StringBuilder:
					if null {
						c.AppendNull()
					} else {
						c.Append(fmt.Sprintf("y%d", i%31))
					}
				case *array.StructBuilder:
					c.Append(true)
					c.FieldBuilder(0).(*array.Int64Builder).Append(n)
				}
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
		parquet.WithDictionaryFor("s", true), parquet.WithDataPageSize(100), parquet.WithBatchSize(64),
		parquet.WithMaxRowGroupLength(2000), parquet.WithDataPageVersion(version), parquet.WithCompression(codec),
		parquet.WithStoreDecimalAsInteger(legacy))
	return harness.WriteParquet(t, rec, props, pqarrow.WithStoreSchema(), pqarrow.WithDeprecatedInt96Timestamps(legacy))
}

// Planned pages of a flat column decode, without a file built around them,
// to exactly the values the whole row group decode has at their rows:
// every type (those pqarrow converts too: narrow and unsigned ints,
// decimals, float16, a zone or a large string from the stored schema),
// NULLs, dictionary and plain pages, data pages v1 and v2, any run of
// pages, a struct's only leaf. A shape the decoders do not build (a struct
// of a struct) is not decodable from pages (its chunks are read whole),
// and decoding its pages anyway is an error naming the column.
func TestPlannedPagesDecodeToTheWholeRowGroupsValuesAtTheirRows(t *testing.T) {
	ctx := context.Background()
	for _, v := range []struct {
		v2     bool
		codec  compress.Compression
		legacy bool
	}{{false, compress.Codecs.Snappy, false}, {true, compress.Codecs.Zstd, true}, {true, compress.Codecs.Uncompressed, false}, {false, compress.Codecs.Gzip, true}} {
		t.Run(fmt.Sprintf("v2=%v/%s/legacy=%v", v.v2, v.codec, v.legacy), func(t *testing.T) {
			data := pagesTestFile(t, v.v2, v.codec, v.legacy)
			if v.legacy {
				fl := layoutOf(t, "mem", data)
				for name, want := range map[string]parquet.Type{"dec9": parquet.Types.Int32, "dec18": parquet.Types.Int64, "ts_ns": parquet.Types.Int96} {
					if got := fl.md.Schema.Column(fl.leavesOf[fl.topNamed(name)][0]).PhysicalType(); got != want {
						t.Fatalf("column %s stored as %s, want %s", name, got, want)
					}
				}
			}
			fl, sf := layoutOf(t, "mem", data), sparseOf(data)
			rnd := rand.New(rand.NewPCG(5, uint64(len(data))))
			for rg := range fl.chunks {
				numRows := fl.md.RowGroup(rg).NumRows()
				var tops []int
				for top := range pageColumns {
					tops = append(tops, top)
				}
				oracle, err := decodeWhole(ctx, fl, sf, rg, tops)
				if err != nil {
					t.Fatal(err)
				}
				for top, c := range pageColumns {
					leaf := fl.leavesOf[top][0]
					ch := fl.chunks[rg][leaf]
					all, err := footer.PagesOf(fl.offsetIndex(sf, rg, leaf), ch, numRows)
					if err != nil || len(all) < 2 && c.field.Name != "b" {
						t.Fatalf("column %s row group %d: %d pages (%v), want several", c.field.Name, rg, len(all), err)
					}
					dict := map[int]byteRange{}
					if all[0].Offset > ch.Start {
						dict[leaf] = byteRange{Off: ch.Start, Len: all[0].Offset - ch.Start}
					}
					for trial := 0; trial < 6; trial++ {
						// a page, a run of pages, scattered pages, all but the first
						var pages []pageRange
						switch trial % 4 {
						case 0:
							pages = []pageRange{pageRangeOf(all[rnd.IntN(len(all))])}
						case 1:
							from := rnd.IntN(max(1, len(all)-1))
							for _, pg := range all[from:min(len(all), from+2)] {
								pages = append(pages, pageRangeOf(pg))
							}
						case 2:
							for _, pg := range all {
								if rnd.IntN(3) == 0 {
									pages = append(pages, pageRangeOf(pg))
								}
							}
							if len(pages) == 0 {
								pages = []pageRange{pageRangeOf(all[len(all)-1])}
							}
						case 3:
							for _, pg := range all[min(1, len(all)-1):] {
								pages = append(pages, pageRangeOf(pg))
							}
						}
						r := &rowGroupRead{rg: rg, numRows: numRows, pages: map[int][]pageRange{leaf: pages}, dict: dict}
						_, flat, err := decodeFlatPages(ctx, fl, sf, r, top)
						if err != nil {
							t.Fatalf("column %s row group %d: %v", c.field.Name, rg, err)
						}
						if flat != c.records || fl.pagesDecodable(top, rg) != c.records {
							t.Fatalf("column %s: decoded from pages %v, decodable %v, want %v", c.field.Name, flat, fl.pagesDecodable(top, rg), c.records)
						}
						col, err := decodePages(ctx, fl, sf, r, top)
						if !c.records {
							if err == nil || !strings.Contains(err.Error(), "no page decoder builds") || !strings.Contains(err.Error(), c.field.Name) {
								t.Fatalf("column %s: pages of a shape no decoder builds: %v", c.field.Name, err)
							}
							continue
						}
						if err != nil {
							t.Fatalf("column %s row group %d: %v", c.field.Name, rg, err)
						}
						want := fl.arrow.Field(top).Type
						if got := col.arr.DataType(); !arrow.TypeEqual(got, want) && !isDictionaryOf(got, want) {
							t.Fatalf("column %s: decoded as %s, the file's type is %s", c.field.Name, got, want)
						}
						var n int
						for _, p := range pages {
							for row := p.firstRow; row < p.firstRow+p.rowCount; row++ {
								i := col.index(row)
								if i != n {
									t.Fatalf("column %s row group %d: row %d at %d, want %d", c.field.Name, rg, row, i, n)
								}
								if got, want := valueAt(col.arr, i), valueAt(oracle[top].arr, int(row)); got != want {
									t.Fatalf("column %s row group %d row %d: %s, want %s", c.field.Name, rg, row, got, want)
								}
								n++
							}
						}
						if col.arr.Len() != n {
							t.Fatalf("column %s: %d values from pages of %d rows", c.field.Name, col.arr.Len(), n)
						}
						col.arr.Release()
					}
				}
				releaseColumns(oracle)
			}
		})
	}
}

// Pages holding more or fewer rows than the plan says they do are an error
// naming the column, never values shifted onto other rows.
func TestPlannedPagesHoldingOtherRowCountsThanPlannedAreAnError(t *testing.T) {
	data := pagesTestFile(t, false, compress.Codecs.Snappy, true)
	fl, sf := layoutOf(t, "mem", data), sparseOf(data)
	for _, name := range []string{"i64", "s", "dec30", "dec18", "ts_ns", "b"} {
		top := fl.topNamed(name)
		leaf := fl.leavesOf[top][0]
		ch := fl.chunks[0][leaf]
		all, err := footer.PagesOf(fl.offsetIndex(sf, 0, leaf), ch, 2000)
		if err != nil {
			t.Fatal(err)
		}
		dict := map[int]byteRange{}
		if all[0].Offset > ch.Start {
			dict[leaf] = byteRange{Off: ch.Start, Len: all[0].Offset - ch.Start}
		}
		for _, delta := range []int64{-1, +1} {
			pg := pageRangeOf(all[1])
			pg.rowCount += delta
			r := &rowGroupRead{rg: 0, numRows: 2000, pages: map[int][]pageRange{leaf: {pg}}, dict: dict}
			col, flat, err := decodeFlatPages(context.Background(), fl, sf, r, top)
			if !flat || err == nil {
				if col != nil {
					col.arr.Release()
				}
				t.Fatalf("column %s: a page of %d rows said to hold %d decoded (without a file %v)", name, pg.rowCount-delta, pg.rowCount, flat)
			}
			if want := "column " + name; !contains(err.Error(), want) {
				t.Fatalf("column %s: error %q does not name the column", name, err)
			}
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
