package connector

// Filter stage: the residual predicate evaluated by colfilter over the
// pages this process decoded — this file hands it its vectors.
//
//	candidates (rows of a row group, minus deletes)
//	   │ decodedBatch: per predicate field, a colfilter.Vector over the
//	   │ decoded columns (positions in pages holding only some rows, NULLs
//	   │ of enclosing structs, defaults of fields the file lacks)
//	   ▼
//	colfilter.Filter.SelectRows ─▶ the candidates where it is TRUE
//	   (denseLeafRows: one leaf or an And of leaves over whole columns,
//	   colfilter.LeavesRowsOf tested in place)

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// decodedBatch is the batch of candidate rows (rg-local, ascending) of one
// row group's decoded columns: the vectors of the predicate's fields, with
// a field the file lacks read as its default (NULL where an enclosing
// struct the file stores is NULL) or NULL.
func decodedBatch(fl *fileLayout, rg int, cols map[int]*column, s *iceberg.Schema, parents map[int]int, rows []int64) *colfilter.Batch {
	memo := map[int]*colfilter.Vector{}
	b := &colfilter.Batch{N: len(rows)}
	b.Vector = func(id int) *colfilter.Vector {
		if v, ok := memo[id]; ok {
			return v
		}
		f, _ := s.FindFieldByID(id)
		v := &colfilter.Vector{Type: f.Type, ErrAt: func(i int, err error) error {
			name, _ := s.FindColumnName(id)
			return fmt.Errorf("%s row group %d row %d: column %s: %w", fl.path, rg, rows[i], name, err)
		}}
		memo[id] = v
		if _, stored := fl.topFieldOf(id); stored {
			v.Outside = "the row is outside the decoded pages"
			structVector(v, cols, pathIn(fl, id), rows, true)
			return v
		}
		// a field the file lacks: its default, NULL under a NULL struct
		v.IsNull = true
		if d, ok := fl.defaults[id]; ok && !d.null {
			v.Val, v.IsNull = d.val, false
		}
		var anchor []int
		for p, has := parents[id]; has; p, has = parents[p] {
			if _, stored := fl.topFieldOf(p); stored {
				anchor = pathIn(fl, p)
				break
			}
			if pf, _ := s.FindFieldByID(p); pf.InitialDefault == nil {
				// under a struct the file lacks too, without a default
				v.Val, v.IsNull = value.Value{}, true
				return v
			}
		}
		if anchor != nil {
			v.Outside = "the row is outside the decoded pages of its enclosing struct"
			structVector(v, cols, anchor, rows, false)
		}
		return v
	}
	return b
}

// structVector follows path (top-level field, struct children) in the
// decoded columns: the candidates' positions, the NULLs of the structs
// along it and, when leaf, the array at its end (otherwise the path ends
// at a struct whose NULLs make a field the file lacks NULL).
func structVector(v *colfilter.Vector, cols map[int]*column, path []int, rows []int64, leaf bool) {
	c := cols[path[0]]
	if c == nil {
		v.Broken = fmt.Errorf("the column was not decoded")
		if !leaf {
			v.Broken = fmt.Errorf("its enclosing struct was not decoded")
		}
		return
	}
	v.Pos = positions(c, rows)
	arr := c.arr
	var structs []arrow.Array
	for _, j := range path[1:] {
		st, ok := arr.(*array.Struct)
		if !ok {
			v.Broken = fmt.Errorf("the file stores %s where the table has a struct", arr.DataType())
			return
		}
		structs = append(structs, st)
		arr = st.Field(j)
	}
	if leaf {
		v.Arr = arr
	} else {
		structs = append(structs, arr)
	}
	if len(structs) == 0 {
		return
	}
	v.Null = make([]bool, len(rows))
	for i, p := range v.Pos {
		if p < 0 {
			continue
		}
		for _, a := range structs {
			if a.IsNull(int(p)) {
				v.Null[i] = true
				break
			}
		}
	}
}

// positions maps candidate rows (ascending) to their positions in c (-1:
// not decoded).
func positions(c *column, rows []int64) []int32 {
	pos := posScratch.Get(len(rows))
	if c.rows == nil {
		n := int64(c.arr.Len())
		for i, r := range rows {
			if r -= c.first; r >= 0 && r < n {
				pos[i] = int32(r)
			} else {
				pos[i] = -1
			}
		}
		return pos
	}
	j := 0
	for i, r := range rows {
		for j < len(c.rows) && c.rows[j] < r {
			j++
		}
		if j < len(c.rows) && c.rows[j] == r {
			pos[i] = int32(j)
		} else {
			pos[i] = -1
		}
	}
	return pos
}

// pathIn is the path of top-level index and struct child positions to
// field id in the file (as far as the file's structs reach).
func pathIn(fl *fileLayout, id int) []int {
	top, _ := fl.topFieldOf(id)
	path := []int{top}
	node := fl.md.Schema.Root().Field(top)
	for node.FieldID() != int32(id) {
		g, isGroup := node.(*schema.GroupNode)
		if !isGroup {
			break
		}
		found := false
		for j := 0; j < g.NumFields(); j++ {
			if containsID(g.Field(j), id) {
				path = append(path, j)
				node = g.Field(j)
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return path
}

// recordBatch is the batch of every row of a record read by iceberg-go's
// scan (columns by top-level name; a field it lacks reads NULL).
func recordBatch(rec arrow.RecordBatch, s *iceberg.Schema, table string) *colfilter.Batch {
	byName := map[string]int{}
	for i, f := range rec.Schema().Fields() {
		byName[f.Name] = i
	}
	n := int(rec.NumRows())
	memo := map[int]*colfilter.Vector{}
	return &colfilter.Batch{N: n, Vector: func(id int) *colfilter.Vector {
		if v, ok := memo[id]; ok {
			return v
		}
		f, _ := s.FindFieldByID(id)
		name, _ := s.FindColumnName(id)
		v := &colfilter.Vector{Type: f.Type, IsNull: true, ErrAt: func(i int, err error) error {
			return fmt.Errorf("plain read of %s: column %s: %w", table, name, err)
		}}
		if col, ok := byName[name]; ok {
			v.Arr, v.Pos = rec.Column(col), colfilter.Positions(n)
		}
		memo[id] = v
		return v
	}}
}

// denseLeafRows is the filter's shortcut for the commonest shapes: the
// predicate one leaf, or an And of leaves, on top-level fields decoded
// whole, every row of the row group a candidate (the plan did not narrow
// it, no row deleted). The first leaf's kernel tests its column in place
// and appends the rows it keeps, each further leaf drops kept rows: no
// candidate list, positions, three-valued results or selection (five
// passes over the row group, a fifth of a point lookup's CPU on files
// without blooms). ok is false when the shape does not hold or no kernel
// applies: the general evaluation then runs, with its errors. The rows
// are RowScratch's.
func (rf rowFilter) denseLeafRows(fl *fileLayout, r *rowGroupRead, cols map[int]*column) (keep []int64, ok bool) {
	if r.rows != nil || r.deleted != nil {
		return nil, false
	}
	leaves := colfilter.LeavesOf(rf.expr)
	if leaves == nil {
		return nil, false
	}
	arrs := make([]arrow.Array, len(leaves))
	typs := make([]iceberg.Type, len(leaves))
	for i, l := range leaves {
		top, stored := fl.topFieldOf(l.FieldID)
		if !stored || fl.md.Schema.Root().Field(top).FieldID() != int32(l.FieldID) {
			return nil, false // nested: its structs' NULLs count
		}
		col := cols[top]
		if col == nil || col.rows != nil || col.first != 0 || int64(col.arr.Len()) != r.numRows {
			return nil, false
		}
		f, found := rf.schema.FindFieldByID(l.FieldID)
		if !found {
			return nil, false
		}
		arrs[i], typs[i] = col.arr, f.Type
	}
	return colfilter.LeavesRowsOf(leaves, typs, arrs)
}

// rowFilter is the pipeline's filter stage: a query's bound predicate,
// evaluated on a row group's decoded columns (colfilter).
type rowFilter struct {
	expr    predicate.Expr
	schema  *iceberg.Schema
	parents map[int]int // nested field id → enclosing struct's field id
}

// rowFilterOf is p's filter stage.
func rowFilterOf(p *prepared) rowFilter {
	return rowFilter{expr: p.expr, schema: p.schema, parents: p.parents}
}

// keep are r's candidates the predicate keeps, evaluated on cols —
// or, when side indexes answered every leaf exactly (r.exact), all of
// them without evaluating it. The slice is rowScratch's: the caller
// releases it when done.
func (rf rowFilter) keep(fl *fileLayout, r *rowGroupRead, cols map[int]*column) ([]int64, error) {
	k, isConst := rf.expr.(predicate.Const)
	switch {
	case isConst && k.Value:
		return candidates(r), nil // no predicate: every candidate
	case r.exact && !isConst:
		return candidates(r), nil // the planned rows are exactly the matching ones
	}
	if keep, ok := rf.denseLeafRows(fl, r, cols); ok {
		return keep, nil
	}
	rows := candidates(r)
	defer rowScratch.Put(rows)
	sel, err := (&colfilter.Filter{Expr: rf.expr, Scratch: true}).SelectRows(decodedBatch(fl, r.rg, cols, rf.schema, rf.parents, rows))
	if err != nil {
		return nil, err
	}
	defer posScratch.Put(sel)
	keep := rowScratch.Get(len(sel))
	for i, j := range sel {
		keep[i] = rows[j]
	}
	return keep, nil
}

// exactCountKey keys the query's count of row groups read without
// evaluating the predicate (Stats.ExactRowGroups) in its context.
type exactCountKey struct{}

// candidates are the row group's planned rows less its deleted ones.
func candidates(r *rowGroupRead) []int64 {
	ranges := r.rows
	if ranges == nil {
		ranges = plan.All(r.numRows)
	}
	rows := rowScratch.Get(int(ranges.Rows()))[:0]
	for _, rr := range ranges {
		for row := rr.Start; row < rr.End && row < r.numRows; row++ {
			if r.deleted == nil || !r.deleted.Contains(uint64(r.firstRow+row)) {
				rows = append(rows, row)
			}
		}
	}
	return rows
}
