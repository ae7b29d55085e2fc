package deletes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Specs: 0 unpartitioned, 1 identity(region), 2 identity(region) +
// day(ts), 3 void(region) only (unpartitioned too).
func testSpecs() map[int]iceberg.PartitionSpec {
	return map[int]iceberg.PartitionSpec{
		0: iceberg.NewPartitionSpecID(0),
		1: iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}}),
		2: iceberg.NewPartitionSpecID(2,
			iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}},
			iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "ts_day", Transform: iceberg.DayTransform{}}),
		3: iceberg.NewPartitionSpecID(3, iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region_void", Transform: iceberg.VoidTransform{}}),
	}
}

func TestApplicabilityFollowsIcebergGosRules(t *testing.T) {
	specs := testSpecs()
	eu := map[int]any{1000: "eu"}
	us := map[int]any{1000: "us"}
	data := func(seq int64, spec int32, part map[int]any) DataFile {
		return DataFile{Path: "d.parquet", SpecID: spec, Partition: part, DataSeq: seq}
	}
	pos := func(seq int64, spec int32, part map[int]any, ref string) File {
		return File{Path: "p", Content: PositionDeletes, Format: FormatParquet, SpecID: spec, Partition: part, DataSeq: seq, ReferencedDataFile: ref}
	}
	dvf := func(seq int64, ref string) File {
		return File{Path: "v.puffin", Content: PositionDeletes, Format: FormatPuffin, SpecID: 1, Partition: eu, DataSeq: seq, ReferencedDataFile: ref}
	}
	eq := func(seq int64, spec int32, part map[int]any) File {
		return File{Path: "e", Content: EqualityDeletes, Format: FormatParquet, SpecID: spec, Partition: part, DataSeq: seq, EqualityFieldIDs: []int{1}}
	}
	cases := []struct {
		name string
		del  File
		d    DataFile
		want bool
	}{
		{"position delete with a greater sequence number applies", pos(5, 1, eu, ""), data(4, 1, eu), true},
		{"position delete with an equal sequence number applies", pos(5, 1, eu, ""), data(5, 1, eu), true},
		{"position delete with a smaller sequence number does not apply", pos(5, 1, eu, ""), data(6, 1, eu), false},
		{"position delete of another partition does not apply", pos(5, 1, us, ""), data(4, 1, eu), false},
		{"position delete of another spec does not apply", pos(5, 2, map[int]any{1000: "eu"}, ""), data(4, 1, eu), false},
		{"position delete of the unpartitioned spec applies to unpartitioned data", pos(5, 0, nil, ""), data(4, 0, map[int]any{}), true},
		{"position delete of the unpartitioned spec does not apply to partitioned data", pos(5, 0, nil, ""), data(4, 1, eu), false},
		{"single-target position delete applies to its file", pos(5, 1, eu, "d.parquet"), data(5, 1, eu), true},
		{"single-target position delete applies to its file whatever the partition", pos(5, 1, us, "d.parquet"), data(5, 2, eu), true},
		{"single-target position delete does not apply to another file", pos(5, 1, eu, "other.parquet"), data(4, 1, eu), false},
		{"single-target position delete respects sequence numbers", pos(5, 1, eu, "d.parquet"), data(6, 1, eu), false},
		{"deletion vector applies to its file at an equal sequence number", dvf(5, "d.parquet"), data(5, 1, eu), true},
		{"deletion vector does not apply to a newer data file", dvf(5, "d.parquet"), data(6, 1, eu), false},
		{"deletion vector with an unset sequence number applies", dvf(-1, "d.parquet"), data(6, 1, eu), true},
		{"deletion vector of another file does not apply", dvf(5, "x.parquet"), data(4, 1, eu), false},
		{"deletion vector without a referenced file applies to nothing", dvf(5, ""), data(4, 1, eu), false},
		{"equality delete with a greater sequence number applies", eq(5, 1, eu), data(4, 1, eu), true},
		{"equality delete with an equal sequence number does not apply", eq(5, 1, eu), data(5, 1, eu), false},
		{"equality delete with a smaller sequence number does not apply", eq(5, 1, eu), data(6, 1, eu), false},
		{"equality delete of another partition does not apply", eq(5, 1, us), data(4, 1, eu), false},
		{"equality delete of another spec does not apply", eq(5, 2, map[int]any{1000: "eu", 1001: int32(3)}), data(4, 1, eu), false},
		{"global equality delete applies to every partition", eq(5, 0, nil), data(4, 1, eu), true},
		{"global equality delete applies to other specs", eq(5, 0, map[int]any{}), data(4, 2, map[int]any{1000: "us", 1001: int32(7)}), true},
		{"equality delete of a void-only spec is global", eq(5, 3, map[int]any{1000: nil}), data(4, 1, us), true},
		{"global equality delete still needs a greater sequence number", eq(5, 0, nil), data(5, 1, eu), false},
		{"equality delete of an unknown spec with no partition is global", eq(5, 9, nil), data(4, 1, eu), true},
		{"equality delete of an unknown spec with a partition is partition-scoped", eq(5, 9, eu), data(4, 1, eu), false},
		{"partitioned equality delete does not apply to unpartitioned data", eq(5, 1, map[int]any{}), data(4, 1, map[int]any{}), false},
		{"multi-field partitions match by canonical value", eq(5, 2, map[int]any{1000: "eu", 1001: iceberg.Date(19000)}), data(4, 2, map[int]any{1000: "eu", 1001: int32(19000)}), true},
		{"multi-field partitions differ by one field", eq(5, 2, map[int]any{1000: "eu", 1001: int32(19001)}), data(4, 2, map[int]any{1000: "eu", 1001: int32(19000)}), false},
		{"null partition values match", pos(5, 1, map[int]any{1000: nil}, ""), data(4, 1, map[int]any{1000: nil}), true},
		{"null does not match the empty string", pos(5, 1, map[int]any{1000: nil}, ""), data(4, 1, map[int]any{1000: ""}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Applies(c.del, c.d, specs); got != c.want {
				t.Fatalf("Applies = %v, want %v", got, c.want)
			}
			ix := NewIndex([]File{c.del}, specs)
			if got := len(ix.For(c.d)) == 1; got != c.want {
				t.Fatalf("Index.For = %v, want %v", ix.For(c.d), c.want)
			}
		})
	}
}

func TestPartitionValuesCompareCanonically(t *testing.T) {
	u := uuid.MustParse("0f8fad5b-d9cb-469f-a165-70867728950e")
	dec := func(unscaled int64, scale int) iceberg.Decimal {
		return iceberg.Decimal{Val: decimal128.FromI64(unscaled), Scale: scale}
	}
	same := [][2]any{
		{int32(7), int64(7)}, {int(7), int32(7)}, {iceberg.Date(7), int32(7)}, {iceberg.Timestamp(7), int64(7)},
		{iceberg.TimestampNano(7), int64(7)}, {iceberg.Time(7), int64(7)},
		{[]byte{1, 2}, []byte{1, 2}}, {u, u[:]}, {float32(1.5), float64(1.5)}, {math.NaN(), math.Float64frombits(canonicalNaNBits)},
		{dec(110, 2), dec(110, 2)}, {dec(110, 2), iceberg.DecimalLiteral(dec(11, 1))}, {"x", "x"}, {nil, nil}, {true, true},
	}
	diff := [][2]any{
		{int32(7), int32(8)}, {"7", int32(7)}, {"ab", []byte("ab")}, {0.0, math.Copysign(0, -1)}, {dec(110, 2), dec(111, 2)},
		{true, false}, {nil, int32(0)}, {"a|b", "a"}, {[]byte{1}, []byte{1, 0}},
	}
	for _, c := range same {
		if a, b := partitionKey(1, map[int]any{5: c[0]}), partitionKey(1, map[int]any{5: c[1]}); a != b {
			t.Errorf("%T(%v) and %T(%v) should match: %q vs %q", c[0], c[0], c[1], c[1], a, b)
		}
	}
	for _, c := range diff {
		if a, b := partitionKey(1, map[int]any{5: c[0]}), partitionKey(1, map[int]any{5: c[1]}); a == b {
			t.Errorf("%T(%v) and %T(%v) should differ: both %q", c[0], c[0], c[1], c[1], a)
		}
	}
	if partitionKey(1, map[int]any{5: "a", 6: "b"}) == partitionKey(1, map[int]any{5: "a|6=b"}) {
		t.Error("partition keys are not injective")
	}
	if partitionKey(1, map[int]any{5: "a"}) == partitionKey(2, map[int]any{5: "a"}) {
		t.Error("spec ids are not part of the key")
	}
}

// bruteForce is what Index.For must return: every applicable file, minus
// position delete files when a deletion vector applies, in Index order.
func bruteForce(dels []File, d DataFile, specs map[int]iceberg.PartitionSpec) []File {
	var out []File
	hasDV := false
	for _, f := range dels {
		if Applies(f, d, specs) {
			out = append(out, f)
			hasDV = hasDV || f.IsDV()
		}
	}
	if hasDV {
		out = slices.DeleteFunc(out, func(f File) bool { return f.Content == PositionDeletes && !f.IsDV() })
	}
	slices.SortStableFunc(out, compareFiles)
	return out
}

func randomTable(r *rand.Rand, nData, nDel int) ([]DataFile, []File) {
	parts := func(spec int32) map[int]any {
		switch spec {
		case 0:
			return map[int]any{}
		case 1:
			return map[int]any{1000: []any{"eu", "us", "ap", nil}[r.IntN(4)]}
		case 2:
			return map[int]any{1000: []any{"eu", "us"}[r.IntN(2)], 1001: int32(19000 + r.IntN(3))}
		}
		return map[int]any{1000: nil}
	}
	data := make([]DataFile, nData)
	for i := range data {
		spec := int32(r.IntN(3))
		data[i] = DataFile{Path: fmt.Sprintf("s3://w/t/data/%05d.parquet", i), SpecID: spec, Partition: parts(spec), DataSeq: int64(r.IntN(20)), RecordCount: 100}
	}
	dels := make([]File, nDel)
	for i := range dels {
		spec := int32(r.IntN(4))
		f := File{Path: fmt.Sprintf("s3://w/t/data/del-%05d.parquet", i), SpecID: spec, Partition: parts(spec), DataSeq: int64(r.IntN(22)) - 1, Format: FormatParquet}
		switch r.IntN(4) {
		case 0:
			f.Content, f.Format = PositionDeletes, FormatPuffin
			f.ReferencedDataFile = data[r.IntN(nData)].Path
			f.Path = fmt.Sprintf("s3://w/t/data/dv-%d.puffin", i/50)
			f.BlobOffset, f.BlobLength = int64(4+i*100), 60
		case 1:
			f.Content = PositionDeletes
			if r.IntN(3) == 0 {
				f.ReferencedDataFile = data[r.IntN(nData)].Path
			}
		default:
			f.Content, f.EqualityFieldIDs = EqualityDeletes, []int{1}
		}
		dels[i] = f
	}
	return data, dels
}

func TestIndexReturnsExactlyWhatApplies(t *testing.T) {
	specs := testSpecs()
	for seed := uint64(0); seed < 5; seed++ {
		data, dels := randomTable(rand.New(rand.NewPCG(seed, 99)), 300, 900)
		ix := NewIndex(dels, specs)
		total := 0
		for _, d := range data {
			got, want := ix.For(d), bruteForce(dels, d, specs)
			if !slices.EqualFunc(got, want, func(a, b File) bool { return a.Identity() == b.Identity() }) {
				t.Fatalf("seed %d, %s: Index.For = %d files, brute force %d", seed, d.Path, len(got), len(want))
			}
			total += len(got)
		}
		if total == 0 {
			t.Fatal("degenerate: nothing applies")
		}
	}
}

func TestIndexAssignsTenThousandDeleteFilesToTenThousandDataFilesQuickly(t *testing.T) {
	specs := testSpecs()
	r := rand.New(rand.NewPCG(1, 2))
	data, dels := randomTable(r, 10_000, 10_000)
	// A realistic spread: 100 partitions of spec 1, a few global deletes.
	region := func() map[int]any { return map[int]any{1000: fmt.Sprintf("r%02d", r.IntN(100))} }
	for i := range data {
		data[i].SpecID, data[i].Partition = 1, region()
	}
	for i := range dels {
		if dels[i].Content == EqualityDeletes && r.IntN(100) == 0 {
			dels[i].SpecID, dels[i].Partition = 0, nil
		} else {
			dels[i].SpecID, dels[i].Partition = 1, region()
		}
	}
	start := time.Now()
	ix := NewIndex(dels, specs)
	n := 0
	for _, d := range data {
		n += len(ix.For(d))
	}
	elapsed := time.Since(start)
	if elapsed > 5*time.Second {
		t.Fatalf("10k × 10k took %v", elapsed)
	}
	t.Logf("10k data × 10k delete files: %d assignments in %v", n, elapsed)
	for _, d := range data[:50] {
		if got, want := ix.For(d), bruteForce(dels, d, specs); len(got) != len(want) {
			t.Fatalf("%s: %d vs %d", d.Path, len(got), len(want))
		}
	}
}

func TestIndexReportsEqualityDeletesOfUnknownSpecs(t *testing.T) {
	ix := NewIndex([]File{{Path: "e", Content: EqualityDeletes, SpecID: 42}, {Path: "p", Content: PositionDeletes, SpecID: 43}}, testSpecs())
	if got := ix.UnknownSpecs(); !slices.Equal(got, []int32{42}) {
		t.Fatalf("UnknownSpecs = %v", got)
	}
}

func TestReferencedDataFileComesFromTheManifestOrEqualFilePathBounds(t *testing.T) {
	explicit := "s3://b/d1.parquet"
	lo := map[int][]byte{filePathFieldID: []byte("s3://b/d2.parquet")}
	hi := map[int][]byte{filePathFieldID: []byte("s3://b/d2.parquet")}
	other := map[int][]byte{filePathFieldID: []byte("s3://b/d3.parquet")}
	for _, c := range []struct {
		explicit *string
		lo, hi   map[int][]byte
		want     string
	}{
		{&explicit, lo, hi, explicit},
		{nil, lo, hi, "s3://b/d2.parquet"},
		{nil, lo, other, ""},
		{nil, nil, nil, ""},
		{new(string), lo, hi, "s3://b/d2.parquet"},
	} {
		if got := ReferencedDataFileOf(c.explicit, c.lo, c.hi); got != c.want {
			t.Errorf("ReferencedDataFileOf = %q, want %q", got, c.want)
		}
	}
}

func TestADeleteFileWithoutAKnownFormatOrContentIsRefused(t *testing.T) {
	c := NewComputer(newMemFS().open, nil, Options{})
	for _, f := range []File{
		{Path: "noformat.parquet", Content: PositionDeletes},
		{Path: "nocontent.parquet", Format: FormatParquet},
	} {
		_, err := c.Deleted(t.Context(), DataFile{Path: "d"}, []File{f}, nil, nil)
		errContains(t, err, f.Path)
		if perr.KindOf(err) != perr.InvalidArgument {
			t.Fatalf("%s: kind %v", f.Path, perr.KindOf(err))
		}
	}
}
