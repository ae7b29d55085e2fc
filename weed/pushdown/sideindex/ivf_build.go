package sideindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// ivfKind is a per-file IVF index of a vector column (ivf: flat lists,
// distances computed exactly from the file's vectors; ivf_pq: lists of
// product-quantized residuals, the best k × refine re-ranked exactly).
// The payload is an Arrow IPC file, one row per list (its centroid, the
// file-absolute positions in it and, for ivf_pq, their codes and norms)
// and, for ivf_pq, one row per PQ subspace (its 256 codewords); a file
// below min_rows valid vectors gets no lists and is searched exactly.
//
// Params: "nlist" (default 2^ceil(log2(4·sqrt(rows))), capped at rows/39),
// "m" (ivf_pq subspaces, default vector.DefaultSubspaces: the most of at
// least 4 dimensions dividing dim, at most 64), "min_rows" (default 1000),
// "seed" (default 1), "iterations" (k-means, default 10).
type ivfKind struct{ pq bool }

func init() {
	register(ivfKind{})
	register(ivfKind{pq: true})
}

const (
	ivfMetaKey  = "lakeweed.sideindex.ivf"
	ivfRowList  = "list"
	ivfRowCodes = "codebook"
)

func (k ivfKind) Name() string {
	if k.pq {
		return "ivf_pq"
	}
	return "ivf"
}

func (ivfKind) Supports(t iceberg.Type) bool { return IsVectorType(t) }

// ivfMeta is what the payload records of the index beside the header.
type ivfMeta struct {
	Dim   int   `json:"dim"`
	Rows  int64 `json:"rows"`
	NList int   `json:"nlist"`
	M     int   `json:"m,omitempty"`
	Dsub  int   `json:"dsub,omitempty"`
}

func (k ivfKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if in.Footer == nil || in.Footer.Meta == nil || in.Source == nil {
		return nil, fmt.Errorf("%s: no parsed footer or source for %s", k.Name(), short(in.File))
	}
	if in.Type == nil || !k.Supports(in.Type) {
		return nil, fmt.Errorf("%s index cannot index field %d of type %v: it needs a list of float or double", k.Name(), in.FieldID, in.Type)
	}
	opt, err := k.options(in.Params)
	if err != nil {
		return nil, err
	}
	mat, err := ReadVectors(ctx, in.File, in.Footer, in.Source, in.Column)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Name(), err)
	}
	if opt.PQ && opt.M > 0 && mat.Dim%opt.M != 0 {
		return nil, fmt.Errorf("%s: m=%d does not divide the dimension %d", k.Name(), opt.M, mat.Dim)
	}
	ix, err := vector.Build(mat, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Name(), err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return writeIVF(headerOf(in, k.Name()), ix)
}

func (k ivfKind) CheckParams(p map[string]string) error {
	_, err := k.options(p)
	return err
}

func (k ivfKind) options(p map[string]string) (vector.BuildOptions, error) {
	known := []string{"nlist", "min_rows", "seed", "iterations"}
	if k.pq {
		known = append(known, "m")
	}
	if err := checkParams(p, known...); err != nil {
		return vector.BuildOptions{}, err
	}
	nlist, err1 := intParam(p, "nlist", 0, 1, 1<<16)
	m, err2 := intParam(p, "m", 0, 1, MaxVectorDim)
	minRows, err3 := intParam(p, "min_rows", vector.DefaultMinRows, 1, 1<<40)
	seed, err4 := intParam(p, "seed", 1, math.MinInt64, math.MaxInt64)
	iters, err5 := intParam(p, "iterations", 10, 1, 100)
	if err := firstErr(err1, err2, err3, err4, err5); err != nil {
		return vector.BuildOptions{}, err
	}
	return vector.BuildOptions{NList: int(nlist), PQ: k.pq, M: int(m), MinRows: minRows, Seed: seed, Iterations: int(iters)}, nil
}

var ivfSchemaFields = []arrow.Field{
	{Name: "row_kind", Type: arrow.BinaryTypes.String},
	{Name: "id", Type: arrow.PrimitiveTypes.Int32},
	{Name: "vector", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},  // centroid, or the 256 codewords
	{Name: "positions", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true}, // file-absolute, ascending
	{Name: "codes", Type: arrow.BinaryTypes.Binary, Nullable: true},                     // len(positions) × m
	{Name: "norms", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},   // |x| of each position
}

func metaOf(ix *vector.Index) ivfMeta {
	m := ivfMeta{Dim: ix.Dim, Rows: ix.Rows, NList: ix.NList()}
	if ix.PQ != nil {
		m.M, m.Dsub = ix.PQ.M, ix.PQ.Dsub
	}
	return m
}

// ivfDigest covers the header, the index description and every value of
// the index, in payload order.
func ivfDigest(header, meta string, ix *vector.Index) string {
	parts := [][]byte{[]byte(header), []byte(meta), floatBytes(ix.Centroids)}
	for l := range ix.Lists {
		b := make([]byte, 0, 8*len(ix.Lists[l]))
		for _, p := range ix.Lists[l] {
			b = binary.LittleEndian.AppendUint64(b, uint64(p))
		}
		parts = append(parts, b)
		if ix.PQ != nil {
			parts = append(parts, ix.Codes[l], floatBytes(ix.Norms[l]))
		}
	}
	if ix.PQ != nil {
		parts = append(parts, floatBytes(ix.PQ.Codebooks))
	}
	return digest(parts...)
}

func floatBytes(f []float32) []byte {
	b := make([]byte, 0, 4*len(f))
	for _, v := range f {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func writeIVF(h Header, ix *vector.Index) ([]byte, error) {
	mj, _ := json.Marshal(metaOf(ix))
	hs := h.encode()
	md := arrow.NewMetadata([]string{headerKey, ivfMetaKey, checksumKey}, []string{hs, string(mj), ivfDigest(hs, string(mj), ix)})
	schema := arrow.NewSchema(ivfSchemaFields, &md)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	kind := b.Field(0).(*array.StringBuilder)
	id := b.Field(1).(*array.Int32Builder)
	vec := b.Field(2).(*array.ListBuilder)
	vecV := vec.ValueBuilder().(*array.Float32Builder)
	pos := b.Field(3).(*array.ListBuilder)
	posV := pos.ValueBuilder().(*array.Int64Builder)
	codes := b.Field(4).(*array.BinaryBuilder)
	norms := b.Field(5).(*array.ListBuilder)
	normsV := norms.ValueBuilder().(*array.Float32Builder)
	for l := range ix.Lists {
		kind.Append(ivfRowList)
		id.Append(int32(l))
		vec.Append(true)
		vecV.AppendValues(ix.Centroids[l*ix.Dim:(l+1)*ix.Dim], nil)
		pos.Append(true)
		posV.AppendValues(ix.Lists[l], nil)
		if ix.PQ != nil {
			codes.Append(ix.Codes[l])
			norms.Append(true)
			normsV.AppendValues(ix.Norms[l], nil)
		} else {
			codes.AppendNull()
			norms.AppendNull()
		}
	}
	if ix.PQ != nil {
		per := vector.PQCentroids * ix.PQ.Dsub
		for j := range ix.PQ.M {
			kind.Append(ivfRowCodes)
			id.Append(int32(j))
			vec.Append(true)
			vecV.AppendValues(ix.PQ.Codebooks[j*per:(j+1)*per], nil)
			pos.AppendNull()
			codes.AppendNull()
			norms.AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema))
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
