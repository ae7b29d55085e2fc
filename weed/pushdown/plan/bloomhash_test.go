package plan

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// The memo answers exactly what value.BloomHash answers, also when files
// store the same field with different physical or logical types.
func TestBloomHashMemoAnswersAsBloomHashAcrossColumnTypes(t *testing.T) {
	mk := func(name string, n schema.Node) *schema.Column {
		sc := schema.NewSchema(schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{n}, -1)))
		return sc.Column(0)
	}
	cols := []*schema.Column{
		mk("a", schema.MustPrimitive(schema.NewPrimitiveNode("a", parquet.Repetitions.Optional, parquet.Types.Int32, 1, -1))),
		mk("a", schema.MustPrimitive(schema.NewPrimitiveNode("a", parquet.Repetitions.Optional, parquet.Types.Int64, 1, -1))),
		mk("a", schema.MustPrimitive(schema.NewPrimitiveNodeLogical("a", parquet.Repetitions.Optional, schema.NewIntLogicalType(32, false), parquet.Types.Int32, 0, 1))),
		mk("a", schema.MustPrimitive(schema.NewPrimitiveNodeLogical("a", parquet.Repetitions.Optional, schema.NewIntLogicalType(64, true), parquet.Types.Int64, 0, 1))),
		mk("a", schema.MustPrimitive(schema.NewPrimitiveNodeLogical("a", parquet.Repetitions.Optional, schema.NewDecimalLogicalType(9, 2), parquet.Types.Int32, 0, 1))),
	}
	leaf := &predicate.Leaf{FieldID: 1, Op: predicate.OpIn, Type: iceberg.PrimitiveTypes.Int64,
		Lits: []value.Value{value.OfInt(7), value.OfInt(1 << 40), value.OfInt(-3)}}
	other := &predicate.Leaf{FieldID: 1, Op: predicate.OpEq, Type: iceberg.PrimitiveTypes.Int64, Lits: []value.Value{value.OfInt(12)}}
	// a second file's columns: other objects of the same types
	cols = append(cols, mk("a", schema.MustPrimitive(schema.NewPrimitiveNodeLogical("a", parquet.Repetitions.Optional, schema.NewDecimalLogicalType(9, 2), parquet.Types.Int32, 0, 1))),
		mk("a", schema.MustPrimitive(schema.NewPrimitiveNode("a", parquet.Repetitions.Optional, parquet.Types.Int32, 1, -1))))
	distinct := len(cols) - 2
	m := &bloomHashMemo{}
	var hasher metadata.Hasher = metadata.NewBloomFilter(32, 1024, memory.DefaultAllocator).Hasher()
	for round := 0; round < 3; round++ {
		for ci, col := range cols {
			for _, l := range []*predicate.Leaf{leaf, other} {
				for i := range l.Lits {
					wh, wok := value.BloomHash(col, l.Type, l.Lits[i], hasher)
					h, ok := m.hash(&leafState{descr: col, class: hashClassOf(col)}, l, i, hasher)
					if h != wh || ok != wok {
						t.Fatalf("round %d column %d literal %d: memo (%x, %v), BloomHash (%x, %v)", round, ci, i, h, ok, wh, wok)
					}
				}
			}
		}
	}
	if len(m.entries) != distinct*4 {
		t.Fatalf("%d memo entries, want one per column type and literal (%d)", len(m.entries), distinct*4)
	}
	var nilMemo *bloomHashMemo
	if h, ok := nilMemo.hash(&leafState{descr: cols[1], class: hashClassOf(cols[1])}, leaf, 0, hasher); !ok {
		t.Fatalf("nil memo: (%x, %v)", h, ok)
	}
}
