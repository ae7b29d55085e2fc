package sideindex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// VectorIndex is an opened ivf or ivf_pq payload. It answers no predicate
// leaf (Eval is always unknown); searches go through Vectors.
type VectorIndex interface {
	Index
	// Vectors is the parsed index.
	Vectors() *vector.Index
}

type ivfIndex struct {
	ix    *vector.Index
	bytes int64
}

func (i *ivfIndex) Eval(context.Context, *predicate.Leaf) (Answer, error) { return unknown, nil }
func (i *ivfIndex) Bytes() int64                                          { return i.bytes }
func (i *ivfIndex) Vectors() *vector.Index                                { return i.ix }

func (k ivfKind) Open(ctx context.Context, payload []byte, want Header) (Index, error) {
	want.Kind = k.Name()
	ix, err := openIVF(payload, want, k.pq)
	if err != nil {
		return nil, fmt.Errorf("%s side index: %w", k.Name(), err)
	}
	return &ivfIndex{ix: ix, bytes: ix.Bytes()}, nil
}

func openIVF(payload []byte, want Header, pq bool) (ix *vector.Index, err error) {
	if len(payload) > maxPayloadBytes {
		return nil, fmt.Errorf("payload of %d bytes is too large", len(payload))
	}
	defer func() {
		if p := recover(); p != nil {
			ix, err = nil, fmt.Errorf("malformed Arrow IPC file: %v", p)
		}
	}()
	r, err := ipc.NewFileReader(bytes.NewReader(payload), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, fmt.Errorf("not an Arrow IPC file: %v", err)
	}
	defer r.Close()
	md := r.Schema().Metadata()
	get := func(key string) string {
		if i := md.FindKey(key); i >= 0 {
			return md.Values()[i]
		}
		return ""
	}
	if _, err := checkHeader(get(headerKey), want); err != nil {
		return nil, err
	}
	var meta ivfMeta
	if err := json.Unmarshal([]byte(get(ivfMetaKey)), &meta); err != nil {
		return nil, fmt.Errorf("index description not readable: %v", err)
	}
	// Every count is bounded before anything is allocated from it: a list
	// holds at least one of the file's rows (k-means never makes more
	// lists than vectors) and stores its centroid, Dim float32s, in the
	// payload; PQ splits Dim into M subspaces of Dsub dimensions.
	if meta.Dim <= 0 || meta.Dim > MaxVectorDim || meta.Rows != want.Rows || meta.NList < 0 || int64(meta.NList) > meta.Rows ||
		int64(meta.NList)*int64(meta.Dim)*4 > int64(len(payload)) ||
		(pq && meta.NList > 0 && (meta.M <= 0 || meta.M > meta.Dim || meta.Dsub <= 0 || meta.Dsub > meta.Dim || meta.M*meta.Dsub != meta.Dim)) {
		return nil, fmt.Errorf("index description %s does not fit a file of %d rows", short(get(ivfMetaKey)), want.Rows)
	}
	if !r.Schema().Equal(arrow.NewSchema(ivfSchemaFields, nil)) {
		return nil, errors.New("columns are not those of an IVF payload")
	}
	ix = &vector.Index{Dim: meta.Dim, Rows: meta.Rows, Centroids: make([]float32, 0, meta.NList*meta.Dim), Lists: make([][]int64, 0, meta.NList)}
	if pq && meta.NList > 0 {
		ix.PQ = &vector.PQ{M: meta.M, Dsub: meta.Dsub}
	}
	seen := make([]bool, meta.Rows)
	for b := 0; b < r.NumRecords(); b++ {
		rec, err := r.RecordAt(b)
		if err != nil {
			return nil, err
		}
		err = readIVFRows(rec, ix, seen)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	if ix.NList() != meta.NList || (ix.PQ != nil && len(ix.PQ.Codebooks) != meta.M*vector.PQCentroids*meta.Dsub) {
		return nil, fmt.Errorf("the payload holds %d lists, its description says %d", ix.NList(), meta.NList)
	}
	if sum := ivfDigest(get(headerKey), get(ivfMetaKey), ix); sum != get(checksumKey) {
		return nil, errors.New("checksum mismatch: the payload is corrupt")
	}
	return ix, nil
}

// readIVFRows appends one record's rows to ix, checking every row is in
// order and in bounds (seen marks positions already listed).
func readIVFRows(rec arrow.RecordBatch, ix *vector.Index, seen []bool) error {
	kind := rec.Column(0).(*array.String)
	id := rec.Column(1).(*array.Int32)
	vec := rec.Column(2).(*array.List)
	vecV := vec.ListValues().(*array.Float32)
	pos := rec.Column(3).(*array.List)
	posV := pos.ListValues().(*array.Int64)
	codes := rec.Column(4).(*array.Binary)
	norms := rec.Column(5).(*array.List)
	normsV := norms.ListValues().(*array.Float32)
	floats := func(l *array.List, v *array.Float32, i int) []float32 {
		s, e := l.ValueOffsets(i)
		return v.Float32Values()[s:e]
	}
	for i := range int(rec.NumRows()) {
		switch kind.Value(i) {
		case ivfRowList:
			l := ix.NList()
			if int(id.Value(i)) != l || ix.PQ != nil && len(ix.PQ.Codebooks) > 0 {
				return fmt.Errorf("row %d is list %d, expected list %d before any codebook", i, id.Value(i), l)
			}
			c := floats(vec, vecV, i)
			if vec.IsNull(i) || len(c) != ix.Dim || pos.IsNull(i) {
				return fmt.Errorf("list %d has a centroid of %d values, not %d", l, len(c), ix.Dim)
			}
			s, e := pos.ValueOffsets(i)
			ps := append([]int64(nil), posV.Int64Values()[s:e]...)
			for j, p := range ps {
				if p < 0 || p >= ix.Rows || seen[p] || (j > 0 && p <= ps[j-1]) {
					return fmt.Errorf("list %d: position %d is out of order, out of the file or listed twice", l, p)
				}
				seen[p] = true
			}
			ix.Centroids = append(ix.Centroids, c...)
			ix.Lists = append(ix.Lists, ps)
			if ix.PQ != nil {
				cd, nm := codes.Value(i), floats(norms, normsV, i)
				if len(cd) != len(ps)*ix.PQ.M || len(nm) != len(ps) {
					return fmt.Errorf("list %d: %d codes and %d norms for %d positions", l, len(cd), len(nm), len(ps))
				}
				ix.Codes = append(ix.Codes, append([]byte(nil), cd...))
				ix.Norms = append(ix.Norms, append([]float32(nil), nm...))
			} else if !codes.IsNull(i) || !norms.IsNull(i) {
				return fmt.Errorf("list %d of an ivf index carries codes", l)
			}
		case ivfRowCodes:
			per := vector.PQCentroids * max(1, ixDsub(ix))
			if ix.PQ == nil || int(id.Value(i))*per != len(ix.PQ.Codebooks) {
				return fmt.Errorf("row %d is an unexpected codebook %d", i, id.Value(i))
			}
			cb := floats(vec, vecV, i)
			if len(cb) != per {
				return fmt.Errorf("codebook %d has %d values, not %d", id.Value(i), len(cb), per)
			}
			ix.PQ.Codebooks = append(ix.PQ.Codebooks, cb...)
		default:
			return fmt.Errorf("row %d has kind %s", i, short(kind.Value(i)))
		}
	}
	return nil
}

func ixDsub(ix *vector.Index) int {
	if ix.PQ == nil {
		return 0
	}
	return ix.PQ.Dsub
}
