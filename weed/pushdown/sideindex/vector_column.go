package sideindex

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// IsVectorType reports whether t can hold vectors: a list of float or
// double (a Parquet fixed_size_list or list of them).
func IsVectorType(t iceberg.Type) bool {
	l, ok := t.(*iceberg.ListType)
	if !ok {
		return false
	}
	return l.Element.Equals(iceberg.PrimitiveTypes.Float32) || l.Element.Equals(iceberg.PrimitiveTypes.Float64)
}

// MaxVectorDim bounds the dimension of an indexed or searched column.
const MaxVectorDim = 1 << 16

// ReadVectors reads the vector column whose element is leaf column col of
// a data file into a matrix, one row per file position (doubles narrowed
// to float). The dimension is the fixed size of a fixed_size_list column,
// else the most common non-zero length in the file; a NULL vector, one
// with a NULL element or of another length is an invalid row.
func ReadVectors(ctx context.Context, file string, ft *footer.Footer, src footer.Source, col int) (m *vector.Matrix, err error) {
	if ft == nil || ft.Meta == nil || src == nil {
		return nil, fmt.Errorf("vectors of %s: no footer or source", short(file))
	}
	if col < 0 || col >= ft.Meta.Schema.NumColumns() {
		return nil, fmt.Errorf("vectors of %s: column %d is not a leaf", short(file), col)
	}
	if c := ft.Meta.Schema.Column(col); c.MaxRepetitionLevel() != 1 {
		return nil, fmt.Errorf("vectors of %s: column %s is not a list of numbers", short(file), short(c.Path()))
	}
	defer func() {
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("vectors of %s: decode: %v", short(file), p)
		}
	}()
	rdr, err := OpenParquet(ctx, file, ft, src)
	if err != nil {
		return nil, err
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 8192}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(ctx, []int{col}, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	rows := ft.NumRows()
	type vec struct {
		vals  []float32
		valid bool
	}
	all := make([]vec, 0, rows)
	fixed := 0
	lengths := map[int]int{}
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec := rr.RecordBatch()
		arr, ok := rec.Column(0).(array.ListLike)
		if !ok {
			return nil, fmt.Errorf("vectors of %s: column is %s, not a list", short(file), rec.Column(0).DataType())
		}
		if fl, ok := arr.DataType().(*arrow.FixedSizeListType); ok {
			fixed = int(fl.Len())
		}
		get, elemValid, err := elements(arr.ListValues())
		if err != nil {
			return nil, fmt.Errorf("vectors of %s: %w", short(file), err)
		}
		for i := range arr.Len() {
			if arr.IsNull(i) {
				all = append(all, vec{})
				continue
			}
			s, e := arr.ValueOffsets(i)
			v := vec{vals: make([]float32, e-s), valid: e > s}
			for j := s; j < e; j++ {
				if !elemValid(int(j)) {
					v.valid = false
					break
				}
				v.vals[j-s] = get(int(j))
			}
			if v.valid {
				lengths[len(v.vals)]++
			}
			all = append(all, v)
		}
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	if int64(len(all)) != rows {
		return nil, fmt.Errorf("vectors of %s: read %d rows, the footer says %d", short(file), len(all), rows)
	}
	dim := fixed
	if dim == 0 {
		best := 0
		for l, n := range lengths {
			if n > best || (n == best && l < dim) {
				dim, best = l, n
			}
		}
	}
	if dim <= 0 || dim > MaxVectorDim {
		return nil, fmt.Errorf("vectors of %s: no usable dimension (%d)", short(file), dim)
	}
	m = &vector.Matrix{Dim: dim, Data: make([]float32, int64(len(all))*int64(dim)), Valid: make([]bool, len(all))}
	for i, v := range all {
		if v.valid && len(v.vals) == dim {
			m.Valid[i] = true
			copy(m.Data[i*dim:(i+1)*dim], v.vals)
		}
	}
	return m, nil
}

func elements(a arrow.Array) (func(int) float32, func(int) bool, error) {
	switch x := a.(type) {
	case *array.Float32:
		return x.Value, x.IsValid, nil
	case *array.Float64:
		return func(i int) float32 { return float32(x.Value(i)) }, x.IsValid, nil
	}
	return nil, nil, fmt.Errorf("vector elements are %s, not float or double", a.DataType())
}

// OpenParquet opens a data file with arrow-go over its source, reusing
// its parsed footer.
func OpenParquet(ctx context.Context, path string, ft *footer.Footer, src footer.Source) (*file.Reader, error) {
	return openData(Input{File: path, Footer: ft}, &sourceReader{ctx: ctx, src: src})
}
