package sideindex

import (
	"bytes"
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// bloomKind builds one split-block bloom filter per row group, as a
// Parquet writer would have: values hashed (xxHash64 of their plain
// encoding) by physical type, the filter sized from the row group's
// distinct values and the false-positive rate.
//
// Params: "fpp" (default 0.01, as arrow-go's writer), "ndv" (distinct
// values to size every filter for; default: counted per row group),
// "max_bytes" (default 1 MiB).
type bloomKind struct{}

func init() { register(bloomKind{}) }

const (
	bloomBlobType   = "lakeweed-parquet-sbbf-v1"
	bloomColumnProp = "lakeweed.sideindex.column"
)

func (bloomKind) Name() string { return "bloom" }

// Supports: every type Parquet blooms serve for equality; floats are
// left out (a float literal's stored bits are not known exactly, so a
// float lookup always answers "maybe"), and so are booleans.
func (bloomKind) Supports(t iceberg.Type) bool {
	k, ok := value.KindOf(t)
	return ok && k != value.Float && k != value.Bool
}

func (bloomKind) CheckParams(p map[string]string) error {
	_, _, _, err := bloomOptions(p)
	return err
}

// bloomOptions reads fpp, ndv and max_bytes.
func bloomOptions(p map[string]string) (fpp float64, ndv, maxBytes int64, err error) {
	if err := checkParams(p, "fpp", "ndv", "max_bytes"); err != nil {
		return 0, 0, 0, err
	}
	fpp, err1 := floatParam(p, "fpp", parquet.DefaultBloomFilterFPP, 0, 1)
	ndv, err2 := intParam(p, "ndv", 0, 1, 1<<31-1)
	maxBytes, err3 := intParam(p, "max_bytes", 1<<20, 32, 128<<20)
	return fpp, ndv, maxBytes, firstErr(err1, err2, err3)
}

func (k bloomKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if err := checkInput(in, k); err != nil {
		return nil, err
	}
	fpp, ndv, maxBytes, err := bloomOptions(in.Params)
	if err != nil {
		return nil, err
	}
	col := in.Footer.Meta.Schema.Column(in.Column)
	descr, err := describeColumn(col)
	if err != nil {
		return nil, err
	}
	rdr, err := openData(in, &sourceReader{ctx: ctx, src: in.Source})
	if err != nil {
		return nil, err
	}
	var blobs []puffinBlob
	first := int64(0)
	for rg := 0; rg < in.Footer.Meta.NumRowGroups(); rg++ {
		rows := in.Footer.Meta.RowGroup(rg).NumRows()
		hashes, err := chunkHashes(rdr, rg, in.Column)
		if err != nil {
			return nil, fmt.Errorf("bloom: row group %d of %s: %w", rg, short(in.File), err)
		}
		n := uint32(ndv)
		if ndv == 0 {
			n = uint32(max(1, distinct(hashes)))
		}
		b := metadata.NewBloomFilterFromNDVAndFPP(n, fpp, maxBytes, memory.DefaultAllocator)
		b.InsertBulk(hashes)
		var bits bytes.Buffer
		if _, err := b.WriteTo(&bits, nil); err != nil {
			return nil, err
		}
		b.Release()
		blobs = append(blobs, puffinBlob{typ: bloomBlobType, data: bits.Bytes(), props: map[string]string{
			"row-group": strconv.Itoa(rg), "first-row": strconv.FormatInt(first, 10), "rows": strconv.FormatInt(rows, 10)}})
		first += rows
	}
	return writePuffin(headerOf(in, k.Name()), map[string]string{bloomColumnProp: descr.encode()}, blobs)
}

func distinct(h []uint64) int {
	seen := make(map[uint64]struct{}, min(len(h), 1<<16))
	for _, x := range h {
		seen[x] = struct{}{}
	}
	return len(seen)
}

// chunkHashes reads column col of row group rg and returns the bloom
// hash of every non-null value, as Parquet hashes its physical type.
func chunkHashes(rdr *file.Reader, rg, col int) (out []uint64, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("decode: %v", p)
		}
	}()
	cr, err := rdr.RowGroup(rg).Column(col)
	if err != nil {
		return nil, err
	}
	h := metadata.NewBloomFilter(32, 32, memory.DefaultAllocator).Hasher()
	const batch = 4096
	def := make([]int16, batch)
	switch r := cr.(type) {
	case *file.Int32ColumnChunkReader:
		return readHashes(h, def, r.HasNext, func(v []int32) (int, error) { _, n, err := r.ReadBatch(batch, v, def, nil); return n, err })
	case *file.Int64ColumnChunkReader:
		return readHashes(h, def, r.HasNext, func(v []int64) (int, error) { _, n, err := r.ReadBatch(batch, v, def, nil); return n, err })
	case *file.Float32ColumnChunkReader:
		return readHashes(h, def, r.HasNext, func(v []float32) (int, error) { _, n, err := r.ReadBatch(batch, v, def, nil); return n, err })
	case *file.Float64ColumnChunkReader:
		return readHashes(h, def, r.HasNext, func(v []float64) (int, error) { _, n, err := r.ReadBatch(batch, v, def, nil); return n, err })
	case *file.ByteArrayColumnChunkReader:
		return readHashes(h, def, r.HasNext, func(v []parquet.ByteArray) (int, error) { _, n, err := r.ReadBatch(batch, v, def, nil); return n, err })
	case *file.FixedLenByteArrayColumnChunkReader:
		return readHashes(h, def, r.HasNext, func(v []parquet.FixedLenByteArray) (int, error) {
			_, n, err := r.ReadBatch(batch, v, def, nil)
			return n, err
		})
	}
	return nil, fmt.Errorf("physical type %s has no bloom filter", cr.Descriptor().PhysicalType())
}

func readHashes[T parquet.ColumnTypes](h metadata.Hasher, def []int16, more func() bool, read func([]T) (int, error)) ([]uint64, error) {
	vals := make([]T, len(def))
	var out []uint64
	for more() {
		n, err := read(vals)
		if err != nil {
			return nil, err
		}
		out = append(out, metadata.GetHashes(h, vals[:n])...)
	}
	return out, nil
}
