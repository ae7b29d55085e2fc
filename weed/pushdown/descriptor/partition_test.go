package descriptor

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

func partitionSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 7, Name: "tm", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 8, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 9, Name: "tz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 10, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 11, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 12, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 13, Name: "fx", Type: iceberg.FixedTypeOf(3)},
		iceberg.NestedField{ID: 14, Name: "dec", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 15, Name: "day_src", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 16, Name: "bucket_src", Type: iceberg.PrimitiveTypes.String},
	)
}

func partitionSpec() iceberg.PartitionSpec {
	var fields []iceberg.PartitionField
	for id := 1; id <= 14; id++ {
		fields = append(fields, iceberg.PartitionField{SourceIDs: []int{id}, FieldID: 1000 + id, Name: "p" + string(rune('a'+id)), Transform: iceberg.IdentityTransform{}})
	}
	fields = append(fields,
		iceberg.PartitionField{SourceIDs: []int{15}, FieldID: 1015, Name: "day", Transform: iceberg.DayTransform{}},
		iceberg.PartitionField{SourceIDs: []int{16}, FieldID: 1016, Name: "bucket", Transform: iceberg.BucketTransform{NumBuckets: 8}},
	)
	return iceberg.NewPartitionSpecID(3, fields...)
}

func TestPartitionValuesOfEveryTypeRoundTripThroughJSON(t *testing.T) {
	dec := iceberg.Decimal{Val: decimalOfMust(t, "-1234"), Scale: 2}
	u := uuid.MustParse("f79c3e09-677c-4bbd-a479-3f349cb785e7")
	p := map[int]any{
		1001: true, 1002: int32(-7), 1003: int64(1) << 40, 1004: float32(1.5), 1005: math.NaN(),
		1006: iceberg.Date(19000), 1007: iceberg.Time(3723_000_001), 1008: iceberg.Timestamp(1_700_000_000_123_456),
		1009: iceberg.Timestamp(-1), 1010: "héllo", 1011: u, 1012: []byte{0, 1, 0xff}, 1013: []byte("abc"),
		1014: dec, 1015: iceberg.Date(19001), 1016: nil,
	}
	spec, src := partitionSpec(), SchemasSourceType([]*iceberg.Schema{partitionSchema()})
	b, err := EncodePartition(spec, src, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"1001":true`, `"1002":-7`, `"1005":"NaN"`, `"1006":"2022-01-08"`, `"1007":"01:02:03.000001"`,
		`"1008":"2023-11-14T22:13:20.123456"`, `"1009":"1969-12-31T23:59:59.999999+00:00"`, `"1011":"f79c3e09-677c-4bbd-a479-3f349cb785e7"`,
		`"1012":"0001ff"`, `"1014":"-12.34"`, `"1016":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("encoding %s lacks %s", b, want)
		}
	}
	back, err := DecodePartition(b, spec, src)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EncodePartition(spec, src, back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Fatalf("round trip changed the encoding:\n%s\n%s", b, again)
	}
}

func decimalOfMust(t *testing.T, s string) decimal128.Num {
	t.Helper()
	n, _ := new(big.Int).SetString(s, 10)
	d, err := decimalOf(n, 2)
	if err != nil {
		t.Fatal(err)
	}
	return d.Val
}

func TestMalformedPartitionValuesAreRefusedNamingTheField(t *testing.T) {
	spec, src := partitionSpec(), SchemasSourceType([]*iceberg.Schema{partitionSchema()})
	full := func(override string) string {
		base := `"1001":true,"1002":1,"1003":1,"1004":1,"1005":1,"1006":"2020-01-01","1007":"00:00:00","1008":"2020-01-01T00:00:00","1009":"2020-01-01T00:00:00+00:00","1010":"s","1011":"f79c3e09-677c-4bbd-a479-3f349cb785e7","1012":"00","1013":"616263","1014":"1.00","1015":"2020-01-01","1016":3`
		return "{" + base + override + "}"
	}
	if _, err := DecodePartition([]byte(full("")), spec, src); err != nil {
		t.Fatalf("valid partition refused: %v", err)
	}
	for name, c := range map[string]struct{ json, want string }{
		"not JSON":            {`{1001:`, "not a JSON object"},
		"unknown field":       {full(`,"2000":1`), "field id 2000 is not in spec 3"},
		"non-numeric key":     {full(`,"x":1`), `key "x"`},
		"missing field":       {`{"1001":true}`, "is missing"},
		"int out of range":    {full(`,"1002":99999999999`), "1002"},
		"string for int":      {full(`,"1003":"7"`), "1003"},
		"bad date":            {full(`,"1006":"2020-13-01"`), "1006"},
		"bad uuid":            {full(`,"1011":"nope"`), "1011"},
		"bad hex":             {full(`,"1012":"zz"`), "1012"},
		"fixed of wrong size": {full(`,"1013":"61"`), "fixed[3]"},
		"decimal scale":       {full(`,"1014":"1.234"`), "scale 2"},
	} {
		_, err := DecodePartition([]byte(c.json), spec, src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, c.want)
		}
	}
}
