package connector

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// The row-wise reading of decoded columns for predicate.Eval: the oracle
// the filter stage (filter.go) is checked against.

// rowValue reads field id of a decoded row for predicate evaluation.
type rowSource struct {
	fl      *fileLayout
	cols    map[int]*column
	schema  *iceberg.Schema
	paths   map[int][]int // field id → [top, child, grandchild...] positions in the Arrow struct
	missing map[int]bool
	// defaults of fields the file lacks (their initial-default)
	defaults map[int]fieldDefault
	// anchors: for a missing field nested in a struct the file stores, the
	// path to that struct (a NULL struct makes the field NULL, not its
	// default); absentParent: a missing field under a struct the file
	// lacks too and that has no default (the field reads NULL).
	anchors      map[int][]int
	absentParent map[int]bool
	// rg is the row group read; err the first value that could not be
	// converted (the predicate saw NULL for it: the caller must fail).
	rg  int
	err error
}

func newRowSource(fl *fileLayout, rg int, cols map[int]*column, s *iceberg.Schema, ids []int, defaults map[int]fieldDefault, parents map[int]int) *rowSource {
	rs := &rowSource{fl: fl, rg: rg, cols: cols, schema: s, paths: map[int][]int{}, missing: map[int]bool{}, defaults: defaults}
	for _, id := range ids {
		if _, ok := fl.topFieldOf(id); !ok {
			rs.missing[id] = true
			// the nearest ancestor struct the file stores
			for p, has := parents[id]; has; p, has = parents[p] {
				if _, stored := fl.topFieldOf(p); stored {
					if rs.anchors == nil {
						rs.anchors = map[int][]int{}
					}
					rs.anchors[id] = rs.pathTo(p)
					break
				}
				if f, _ := s.FindFieldByID(p); f.InitialDefault == nil {
					if rs.absentParent == nil {
						rs.absentParent = map[int]bool{}
					}
					rs.absentParent[id] = true
				}
			}
			continue
		}
		rs.paths[id] = rs.pathTo(id)
	}
	return rs
}

// pathTo is the path of top-level index and struct child positions to
// field id in the file (as far as the file's structs reach).
func (rs *rowSource) pathTo(id int) []int { return pathIn(rs.fl, id) }

// nullAlong says whether any struct along path is NULL at row; a struct
// not decoded there fails the read (rs.err) for field id.
func (rs *rowSource) nullAlong(id int, path []int, row int64) bool {
	c := rs.cols[path[0]]
	if c == nil {
		rs.fail(id, row, fmt.Errorf("its enclosing struct was not decoded"))
		return true
	}
	i := c.index(row)
	if i < 0 {
		rs.fail(id, row, fmt.Errorf("the row is outside the decoded pages of its enclosing struct"))
		return true
	}
	var arr arrow.Array = c.arr
	if arr.IsNull(i) {
		return true
	}
	for _, j := range path[1:] {
		st, ok := arr.(*array.Struct)
		if !ok {
			rs.fail(id, row, fmt.Errorf("the file stores %s where the table has a struct", arr.DataType()))
			return true
		}
		arr = st.Field(j)
		if arr.IsNull(i) {
			return true
		}
	}
	return false
}

// row returns the predicate row accessor of rg-local row.
func (rs *rowSource) row(row int64) predicate.Row {
	return func(id int) (value.Value, bool) {
		if rs.missing[id] {
			if rs.absentParent[id] {
				return value.Value{}, true
			}
			if anchor, ok := rs.anchors[id]; ok && rs.nullAlong(id, anchor, row) {
				return value.Value{}, true
			}
			if d, ok := rs.defaults[id]; ok && !d.null {
				return d.val, false
			}
			return value.Value{}, true
		}
		path := rs.paths[id]
		c := rs.cols[path[0]]
		if c == nil {
			return rs.fail(id, row, fmt.Errorf("the column was not decoded"))
		}
		i := c.index(row)
		if i < 0 {
			return rs.fail(id, row, fmt.Errorf("the row is outside the decoded pages"))
		}
		arr := c.arr
		for _, j := range path[1:] {
			st, ok := arr.(*array.Struct)
			if !ok {
				return rs.fail(id, row, fmt.Errorf("the file stores %s where the table has a struct", arr.DataType()))
			}
			if st.IsNull(i) {
				return value.Value{}, true
			}
			arr = st.Field(j)
		}
		if arr.IsNull(i) {
			return value.Value{}, true
		}
		f, ok := rs.schema.FindFieldByID(id)
		if !ok {
			return rs.fail(id, row, fmt.Errorf("field id %d is not in schema %d", id, rs.schema.ID))
		}
		v, err := value.FromArrow(arr, i, f.Type)
		if err != nil {
			return rs.fail(id, row, fmt.Errorf("%s value as %s: %w", arr.DataType(), f.Type, err))
		}
		return v, false
	}
}

// fail records the first value that could not be converted; the row reads
// NULL for it, and the caller returns rs.err instead of any row.
func (rs *rowSource) fail(id int, row int64, err error) (value.Value, bool) {
	if rs.err == nil {
		name, _ := rs.schema.FindColumnName(id)
		rs.err = fmt.Errorf("%s row group %d row %d: column %s: %w", rs.fl.path, rs.rg, row, name, err)
	}
	return value.Value{}, true
}
