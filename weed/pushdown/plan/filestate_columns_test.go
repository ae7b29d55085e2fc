package plan

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// TestAColumnMapIsKeptPerFooterAndNameMapping: ColumnMapOf builds a
// file's column map once per name mapping and hands the same map back for
// the same mapping's JSON, while another mapping of the same file gets its
// own (a file without field ids read under two mappings).
func TestAColumnMapIsKeptPerFooterAndNameMapping(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	bld.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	bld.Field(1).(*array.Int64Builder).AppendValues([]int64{3, 4}, nil)
	rec := bld.NewRecordBatch()
	defer rec.Release()
	data := harness.WriteParquet(t, rec, nil)
	mem := memFiles{"s3://t/a.parquet": data}
	ft, _, err := footer.NewCache("test", 1<<20, mem.open).Get(context.Background(), footer.Identity{Path: "s3://t/a.parquet", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	mapping := func(aID, bID int) (iceberg.NameMapping, []byte) {
		nm := iceberg.NameMapping{{FieldID: &aID, Names: []string{"a"}}, {FieldID: &bID, Names: []string{"b"}}}
		b, err := json.Marshal(nm)
		if err != nil {
			t.Fatal(err)
		}
		return nm, b
	}
	nmA, jsA := mapping(1, 2)
	nmB, jsB := mapping(2, 1)
	a := ColumnMapOf(ft, nmA, jsA)
	if again := ColumnMapOf(ft, nmA, jsA); again != a {
		t.Errorf("the same mapping's column map was built again")
	}
	b := ColumnMapOf(ft, nmB, jsB)
	for _, c := range []struct {
		cm       *ColumnMap
		id, leaf int
	}{{a, 1, 0}, {a, 2, 1}, {b, 1, 1}, {b, 2, 0}} {
		if leaf, ok := c.cm.Leaf(c.id); !ok || leaf != c.leaf {
			t.Errorf("field %d maps to leaf %d (found %v), want %d", c.id, leaf, ok, c.leaf)
		}
	}
	if none := ColumnMapOf(ft, nil, nil); none.Mapped {
		t.Errorf("without field ids or a mapping the file's columns are mapped")
	}
}
