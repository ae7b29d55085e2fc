package predicate

import (
	"testing"

	"github.com/apache/iceberg-go"
)

func fuzzSchema() *iceberg.Schema {
	return iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.DecimalTypeOf(12, 3)},
		iceberg.NestedField{ID: 6, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 7, Name: "inner", Type: iceberg.PrimitiveTypes.Int32}}}},
		iceberg.NestedField{ID: 8, Name: "tags", Type: &iceberg.ListType{ElementID: 9, Element: iceberg.PrimitiveTypes.String}},
	)
}

func substraitSeeds(t testing.TB) [][]byte {
	s := fuzzSchema()
	exprs := []iceberg.BooleanExpression{
		iceberg.EqualTo(iceberg.Reference("id"), int64(5)),
		iceberg.NewAnd(iceberg.GreaterThan(iceberg.Reference("score"), 1.5), iceberg.IsNull(iceberg.Reference("name"))),
		iceberg.NewOr(iceberg.IsIn(iceberg.Reference("name"), "a", "b"), iceberg.NewNot(iceberg.StartsWith(iceberg.Reference("name"), "x"))),
		iceberg.LessThanEqual(iceberg.Reference("s.inner"), int32(3)),
		iceberg.IsNaN(iceberg.Reference("score")),
	}
	var out [][]byte
	for _, e := range exprs {
		b, err := iceberg.BindExpr(s, e, true)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := EncodeSubstrait(s, b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, enc)
	}
	return out
}

// FuzzDecodeSubstrait: malformed Substrait bytes give an error, never a panic.
func FuzzDecodeSubstrait(f *testing.F) {
	for _, s := range substraitSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{0x1a, 0x02, 0x0a, 0x00})
	s := fuzzSchema()
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeSubstrait(b, s)
		if err != nil {
			return
		}
		if bound, err := Bind(e, s, DefaultLimits); err == nil {
			_ = bound.String()
		}
	})
}

// FuzzDecodeIcebergJSON: malformed JSON expressions give an error, never a
// panic.
func FuzzDecodeIcebergJSON(f *testing.F) {
	for _, seed := range []string{
		`{"type":"eq","term":{"field-id":1},"value":5}`,
		`{"type":"and","left":{"type":"lt","term":{"field-id":3},"value":"NaN"},"right":{"type":"not","child":{"type":"is-null","term":{"field-id":2}}}}`,
		`{"type":"in","term":{"type":"reference","field-id":5},"values":["1.250", 3]}`,
		`{"type":"starts-with","term":{"field-id":2},"value":"ab"}`,
		`{"type":"eq","term":{"field-id":4},"value":"2026-01-01"}`,
		`{"type":"eq","term":{"type":"transform","transform":"bucket[4]","term":{"field-id":1}},"value":1}`,
		`true`, `{"type":"eq","term":"id","value":1}`, `[`, `{"type":"not-in","term":{"field-id":7},"values":[]}`,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzSchema()
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeIcebergJSON(b, s)
		if err != nil {
			return
		}
		if bound, err := Bind(e, s, DefaultLimits); err == nil {
			_ = bound.String()
		}
	})
}
