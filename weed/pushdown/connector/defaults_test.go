package connector

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The schema of the add_columns_with_defaults fixture (written by
// PyIceberg): every primitive type with an initial-default in its JSON
// single-value form.
const defaultsSchemaJSON = `{"type": "struct", "schema-id": 1, "fields": [
 {"id": 1, "name": "col1", "type": "string", "required": false},
 {"id": 2, "name": "col_boolean", "type": "boolean", "required": false, "initial-default": true},
 {"id": 3, "name": "col_integer", "type": "int", "required": false, "initial-default": 342342},
 {"id": 4, "name": "col_long", "type": "long", "required": false, "initial-default": -9223372036854775808},
 {"id": 5, "name": "col_float", "type": "float", "required": false, "initial-default": 0.34234},
 {"id": 6, "name": "col_double", "type": "double", "required": false, "initial-default": 0.342343242342342},
 {"id": 7, "name": "col_decimal", "type": "decimal(16, 2)", "required": false, "initial-default": "12345.00"},
 {"id": 8, "name": "col_date", "type": "date", "required": false, "initial-default": "2003-10-20"},
 {"id": 9, "name": "col_time", "type": "time", "required": false, "initial-default": "00:00:00.012345"},
 {"id": 10, "name": "col_timestamp", "type": "timestamp", "required": false, "initial-default": "1970-01-01T00:00:00.012345"},
 {"id": 11, "name": "col_timestamptz", "type": "timestamptz", "required": false, "initial-default": "1970-01-01T00:00:00.012345+00:00"},
 {"id": 12, "name": "col_string", "type": "string", "required": false, "initial-default": "HELLO"},
 {"id": 13, "name": "col_uuid", "type": "uuid", "required": false, "initial-default": "f79c3e09-677c-4bbd-a479-3f349cb785e7"},
 {"id": 14, "name": "col_fixed", "type": "fixed[5]", "required": false, "initial-default": "010203ff03"},
 {"id": 15, "name": "col_binary", "type": "binary", "required": false, "initial-default": "0102"}]}`

func TestInitialDefaultsInTheirJSONFormsBecomeTypedValuesAndArrowColumns(t *testing.T) {
	var sc iceberg.Schema
	if err := json.Unmarshal([]byte(defaultsSchemaJSON), &sc); err != nil {
		t.Fatal(err)
	}
	defs, err := initialDefaults(&sc)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := defs[1]; ok || len(defs) != 14 {
		t.Fatalf("defaults for fields %v, want 2..15", keys(defs))
	}
	as, err := table.SchemaToArrowSchema(&sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		2: "true", 3: "342342", 4: "-9223372036854775808", 5: "0.34234", 6: "0.342343242342342",
		7: "1234500", 8: "2003-10-20", 9: "00:00:00.012345", 10: "1970-01-01T00:00:00.012345",
		11: "1970-01-01T00:00:00.012345Z", 12: "HELLO", 13: "f79c3e09-677c-4bbd-a479-3f349cb785e7",
		14: "010203ff03", 15: "0102",
	}
	for id, w := range want {
		d := defs[id]
		f, _ := sc.FindFieldByID(id)
		if lt := d.lit.Type(); !lt.Equals(f.Type) && !sameFamily(lt, f.Type) {
			t.Errorf("field %d: literal of type %s, want %s", id, lt, f.Type)
		}
		dt := as.Field(id - 1).Type
		arr, err := defaultArray(d, dt, 3)
		if err != nil {
			t.Errorf("field %d (%s): %v", id, dt, err)
			continue
		}
		if arr.Len() != 3 || arr.NullN() != 0 || !arrow.TypeEqual(arr.DataType(), dt) {
			t.Errorf("field %d: %d values, %d nulls, type %s", id, arr.Len(), arr.NullN(), arr.DataType())
		}
		if got := render(arr, 2); got != w {
			t.Errorf("field %d: Arrow value %q, want %q", id, got, w)
		}
		arr.Release()
	}
	if v := defs[3].val; v.I != 342342 {
		t.Errorf("col_integer predicate value %+v", v)
	}
}

func TestAnInitialDefaultThatCannotBeUnderstoodIsAnErrorNamingTheField(t *testing.T) {
	for _, f := range []string{
		`{"id": 2, "name": "c", "type": "int", "required": false, "initial-default": 1.5}`,
		`{"id": 2, "name": "c", "type": "date", "required": false, "initial-default": "not a date"}`,
		`{"id": 2, "name": "c", "type": "binary", "required": false, "initial-default": "zz"}`,
		`{"id": 2, "name": "c", "type": "fixed[4]", "required": false, "initial-default": "01"}`,
		`{"id": 2, "name": "c", "type": "boolean", "required": false, "initial-default": {"a": 1}}`,
	} {
		var sc iceberg.Schema
		if err := json.Unmarshal([]byte(`{"type": "struct", "schema-id": 0, "fields": [`+f+`]}`), &sc); err != nil {
			t.Fatal(err)
		}
		if _, err := initialDefaults(&sc); err == nil || !strings.Contains(err.Error(), "field 2 (c)") {
			t.Errorf("%s: %v, want an error naming field 2 (c)", f, err)
		}
	}
}

// sameFamily: iceberg-go's literals do not carry a timestamp's zone or a
// decimal's declared precision.
func sameFamily(a, b iceberg.Type) bool {
	switch b.(type) {
	case iceberg.TimestampTzType:
		return a.Equals(iceberg.PrimitiveTypes.Timestamp)
	case iceberg.DecimalType:
		_, ok := a.(iceberg.DecimalType)
		return ok
	}
	return false
}

func render(a arrow.Array, i int) string {
	switch x := a.(type) {
	case *array.Binary:
		return hex.EncodeToString(x.Value(i))
	case *array.FixedSizeBinary:
		return hex.EncodeToString(x.Value(i))
	case *array.Decimal128:
		return x.Value(i).BigInt().String()
	}
	return a.ValueStr(i)
}

func keys(m map[int]fieldDefault) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}
