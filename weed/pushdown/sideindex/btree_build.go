package sideindex

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
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
// Params: "rows_per_group" (payload rows per row group, default 4096: a lookup decodes one group).
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

func (btreeKind) CheckParams(p map[string]string) error {
	_, err := btreeRowsPerGroup(p)
	return err
}

func btreeRowsPerGroup(p map[string]string) (int64, error) {
	return soleIntParam(p, "rows_per_group", 4096, 1, 1<<24)
}

func (k btreeKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if err := checkInput(in, k); err != nil {
		return nil, err
	}
	per, err := btreeRowsPerGroup(in.Params)
	if err != nil {
		return nil, err
	}
	codec, rdr, err := openKeyed(ctx, in)
	if err != nil {
		return nil, err
	}
	var rows btreeRows
	if codec.kind == value.Int {
		rows, err = collectIntKeys(ctx, in, rdr)
	} else {
		rows, err = collectKeys(ctx, in, rdr, codec)
	}
	if err != nil {
		return nil, fmt.Errorf("btree: %w", err)
	}
	return k.write(ctx, headerOf(in, k.Name()), in.Type, per, rows)
}

// btreeRows are a column's keys in payload order: nulls (their positions)
// first, then n non-null keys, sorted, each with its encoding, position
// and how its payload value is appended.
type btreeRows struct {
	nulls     []int64
	n         int
	key       func(i int, dst []byte) []byte
	pos       func(i int) int64
	appendKey func(b array.Builder, i int) error
}

// collectKeys reads any orderable column as Values, encoded into one
// arena, and sorts a permutation of them by encoding, ties by position.
func collectKeys(ctx context.Context, in Input, rdr *file.Reader, codec keyCodec) (btreeRows, error) {
	var (
		arena   []byte
		entries []btreeEntry
		nulls   []int64
		ordered []value.Value // kept only where the key encoding does not give the payload value back
	)
	keepValues := codec.kind != value.Bytes && codec.kind != value.Bool
	err := columnValues(ctx, in, rdr, func(pos int64, v value.Value, null bool) error {
		if null {
			nulls = append(nulls, pos)
			return nil
		}
		off := len(arena)
		var ok bool
		arena, ok = codec.appendKey(arena, v)
		if !ok {
			return fmt.Errorf("row %d of %s holds %s, outside type %s", pos, short(in.File), short(v.String()), in.Type)
		}
		if len(arena) > 1<<32-1 {
			return fmt.Errorf("keys of %s exceed 4 GiB", short(in.File))
		}
		entries = append(entries, btreeEntry{off: uint32(off), n: uint32(len(arena) - off), pos: pos})
		if keepValues {
			ordered = append(ordered, v)
		}
		return nil
	})
	if err != nil {
		return btreeRows{}, err
	}
	key := func(e btreeEntry) []byte { return arena[e.off : e.off+e.n] }
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
	return btreeRows{
		nulls: nulls,
		n:     len(entries),
		key:   func(i int, _ []byte) []byte { return key(entries[perm[i]]) },
		pos:   func(i int) int64 { return entries[perm[i]].pos },
		appendKey: func(b array.Builder, i int) error {
			if keepValues {
				return appendArrowKey(b, ordered[perm[i]])
			}
			return appendEncodedKey(b, key(entries[perm[i]]))
		},
	}, nil
}

// write writes the sorted rows (keys of type typ) as a payload under
// header h: row groups of per rows, each one directory entry.
func (k btreeKind) write(ctx context.Context, h Header, typ iceberg.Type, per int64, rows btreeRows) ([]byte, error) {
	keyType := btreeArrowType(typ)
	sch := arrow.NewSchema([]arrow.Field{{Name: "key", Type: keyType, Nullable: true}, {Name: "pos", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(append(btreeEncodings(keyType), parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithPageIndexEnabled(true), parquet.WithMaxRowGroupLength(per), parquet.WithCreatedBy("lakeweed sideindex"))...)
	fw, err := pqarrow.NewFileWriter(sch, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return nil, err
	}
	nulls := rows.nulls
	total := int64(len(nulls) + rows.n)
	var dir btreeDir
	kb := array.NewBuilder(memory.DefaultAllocator, keyType)
	pb := array.NewInt64Builder(memory.DefaultAllocator)
	defer kb.Release()
	defer pb.Release()
	var scratch []byte
	for start := int64(0); start < total; start += per {
		end := min(start+per, total)
		g := btreeGroup{Rows: end - start}
		var gd groupDigest
		keyed := false // a non-null key was seen (the first may be empty: "")
		for r := start; r < end; r++ {
			if r < int64(len(nulls)) {
				g.Nulls++
				kb.AppendNull()
				pb.Append(nulls[r])
				gd.add(nil, nulls[r])
				continue
			}
			i := int(r - int64(len(nulls)))
			scratch = rows.key(i, scratch[:0])
			pos := rows.pos(i)
			if !keyed {
				g.First, keyed = hex.EncodeToString(scratch), true
			}
			if r == end-1 {
				g.Last = hex.EncodeToString(scratch)
			}
			if err := rows.appendKey(kb, i); err != nil {
				return nil, err
			}
			pb.Append(pos)
			gd.add(scratch, pos)
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
	hs := h.encode()
	return closePayload(fw, &buf, [2]string{headerKey, hs}, [2]string{btreeDirKey, string(dj)}, [2]string{checksumKey, digest([]byte(hs), dj)})
}

// btreeEncodings are the payload's column encodings. Keys are sorted and
// mostly distinct and positions are distinct, so a dictionary only costs
// CPU (its hash table was a fifth of a build) and is off; sorted keys are
// delta-encoded where Parquet has a delta encoding for their type.
func btreeEncodings(keyType arrow.DataType) []parquet.WriterProperty {
	props := []parquet.WriterProperty{parquet.WithDictionaryDefault(false)}
	switch keyType.ID() {
	case arrow.INT64:
		props = append(props, parquet.WithEncodingFor("key", parquet.Encodings.DeltaBinaryPacked))
	case arrow.STRING, arrow.BINARY:
		props = append(props, parquet.WithEncodingFor("key", parquet.Encodings.DeltaByteArray))
	}
	return props
}

// closePayload appends the key-value metadata kvs to a payload's footer
// and returns the written payload.
func closePayload(fw *pqarrow.FileWriter, buf *bytes.Buffer, kvs ...[2]string) ([]byte, error) {
	for _, kv := range kvs {
		if err := fw.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if err := fw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// openKeyed returns the key codec of in's type and the data file opened.
func openKeyed(ctx context.Context, in Input) (keyCodec, *file.Reader, error) {
	codec, err := newKeyCodec(in.Type)
	if err != nil {
		return keyCodec{}, nil, err
	}
	rdr, err := openData(in, &sourceReader{ctx: ctx, src: in.Source})
	return codec, rdr, err
}

// groupDigest hashes a payload row group's rows: per row a null flag, the
// key encoding and the position — each row one part of digest's framing
// (its length, then its bytes), streamed through a buffer so the hash
// sees a few large writes rather than one per row.
type groupDigest struct {
	h    hash.Hash
	buf  []byte
	rows int64 // rows added
}

func (g *groupDigest) add(key []byte, pos int64) {
	if g.h == nil {
		g.h = sha256.New()
	}
	b := binary.BigEndian.AppendUint64(g.buf, uint64(len(key)+9))
	if key != nil {
		b = append(b, 1)
		b = append(b, key...)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(pos))
	if len(b) >= 4<<10 {
		g.h.Write(b)
		b = b[:0]
	}
	g.buf = b
	g.rows++
}

func (g *groupDigest) sum() string {
	if g.h == nil {
		g.h = sha256.New()
	}
	g.h.Write(g.buf)
	g.buf = g.buf[:0]
	return hex.EncodeToString(g.h.Sum(nil))
}

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

// appendEncodedKey appends a key from its encoding, for the kinds whose
// encoding is the value itself (bytes, bool).
func appendEncodedKey(b array.Builder, key []byte) error {
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(len(key) == 1 && key[0] != 0)
	case *array.StringBuilder:
		bb.BinaryBuilder.Append(key)
	case *array.BinaryBuilder:
		bb.Append(key)
	default:
		return fmt.Errorf("btree: no encoded key builder for %T", b)
	}
	return nil
}
