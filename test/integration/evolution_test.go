package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// A v3 table written by iceberg-go gains a field inside a struct (with an
// initial-default) and a top-level column (without one) after its first
// file. Through pushdown, rows of the first file read the default inside
// the struct — unless the struct itself is NULL, when the field is NULL
// too — and NULL for the top-level column; predicates see the same values.
// The expected rows are spelled out by hand.
func TestSchemaEvolutionInsideStructsReadsDefaultsExceptUnderNullStructs(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	cat := c.Iceberg(t)
	_ = cat.CreateNamespace(ctx, table.Identifier{"evolve"}, nil)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "x", Type: iceberg.PrimitiveTypes.Int32},
		}}},
	)
	tbl, err := cat.CreateTable(ctx, table.Identifier{"evolve", "structs"}, sc,
		catalog.WithProperties(iceberg.Properties{"format-version": "3"}))
	if err != nil {
		t.Fatal(err)
	}
	// first file: (1, {x: 10}), (2, NULL), (3, {x: NULL})
	first := structRows(t, tbl.Schema(), []int64{1, 2, 3}, []bool{true, false, true}, []*int32{ptr32(10), nil, nil}, nil)
	if tbl, err = tbl.AppendTable(ctx, first, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	first.Release()
	tx := tbl.NewTransaction()
	if err := tx.UpdateSchema(true, false).
		AddColumn([]string{"s", "y"}, iceberg.PrimitiveTypes.Int32, "", false, iceberg.Int32Literal(7)).
		AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil).
		Commit(); err != nil {
		t.Fatalf("evolve the schema: %v", err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatalf("commit the schema: %v", err)
	}
	// second file: (4, {x: 40, y: NULL}), (5, {x: 50, y: 8})
	second := structRows(t, tbl.Schema(), []int64{4, 5}, []bool{true, true}, []*int32{ptr32(40), ptr32(50)}, []*int32{nil, ptr32(8)})
	if tbl, err = tbl.AppendTable(ctx, second, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	second.Release()

	all := map[int64]string{
		1: "id=1|s={x=10 y=7}|note=NULL",
		2: "id=2|s=NULL|note=NULL",
		3: "id=3|s={x=NULL y=7}|note=NULL",
		4: "id=4|s={x=40 y=NULL}|note=NULL",
		5: "id=5|s={x=50 y=8}|note=NULL",
	}
	for _, q := range []struct {
		where string
		ids   []int64
	}{
		{"", []int64{1, 2, 3, 4, 5}},
		{"s.y = 7", []int64{1, 3}},
		{"s.y IS NULL", []int64{2, 4}},
		{"s.y >= 7", []int64{1, 3, 5}},
		{"NOT (s.y = 7)", []int64{5}},
		{"note IS NULL AND s.x IS NULL", []int64{2, 3}},
	} {
		var want []string
		for _, id := range q.ids {
			want = append(want, all[id])
		}
		slices.Sort(want)
		for mi, m := range pushdownModes {
			conn := modeConnector(t, c, mi)
			res, err := conn.Query(ctx, connector.Query{Table: "evolve.structs", Where: q.where})
			if err != nil {
				t.Errorf("%s WHERE %q: %v", m.name, q.where, err)
				continue
			}
			got := renderEvolved(t, res)
			res.Release()
			if !slices.Equal(got, want) {
				t.Errorf("%s WHERE %q:\n got  %v\n want %v", m.name, q.where, got, want)
			}
		}
	}
}

func ptr32(v int32) *int32 { return &v }

// structRows builds rows of the table's current schema: id, s (valid[i]:
// whether s is non-NULL; x, y its fields, y only when the schema has it).
func structRows(t *testing.T, sc *iceberg.Schema, ids []int64, valid []bool, x, y []*int32) arrow.Table {
	t.Helper()
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		sb := b.Field(1).(*array.StructBuilder)
		sb.Append(valid[i])
		for f, vals := range [][]*int32{x, y} {
			if f >= sb.NumField() {
				continue
			}
			fb := sb.FieldBuilder(f).(*array.Int32Builder)
			if vals == nil || vals[i] == nil || !valid[i] {
				fb.AppendNull()
			} else {
				fb.Append(*vals[i])
			}
		}
		for f := 2; f < as.NumFields(); f++ {
			b.Field(f).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(as, []arrow.RecordBatch{rec})
}

func renderEvolved(t *testing.T, res *connector.Result) []string {
	t.Helper()
	var out []string
	for _, rec := range res.Records {
		for r := 0; r < int(rec.NumRows()); r++ {
			var parts []string
			for c := 0; c < int(rec.NumCols()); c++ {
				col := rec.Column(c)
				v := "NULL"
				if !col.IsNull(r) {
					if st, ok := col.(*array.Struct); ok {
						typ := st.DataType().(*arrow.StructType)
						var kids []string
						for k := 0; k < st.NumField(); k++ {
							kv := "NULL"
							if !st.Field(k).IsNull(r) {
								kv = st.Field(k).ValueStr(r)
							}
							kids = append(kids, typ.Field(k).Name+"="+kv)
						}
						v = "{" + strings.Join(kids, " ") + "}"
					} else {
						v = col.ValueStr(r)
					}
				}
				parts = append(parts, rec.Schema().Field(c).Name+"="+v)
			}
			out = append(out, strings.Join(parts, "|"))
		}
	}
	slices.Sort(out)
	return out
}
