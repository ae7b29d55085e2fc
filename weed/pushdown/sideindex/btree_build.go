package sideindex

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// btreeKind writes a Parquet file of (key, pos) rows sorted by key: the
// rows whose key is NULL first, then every other key in the total order
// of keyCodec, ties by position. Each payload row group is one node of a
// one-level tree whose directory (first and last key, rows, nulls, a
// SHA-256 of its content) sits in the footer's key-value metadata; a
// lookup binary-searches the directory and decodes only the row groups
// whose key range meets the literal ranges.
//
// Params: "rows_per_group" (payload rows per row group, default 16384).
type btreeKind struct{}

func init() { register(btreeKind{}) }

const btreeDirKey = "lakeweed.sideindex.btree.directory"

func (btreeKind) Name() string { return "btree" }

func (btreeKind) Supports(t iceberg.Type) bool {
	_, ok := value.KindOf(t)
	return ok
}

// btreeDir is the payload's directory.
type btreeDir struct {
	Groups []btreeGroup `json:"groups"`
}

type btreeGroup struct {
	Rows   int64  `json:"rows"`
	Nulls  int64  `json:"nulls"`           // leading rows with a NULL key
	First  string `json:"first,omitempty"` // hex key encodings of the first and last non-null key
	Last   string `json:"last,omitempty"`
	SHA256 string `json:"sha256"` // groupDigest of the group's rows
}

// btreeEntry is one non-null key (in the build's arena) and its position.
type btreeEntry struct {
	off, n uint32
	pos    int64
}

func (k btreeKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if err := checkInput(in, k); err != nil {
		return nil, err
	}
	if err := checkParams(in.Params, "rows_per_group"); err != nil {
		return nil, err
	}
	per, err := intParam(in.Params, "rows_per_group", 16384, 1, 1<<24)
	if err != nil {
		return nil, err
	}
	codec, err := newKeyCodec(in.Type)
	if err != nil {
		return nil, err
	}
	rdr, err := openData(in, &sourceReader{ctx: ctx, src: in.Source})
	if err != nil {
		return nil, err
	}
	var (
		arena   []byte
		entries []btreeEntry
		nulls   []int64
		ordered []value.Value
	)
	err = columnValues(ctx, in, rdr, func(pos int64, v value.Value, null bool) error {
		if null {
			nulls = append(nulls, pos)
			return nil
		}
		off := len(arena)
		var ok bool
		arena, ok = codec.appendKey(arena, v)
		if !ok {
			return fmt.Errorf("btree: row %d of %s holds %s, outside type %s", pos, short(in.File), short(v.String()), in.Type)
		}
		if len(arena) > 1<<32-1 {
			return fmt.Errorf("btree: keys of %s exceed 4 GiB", short(in.File))
		}
		entries = append(entries, btreeEntry{off: uint32(off), n: uint32(len(arena) - off), pos: pos})
		ordered = append(ordered, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("btree: %w", err)
	}
	key := func(e btreeEntry) []byte { return arena[e.off : e.off+e.n] }
	// Sort a permutation so each entry keeps its decoded value.
	perm := make([]int32, len(entries))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		if c := bytes.Compare(key(entries[a]), key(entries[b])); c != 0 {
			return c
		}
		return cmp.Compare(entries[a].pos, entries[b].pos)
	})
	keyType := btreeArrowType(in.Type)
	sch := arrow.NewSchema([]arrow.Field{{Name: "key", Type: keyType, Nullable: true}, {Name: "pos", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithPageIndexEnabled(true),
		parquet.WithMaxRowGroupLength(per), parquet.WithCreatedBy("lakeweed sideindex"))
	fw, err := pqarrow.NewFileWriter(sch, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return nil, err
	}
	total := int64(len(nulls) + len(entries))
	var dir btreeDir
	kb := array.NewBuilder(memory.DefaultAllocator, keyType)
	pb := array.NewInt64Builder(memory.DefaultAllocator)
	defer kb.Release()
	defer pb.Release()
	for start := int64(0); start < total; start += per {
		end := min(start+per, total)
		g := btreeGroup{Rows: end - start}
		var gd groupDigest
		for r := start; r < end; r++ {
			if r < int64(len(nulls)) {
				g.Nulls++
				kb.AppendNull()
				pb.Append(nulls[r])
				gd.add(nil, nulls[r])
				continue
			}
			i := perm[r-int64(len(nulls))]
			e := entries[i]
			if g.First == "" {
				g.First = hex.EncodeToString(key(e))
			}
			if r == end-1 {
				g.Last = hex.EncodeToString(key(e))
			}
			if err := appendArrowKey(kb, ordered[i]); err != nil {
				return nil, err
			}
			pb.Append(e.pos)
			gd.add(key(e), e.pos)
		}
		g.SHA256 = gd.sum()
		dir.Groups = append(dir.Groups, g)
		ka, pa := kb.NewArray(), pb.NewArray()
		rec := array.NewRecordBatch(sch, []arrow.Array{ka, pa}, end-start)
		err := fw.Write(rec)
		rec.Release()
		ka.Release()
		pa.Release()
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	dj, _ := json.Marshal(dir)
	h := headerOf(in, k.Name()).encode()
	for _, kv := range [][2]string{{headerKey, h}, {btreeDirKey, string(dj)}, {checksumKey, digest([]byte(h), dj)}} {
		if err := fw.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// groupDigest hashes a payload row group's rows: per row a null flag, the
// key encoding and the position.
type groupDigest struct{ parts [][]byte }

func (g *groupDigest) add(key []byte, pos int64) {
	b := make([]byte, 0, len(key)+9)
	if key != nil {
		b = append(b, 1)
		b = append(b, key...)
	} else {
		b = append(b, 0)
	}
	var p [8]byte
	putUint64(p[:], uint64(pos))
	g.parts = append(g.parts, append(b, p[:]...))
}

func (g *groupDigest) sum() string { return digest(g.parts...) }

// btreeArrowType is the payload's key type for table type t: readable
// by any Parquet tool, in the comparison domain of value.
func btreeArrowType(t iceberg.Type) arrow.DataType {
	switch tt := t.(type) {
	case iceberg.BooleanType:
		return arrow.FixedWidthTypes.Boolean
	case iceberg.Float32Type, iceberg.Float64Type:
		return arrow.PrimitiveTypes.Float64
	case iceberg.StringType:
		return arrow.BinaryTypes.String
	case iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return arrow.BinaryTypes.Binary
	case iceberg.DecimalType:
		return &arrow.Decimal128Type{Precision: int32(tt.Precision()), Scale: int32(tt.Scale())}
	}
	return arrow.PrimitiveTypes.Int64 // int, long, date, time, timestamps (µs or ns as the type counts)
}

func appendArrowKey(b array.Builder, v value.Value) error {
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.I != 0)
	case *array.Int64Builder:
		bb.Append(v.I)
	case *array.Float64Builder:
		bb.Append(v.F)
	case *array.StringBuilder:
		bb.Append(string(v.B))
	case *array.BinaryBuilder:
		bb.Append(v.B)
	case *array.Decimal128Builder:
		bb.Append(decimal128.FromBigInt(v.D))
	default:
		return fmt.Errorf("btree: no key builder for %T", b)
	}
	return nil
}
