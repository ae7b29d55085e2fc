package plan

import (
	"bytes"
	"context"
	"encoding/binary"
	"github.com/lakeweed/seaweedfs/test/harness"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// sortedFile writes x = 0..n-1 (sorted int64, field id 1) and name = "k%05d"
// (field id 2) in row groups of rg rows with pages of ~pageBytes.
func sortedFile(t *testing.T, n, rg int64, pageIndex, bloom, stats bool) []byte {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldMeta(1)},
		{Name: "name", Type: arrow.BinaryTypes.String, Metadata: fieldMeta(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := int64(0); i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append("k" + string(rune('a'+i%26)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return harness.WriteParquet(t, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rg), parquet.WithDataPageSize(256), parquet.WithBatchSize(16),
		parquet.WithPageIndexEnabled(pageIndex), parquet.WithBloomFilterEnabledFor("x", bloom), parquet.WithStats(stats),
		parquet.WithDictionaryDefault(false)))
}

func tierSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
}

func bound(t *testing.T, e predicate.Expr) predicate.Expr {
	t.Helper()
	b, err := predicate.Bind(e, tierSchema(), predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func xEq(v int64) predicate.Expr {
	return &predicate.Leaf{FieldID: 1, Op: predicate.OpEq, Raw: []iceberg.Literal{iceberg.Int64Literal(v)}}
}

func xBetween(a, b int64) predicate.Expr {
	return predicate.And{Kids: []predicate.Expr{
		&predicate.Leaf{FieldID: 1, Op: predicate.OpGtEq, Raw: []iceberg.Literal{iceberg.Int64Literal(a)}},
		&predicate.Leaf{FieldID: 1, Op: predicate.OpLtEq, Raw: []iceberg.Literal{iceberg.Int64Literal(b)}},
	}}
}

// planOne plans one in-memory file with only the given tier enabled.
func planOne(t *testing.T, data []byte, stats ManifestStats, e predicate.Expr, only string) *FilePlan {
	t.Helper()
	disable := map[string]bool{}
	for _, tier := range Tiers {
		disable[tier] = tier != only
	}
	mem := memFiles{"s3://t/f.parquet": data}
	p := &Planner{Cache: footer.NewCache("t", 16<<20, mem.open)}
	o := DefaultOptions()
	o.Disable = disable
	_, plans, err := p.Plan(context.Background(), Request{Table: Table{Schema: tierSchema()}, Files: []DataFile{{Path: "s3://t/f.parquet", Size: int64(len(data)), Stats: stats}},
		Predicate: bound(t, e), Options: o})
	if err != nil {
		t.Fatal(err)
	}
	return plans[0]
}

func keptRowGroups(fp *FilePlan) int {
	if fp.skip {
		return 0
	}
	n := 0
	for _, rg := range fp.rowGroups {
		if !rg.Skip {
			n++
		}
	}
	return n
}

func int64Bound(v int64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(v))
	return b
}

func TestManifestTierPrunesOnBoundsAndKeepsWhenMetricsAreMissingOrUnreadable(t *testing.T) {
	data := sortedFile(t, 1000, 250, false, false, true)
	good := ManifestStats{Lower: map[int][]byte{1: int64Bound(0)}, Upper: map[int][]byte{1: int64Bound(999)}}
	if fp := planOne(t, data, good, xEq(5000), TierManifest); !fp.skip || fp.skipTier != TierManifest {
		t.Fatalf("x = 5000 outside [0, 999]: the manifest tier must prune the file")
	}
	for name, st := range map[string]ManifestStats{
		"no metrics":               {},
		"only a lower bound":       {Lower: map[int][]byte{1: int64Bound(0)}},
		"bounds of another field":  {Lower: map[int][]byte{2: []byte("a")}, Upper: map[int][]byte{2: []byte("b")}},
		"undecodable bound":        {Lower: map[int][]byte{1: {1, 2, 3}}, Upper: map[int][]byte{1: int64Bound(999)}},
		"inverted (corrupt) bound": {Lower: map[int][]byte{1: int64Bound(9000)}, Upper: map[int][]byte{1: int64Bound(1)}},
	} {
		if fp := planOne(t, data, st, xEq(5000), TierManifest); fp.skip {
			t.Errorf("%s: the manifest tier pruned a file it knows nothing about", name)
		}
	}
}

func TestFooterStatsTierPrunesRowGroupsAndKeepsThemWithoutStatistics(t *testing.T) {
	with := sortedFile(t, 1000, 250, false, false, true)
	if n := keptRowGroups(planOne(t, with, ManifestStats{}, xBetween(300, 320), TierFooter)); n != 1 {
		t.Fatalf("x in [300, 320] with zone maps: %d row groups kept, want 1", n)
	}
	without := sortedFile(t, 1000, 250, false, false, false)
	if n := keptRowGroups(planOne(t, without, ManifestStats{}, xBetween(300, 320), TierFooter)); n != 4 {
		t.Fatalf("x in [300, 320] without statistics: %d row groups kept, want all 4", n)
	}
	// A predicate on a field the file stores under a type the planner does
	// not map (string stats for an int field) keeps everything.
	s := iceberg.NewSchema(0, iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.Int64})
	e, err := predicate.Bind(&predicate.Leaf{FieldID: 2, Op: predicate.OpEq, Raw: []iceberg.Literal{iceberg.Int64Literal(-5)}}, s, predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	mem := memFiles{"s3://t/f.parquet": with}
	p := &Planner{Cache: footer.NewCache("t", 16<<20, mem.open)}
	_, plans, err := p.Plan(context.Background(), Request{Table: Table{Schema: s}, Files: []DataFile{{Path: "s3://t/f.parquet", Size: int64(len(with))}}, Predicate: e, Options: DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	if keptRowGroups(plans[0]) != 4 {
		t.Fatalf("statistics of a mismatched physical type were used")
	}
}

func TestBloomTierPrunesAbsentValuesAndSaysMaybeWithoutAReadableFilter(t *testing.T) {
	data := sortedFile(t, 1000, 250, false, true, true)
	// 1000.5 cannot be an int64; use a value inside [0, 999] that is absent:
	// the generator writes every x, so ask for a row group's bloom with a
	// value present elsewhere.
	fp := planOne(t, data, ManifestStats{}, predicate.Or{Kids: []predicate.Expr{xEq(10), xEq(700)}}, TierBloom)
	if n := keptRowGroups(fp); n != 2 {
		t.Fatalf("x IN (10, 700): bloom filters kept %d row groups, want 2", n)
	}
	noBloom := sortedFile(t, 1000, 250, false, false, true)
	if n := keptRowGroups(planOne(t, noBloom, ManifestStats{}, xEq(10), TierBloom)); n != 4 {
		t.Fatalf("no bloom filters: %d row groups kept, want 4", n)
	}
	// Corrupt every bloom filter header: the tier must answer "maybe".
	corrupt := append([]byte{}, data...)
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rdr.NumRowGroups(); i++ {
		cc, _ := rdr.MetaData().RowGroup(i).ColumnChunk(0)
		off := cc.BloomFilterOffset()
		for j := int64(0); j < 8; j++ {
			corrupt[off+j] = 0xff
		}
	}
	if n := keptRowGroups(planOne(t, corrupt, ManifestStats{}, xEq(10), TierBloom)); n != 4 {
		t.Fatalf("corrupt bloom filters: %d row groups kept, want 4", n)
	}
}

func TestPageIndexTierNarrowsRowsAndFallsBackToRowGroupsWithoutAnIndex(t *testing.T) {
	data := sortedFile(t, 1000, 1000, true, false, true)
	fp := planOne(t, data, ManifestStats{}, xBetween(300, 320), TierPageIndex)
	rows := fp.rowGroups[0].Rows
	if rows == nil || rows.Rows() >= 200 || !rows.Overlaps(300, 321) {
		t.Fatalf("page index should narrow x in [300, 320] to a few pages, got %v", rows)
	}
	noIndex := sortedFile(t, 1000, 1000, false, false, true)
	if fp := planOne(t, noIndex, ManifestStats{}, xBetween(300, 320), TierPageIndex); fp.rowGroups[0].Rows != nil || fp.rowGroups[0].Skip {
		t.Fatalf("without a page index the row group must be kept whole, got %+v", fp.rowGroups[0])
	}
	// Corrupt the column index bytes: the tier must fall back, not prune.
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	cc, _ := rdr.MetaData().RowGroup(0).ColumnChunk(0)
	loc := cc.GetColumnIndexLocation()
	corrupt := append([]byte{}, data...)
	for i := int64(0); i < int64(loc.Length); i++ {
		corrupt[loc.Offset+i] = 0x17
	}
	if fp := planOne(t, corrupt, ManifestStats{}, xBetween(300, 320), TierPageIndex); fp.rowGroups[0].Rows != nil || fp.rowGroups[0].Skip {
		t.Fatalf("corrupt column index must keep the row group whole, got %+v", fp.rowGroups[0])
	}
}

func TestPartitionValuesPruneFilesByTransform(t *testing.T) {
	s := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 3, Name: "s", Type: iceberg.PrimitiveTypes.String})
	spec := iceberg.NewPartitionSpecID(1,
		iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "x_bucket", Transform: iceberg.BucketTransform{NumBuckets: 16}},
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "ts_day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1002, Name: "s_trunc", Transform: iceberg.TruncateTransform{Width: 2}},
	)
	tbl := &Table{Schema: s, Specs: map[int]iceberg.PartitionSpec{1: spec}}
	bucketOf := func(v int64) int32 {
		out := iceberg.BucketTransform{NumBuckets: 16}.Apply(iceberg.Optional[iceberg.Literal]{Valid: true, Val: iceberg.Int64Literal(v)})
		return out.Val.(iceberg.Int32Literal).Value()
	}
	f := &DataFile{SpecID: 1, Partition: map[int]any{1000: bucketOf(42), 1001: int32(20454), 1002: "ab"}} // 2026-01-01
	check := func(name string, e predicate.Expr, want bool) {
		t.Helper()
		b, err := predicate.Bind(e, s, predicate.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if got := PruneByManifest(tbl, f, b) == 1; got != want {
			t.Errorf("%s: pruned=%v, want %v", name, got, want)
		}
	}
	leaf := func(id int, op predicate.Op, lit iceberg.Literal) *predicate.Leaf {
		return &predicate.Leaf{FieldID: id, Op: op, Raw: []iceberg.Literal{lit}}
	}
	check("x = 42 (its bucket)", leaf(1, predicate.OpEq, iceberg.Int64Literal(42)), false)
	other := int64(43)
	for bucketOf(other) == bucketOf(42) {
		other++
	}
	check("x = other bucket", leaf(1, predicate.OpEq, iceberg.Int64Literal(other)), true)
	check("x < 0 (bucket says nothing)", leaf(1, predicate.OpLt, iceberg.Int64Literal(0)), false)
	day := int64(20454) * 86400 * 1_000_000
	check("ts inside the day", leaf(2, predicate.OpEq, iceberg.TimestampLiteral(day+3_600_000_000)), false)
	check("ts the next day", leaf(2, predicate.OpGtEq, iceberg.TimestampLiteral(day+86400*1_000_000)), true)
	check("ts before the day", leaf(2, predicate.OpLt, iceberg.TimestampLiteral(day)), true)
	check("s starting with ab", leaf(3, predicate.OpStartsWith, iceberg.StringLiteral("abz")), false)
	check("s = 'ac'", leaf(3, predicate.OpEq, iceberg.StringLiteral("ac")), true)
	check("s IS NULL", &predicate.Leaf{FieldID: 3, Op: predicate.OpIsNull}, true)
	nullPart := &DataFile{SpecID: 1, Partition: map[int]any{1002: nil}}
	b, _ := predicate.Bind(&predicate.Leaf{FieldID: 3, Op: predicate.OpIsNull}, s, predicate.DefaultLimits)
	if PruneByManifest(tbl, nullPart, b) == 1 {
		t.Errorf("s IS NULL on the null partition was pruned")
	}
	b, _ = predicate.Bind(leaf(3, predicate.OpEq, iceberg.StringLiteral("ab")), s, predicate.DefaultLimits)
	if PruneByManifest(tbl, nullPart, b) != 1 {
		t.Errorf("s = 'ab' on the null partition was kept")
	}
}
