package plan

import (
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
)

// ColumnMap maps Iceberg field ids to the leaf columns of one Parquet file:
// by the field ids the writer stored in the Parquet schema, or, for files
// written without ids, by the table's name mapping.
type ColumnMap struct {
	// leaf is the non-repeated leaf column of a primitive field (what
	// predicates reference).
	leaf map[int]int
	// under lists every leaf column below a field (what projections read).
	under map[int][]int
	// Mapped is false when the file carries no ids and no name mapping
	// applies: then no statistic can be attributed to a field.
	Mapped bool
	// ByName says the name mapping was used.
	ByName bool
	// fieldOfLeaf is the field id of each leaf column (-1 when unmapped).
	fieldOfLeaf []int
}

// NewColumnMap builds the map of a file's schema.
func NewColumnMap(s *schema.Schema, nm iceberg.NameMapping) *ColumnMap {
	cm := &ColumnMap{leaf: map[int]int{}, under: map[int][]int{}, fieldOfLeaf: make([]int, s.NumColumns())}
	hasIDs := false
	for i := 0; i < s.NumColumns(); i++ {
		if s.Column(i).SchemaNode().FieldID() >= 0 {
			hasIDs = true
			break
		}
	}
	for i := 0; i < s.NumColumns(); i++ {
		col := s.Column(i)
		var ids []int
		if hasIDs {
			for n := col.SchemaNode(); n != nil && n.Parent() != nil; n = n.Parent() {
				if id := n.FieldID(); id >= 0 {
					ids = append(ids, int(id))
				}
			}
		} else if nm != nil {
			ids = idsByName(col.ColumnPath(), nm)
			cm.ByName = true
		}
		cm.fieldOfLeaf[i] = -1
		if len(ids) == 0 {
			continue
		}
		cm.fieldOfLeaf[i] = ids[0]
		cm.Mapped = true
		if col.MaxRepetitionLevel() == 0 {
			if _, dup := cm.leaf[ids[0]]; !dup {
				cm.leaf[ids[0]] = i
			}
		}
		for _, id := range ids {
			cm.under[id] = append(cm.under[id], i)
		}
	}
	return cm
}

// idsByName resolves a Parquet column path through a name mapping, skipping
// the wrapper levels of lists and maps. It returns the ids from the leaf up.
func idsByName(path []string, nm iceberg.NameMapping) []int {
	fields := []iceberg.MappedField(nm)
	var ids []int
	for _, part := range path {
		var found *iceberg.MappedField
		for i := range fields {
			for _, n := range fields[i].Names {
				if n == part {
					found = &fields[i]
					break
				}
			}
			if found != nil {
				break
			}
		}
		if found == nil {
			switch part {
			case "list", "element", "item", "array", "bag", "array_element", "key_value", "map", "key", "value":
				continue
			}
			return nil
		}
		if found.FieldID == nil {
			return nil
		}
		ids = append(ids, *found.FieldID)
		fields = found.Fields
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	return ids
}

// Leaf returns the non-repeated leaf column of field id.
func (m *ColumnMap) Leaf(id int) (int, bool) {
	c, ok := m.leaf[id]
	return c, ok
}

// FieldOf returns the field id of leaf column col, or -1.
func (m *ColumnMap) FieldOf(col int) int {
	if col < 0 || col >= len(m.fieldOfLeaf) {
		return -1
	}
	return m.fieldOfLeaf[col]
}

// Leaves returns every leaf column under field id.
func (m *ColumnMap) Leaves(id int) []int { return m.under[id] }

// Projection returns the leaf columns of the projected field ids, sorted
// and unique; every column when the file could not be mapped or no
// projection is given.
func (m *ColumnMap) Projection(md *metadata.FileMetaData, ids []int) []int {
	n := md.Schema.NumColumns()
	if !m.Mapped || len(ids) == 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	seen := make([]bool, n)
	for _, id := range ids {
		for _, c := range m.under[id] {
			seen[c] = true
		}
	}
	var out []int
	for i, s := range seen {
		if s {
			out = append(out, i)
		}
	}
	return out
}
