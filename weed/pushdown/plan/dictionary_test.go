package plan

import (
	"bytes"
	"github.com/lakeweed/seaweedfs/test/harness"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// dictFile writes x = 7·i (i < n, every 10th NULL) and name = "k"+(i%26)
// in row groups of rg rows, dictionary-encoded, without bloom filters or a
// page index; dictPage bounds the dictionary page (a small one makes the
// writer fall back to PLAIN data pages).
func dictFile(t *testing.T, n, rg int64, dictPage int64) []byte {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: fieldMeta(1)},
		{Name: "name", Type: arrow.BinaryTypes.String, Metadata: fieldMeta(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := int64(0); i < n; i++ {
		if i%10 == 9 {
			b.Field(0).(*array.Int64Builder).AppendNull()
		} else {
			b.Field(0).(*array.Int64Builder).Append(7 * i)
		}
		b.Field(1).(*array.StringBuilder).Append("k" + string(rune('a'+i%26)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return harness.WriteParquet(t, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rg), parquet.WithDataPageSize(512),
		parquet.WithDictionaryDefault(true), parquet.WithDictionaryPageSizeLimit(dictPage), parquet.WithStats(false)))
}

func xIn(vs ...int64) predicate.Expr {
	var lits []iceberg.Literal
	for _, v := range vs {
		lits = append(lits, iceberg.Int64Literal(v))
	}
	return &predicate.Leaf{FieldID: 1, Op: predicate.OpIn, Raw: lits}
}

func nameEq(s string) predicate.Expr {
	return &predicate.Leaf{FieldID: 2, Op: predicate.OpEq, Raw: []iceberg.Literal{iceberg.StringLiteral(s)}}
}

// rowGroupsHolding lists the row groups of dictFile(n, rg) with a row
// where x is one of vs: the brute-force answer.
func rowGroupsHolding(n, rg int64, vs ...int64) map[int]bool {
	out := map[int]bool{}
	for i := int64(0); i < n; i++ {
		for _, v := range vs {
			if i%10 != 9 && 7*i == v {
				out[int(i/rg)] = true
			}
		}
	}
	return out
}

func TestDictionaryPagesPruneRowGroupsOfChunksWithoutBloomFiltersExactly(t *testing.T) {
	const n, rg = 4000, 500
	data := dictFile(t, n, rg, 1<<20)
	cases := []struct {
		name string
		e    predicate.Expr
		want map[int]bool
	}{
		{"a present value", xEq(7 * 1234), rowGroupsHolding(n, rg, 7*1234)},
		{"an absent value", xEq(7*1234 + 1), map[int]bool{}},
		{"a NULL row's value", xEq(7 * 9), map[int]bool{}}, // row 9 is NULL: 63 is nowhere
		{"IN over three row groups", xIn(7*10, 7*1600, 7*3999, 5), rowGroupsHolding(n, rg, 7*10, 7*1600, 7*3999)},
		{"OR with a string leaf", predicate.Or{Kids: []predicate.Expr{xEq(7 * 2100), nameEq("zz")}}, rowGroupsHolding(n, rg, 7*2100)},
		{"AND with a string present everywhere", predicate.And{Kids: []predicate.Expr{xEq(7 * 3333), nameEq("kc")}}, rowGroupsHolding(n, rg, 7*3333)},
	}
	for _, c := range cases {
		fp := planOne(t, data, ManifestStats{}, c.e, TierBloom)
		for i, r := range fp.rowGroups {
			if kept := !r.Skip && !fp.skip; kept != c.want[i] {
				t.Errorf("%s: row group %d kept=%v, brute force says it holds a match=%v", c.name, i, kept, c.want[i])
			}
		}
	}
	// the notes say a dictionary, not a bloom filter, was used
	fp := planOne(t, data, ManifestStats{}, xEq(7*1234), TierBloom)
	found := false
	for _, u := range fp.Used {
		if u == "dictionary(x)" {
			found = true
		}
	}
	if !found {
		t.Errorf("indexes used %v, want dictionary(x)", fp.Used)
	}
}

func TestDictionaryPagesDoNotPruneWhenTheWriterFellBackToPlainPages(t *testing.T) {
	const n, rg = 20000, 5000
	// a 1 KiB dictionary page limit: x (unique) falls back to PLAIN data
	// pages within each row group, whose values the dictionary lacks
	data := dictFile(t, n, rg, 1024)
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := rdr.RowGroup(0).GetColumnPageReader(0)
	if err != nil {
		t.Fatal(err)
	}
	plainPages := 0
	for pr.Next() {
		if _, dict := pr.Page().(*file.DictionaryPage); !dict && pr.Page().Encoding() == 0 { // PLAIN
			plainPages++
		}
	}
	if plainPages == 0 {
		t.Fatal("the writer did not fall back to PLAIN data pages: the test proves nothing")
	}
	for _, v := range []int64{7 * 4990, 7 * 19998} { // late rows of their row groups: past the fallback
		fp := planOne(t, data, ManifestStats{}, xEq(v), TierBloom)
		want := rowGroupsHolding(n, rg, v)
		for i, r := range fp.rowGroups {
			if want[i] && r.Skip {
				t.Fatalf("x = %d after a PLAIN fallback: row group %d, which holds it, was pruned", v, i)
			}
		}
	}
	// the low-cardinality column stayed dictionary-encoded and still prunes
	if got := keptRowGroups(planOne(t, data, ManifestStats{}, nameEq("zz"), TierBloom)); got != 0 {
		t.Fatalf(`name = "zz": %d row groups kept, want 0`, got)
	}
}

func TestACorruptDictionaryPageMeansMaybe(t *testing.T) {
	data := dictFile(t, 1000, 500, 1<<20)
	// a malformed dictionary page header: the set cannot be read, so the
	// tier says "maybe" for every row group
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rdr.NumRowGroups(); i++ {
		cc, _ := rdr.MetaData().RowGroup(i).ColumnChunk(0)
		off := cc.DictionaryPageOffset()
		for j := int64(0); j < 6; j++ {
			data[off+j] = 0xff
		}
	}
	if got := keptRowGroups(planOne(t, data, ManifestStats{}, xEq(7*10), TierBloom)); got != 2 {
		t.Fatalf("corrupt dictionary page headers: %d row groups kept, want 2", got)
	}
}
