package connector

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// Struct columns evolve: a table may add, drop, reorder or rename fields
// inside a struct after some files were written. A file's struct column is
// projected onto the table's struct type child by child, matched by field
// id (the Parquet field id, else the table's name mapping, else the name):
//
//	file struct<a: 1, c: 3>  ──▶  table struct<a: 1, b: 2 (added), c: 3>
//	                              b: its initial-default, or NULL
//
// Leaves whose Arrow types differ only physically are cast.

// structEvolver projects decoded struct columns of one file.
type structEvolver struct {
	ctx      context.Context
	defaults map[int]fieldDefault
}

// project returns arr (a column of the file) as the table's type want of
// field f; mf is the name mapping of the file's field (nil: none). The
// caller releases the result.
func (e *structEvolver) project(arr arrow.Array, f iceberg.NestedField, want arrow.DataType, path string, mf *iceberg.MappedField) (arrow.Array, error) {
	if arrow.TypeEqual(arr.DataType(), want) {
		arr.Retain()
		return arr, nil
	}
	wst, wantStruct := want.(*arrow.StructType)
	st, isStruct := arr.(*array.Struct)
	ist, icebergStruct := f.Type.(*iceberg.StructType)
	if ext, ok := want.(arrow.ExtensionType); ok && arrow.TypeEqual(arr.DataType(), ext.StorageType()) {
		// UUID: the file stores the extension's storage type
		return array.NewExtensionArrayWithStorage(ext, arr), nil
	}
	if !wantStruct || !isStruct || !icebergStruct {
		out, err := compute.CastArray(e.ctx, arr, compute.SafeCastOptions(want))
		if err != nil {
			return nil, fmt.Errorf("column %s is %s in the file, %s in the table: %w", path, arr.DataType(), want, err)
		}
		return out, nil
	}
	if arr.Data().Offset() != 0 {
		// children of a sliced struct are sliced too; start from offset 0
		flat, err := array.Concatenate([]arrow.Array{arr}, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		defer flat.Release()
		st = flat.(*array.Struct)
	}
	fileType := st.DataType().(*arrow.StructType)
	if len(ist.FieldList) != wst.NumFields() || wst.NumFields() == 0 {
		return nil, fmt.Errorf("column %s: the table's struct has %d fields, its Arrow type %d", path, len(ist.FieldList), wst.NumFields())
	}
	cols := make([]arrow.Array, wst.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	n := st.Len()
	for i, child := range ist.FieldList {
		childPath := path + "." + child.Name
		j := fileChild(fileType, child, mf)
		if j < 0 {
			if d, ok := e.defaults[child.ID]; ok {
				a, err := defaultArray(d, wst.Field(i).Type, n)
				if err != nil {
					return nil, fmt.Errorf("column %s, absent from the file: %w", childPath, err)
				}
				cols[i] = a
			} else {
				cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, wst.Field(i).Type, n)
			}
			continue
		}
		var cmf *iceberg.MappedField
		if mf != nil {
			cmf = mf.GetField(fileType.Field(j).Name)
		}
		a, err := e.project(st.Field(j), child, wst.Field(i).Type, childPath, cmf)
		if err != nil {
			return nil, err
		}
		cols[i] = a
	}
	var nulls *memory.Buffer
	if st.NullN() > 0 {
		nulls = st.Data().Buffers()[0]
	}
	return array.NewStructArrayWithFieldsAndNulls(cols, wst.Fields(), nulls, st.NullN(), 0)
}

// fileChild finds the child of a file struct that holds table field f:
// by Parquet field id; else, when the file has no ids, by the name
// mapping (mf: the struct's), else by name. -1: the file does not store it.
func fileChild(ft *arrow.StructType, f iceberg.NestedField, mf *iceberg.MappedField) int {
	anyID := false
	for j, fc := range ft.Fields() {
		if id, ok := arrowFieldID(fc); ok {
			anyID = true
			if id == f.ID {
				return j
			}
		}
	}
	if anyID {
		return -1
	}
	for j, fc := range ft.Fields() {
		if mf != nil {
			if m := mf.GetField(fc.Name); m != nil && m.FieldID != nil {
				if *m.FieldID == f.ID {
					return j
				}
				continue
			}
		}
		if fc.Name == f.Name {
			return j
		}
	}
	return -1
}

// topMapping is the name mapping of a file's top-level field name.
func topMapping(nm iceberg.NameMapping, name string) *iceberg.MappedField {
	for i := range nm {
		for _, n := range nm[i].Names {
			if n == name {
				return &nm[i]
			}
		}
	}
	return nil
}

// arrowFieldID reads the Parquet field id pqarrow puts in field metadata.
func arrowFieldID(f arrow.Field) (int, bool) {
	i := f.Metadata.FindKey("PARQUET:field_id")
	if i < 0 {
		return 0, false
	}
	id, err := strconv.Atoi(f.Metadata.Values()[i])
	return id, err == nil
}
