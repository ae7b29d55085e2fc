package sideindex

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// A postings payload is what the bitmap, ngram and label_list kinds
// write: a Parquet file of (class, key, positions) rows, one per key, the
// positions a portable roaring64 bitmap (the format of CRoaring's and
// roaring-go's 64-bit serialization) of file-absolute row positions:
//
//	class  int32     0 value · 1 NULL row · 2 NaN · 3 empty list · 4 NULL element
//	key    the key's type, NULL unless class 0 (NaN: the NaN value)
//	pos    binary    roaring64 bitmap
//
// Rows are ordered by class, then key encoding (keyCodec), so a key is
// found by binary search. The footer's key-value metadata holds the
// Header and a SHA-256 over the header and every row.
const (
	classValue    = 0
	classNull     = 1
	classNaN      = 2
	classEmpty    = 3
	classNullElem = 4
	classCount    = 5
)

// posting is one row of a postings payload.
type posting struct {
	class int32
	key   value.Value // class 0 and 2
	enc   []byte      // keyCodec encoding of key (class 0 and 2)
	bm    *roaring64.Bitmap
}

// postingsBuilder gathers positions per key, in position order.
type postingsBuilder struct {
	codec   keyCodec
	byKey   map[string]int
	keys    []posting
	pos     [][]uint64
	classes [classCount][]uint64
	limit   int // distinct keys kept with positions (0: no limit)
	over    int // distinct keys beyond limit (counted, positions dropped)
	seen    map[string]struct{}
}

func newPostingsBuilder(codec keyCodec, limit int) *postingsBuilder {
	return &postingsBuilder{codec: codec, byKey: map[string]int{}, limit: limit}
}

// distinct is the number of distinct keys added.
func (b *postingsBuilder) distinct() int { return len(b.keys) + b.over }

// addClass records a position in a key-less class.
func (b *postingsBuilder) addClass(class int32, pos int64) {
	b.classes[class] = append(b.classes[class], uint64(pos))
}

// add records a position of key v (a NaN goes to the NaN class); ok is
// false when v is outside the codec's type.
func (b *postingsBuilder) add(v value.Value, pos int64, scratch []byte) ([]byte, bool) {
	if v.IsNaN() {
		b.addClass(classNaN, pos)
		return scratch, true
	}
	enc, ok := b.codec.appendKey(scratch[:0], v)
	if !ok {
		return enc, false
	}
	if i, ok := b.byKey[string(enc)]; ok {
		if p := b.pos[i]; len(p) == 0 || p[len(p)-1] != uint64(pos) {
			b.pos[i] = append(p, uint64(pos))
		}
		return enc, true
	}
	if b.limit > 0 && len(b.keys) >= b.limit {
		if b.seen == nil {
			b.seen = map[string]struct{}{}
		}
		if _, ok := b.seen[string(enc)]; !ok {
			b.seen[string(enc)] = struct{}{}
			b.over++
		}
		return enc, true
	}
	if v.K == value.Bytes {
		v.B = bytes.Clone(v.B)
	}
	b.byKey[string(enc)] = len(b.keys)
	b.keys = append(b.keys, posting{class: classValue, key: v, enc: bytes.Clone(enc)})
	b.pos = append(b.pos, []uint64{uint64(pos)})
	return enc, true
}

// postings returns the payload rows in payload order.
func (b *postingsBuilder) postings() []posting {
	out := make([]posting, 0, len(b.keys)+classCount)
	for i := range b.keys {
		p := b.keys[i]
		p.bm = roaring64.New()
		p.bm.AddMany(b.pos[i])
		p.bm.RunOptimize()
		out = append(out, p)
	}
	for c := int32(1); c < classCount; c++ {
		if ps := b.classes[c]; len(ps) > 0 {
			bm := roaring64.New()
			bm.AddMany(ps)
			bm.RunOptimize()
			p := posting{class: c, bm: bm}
			if c == classNaN {
				p.key = value.OfFloat(math.NaN())
				p.enc, _ = b.codec.appendKey(nil, p.key)
			}
			out = append(out, p)
		}
	}
	sortPostings(out)
	return out
}

// sortPostings puts rows in payload order: by class, then key encoding.
func sortPostings(rows []posting) {
	slices.SortFunc(rows, func(x, y posting) int {
		if c := cmp.Compare(x.class, y.class); c != 0 {
			return c
		}
		return bytes.Compare(x.enc, y.enc)
	})
}

// rowsDigest hashes the header and every row: class, key encoding,
// bitmap bytes, each length-framed.
func rowsDigest(header string, rows []posting, bms [][]byte) string {
	h := sha256.New()
	var n [8]byte
	frame := func(p []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	frame([]byte(header))
	for i, r := range rows {
		frame([]byte{byte(r.class)})
		frame(r.enc)
		frame(bms[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writePostings writes rows (in payload order) as a payload under header
// h; keyType is the Iceberg type of the keys.
func writePostings(ctx context.Context, h Header, keyType iceberg.Type, rows []posting) ([]byte, error) {
	kt := btreeArrowType(keyType)
	sch := arrow.NewSchema([]arrow.Field{{Name: "class", Type: arrow.PrimitiveTypes.Int32},
		{Name: "key", Type: kt, Nullable: true}, {Name: "pos", Type: arrow.BinaryTypes.Binary}}, nil)
	cb := array.NewInt32Builder(memory.DefaultAllocator)
	kb := array.NewBuilder(memory.DefaultAllocator, kt)
	pb := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
	defer cb.Release()
	defer kb.Release()
	defer pb.Release()
	bms := make([][]byte, len(rows))
	for i, r := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := r.bm.ToBytes()
		if err != nil {
			return nil, err
		}
		bms[i] = b
		cb.Append(r.class)
		if r.class == classValue || r.class == classNaN {
			if err := appendArrowKey(kb, r.key); err != nil {
				return nil, err
			}
		} else {
			kb.AppendNull()
		}
		pb.Append(b)
	}
	hs := h.encode()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithPageIndexEnabled(true),
		parquet.WithMaxRowGroupLength(1<<20), parquet.WithCreatedBy("lakeweed sideindex"), parquet.WithDictionaryDefault(false))
	fw, err := pqarrow.NewFileWriter(sch, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return nil, err
	}
	ca, ka, pa := cb.NewArray(), kb.NewArray(), pb.NewArray()
	rec := array.NewRecordBatch(sch, []arrow.Array{ca, ka, pa}, int64(len(rows)))
	err = fw.Write(rec)
	rec.Release()
	ca.Release()
	ka.Release()
	pa.Release()
	if err != nil {
		return nil, err
	}
	return closePayload(fw, &buf, [2]string{headerKey, hs}, [2]string{checksumKey, rowsDigest(hs, rows, bms)})
}

// postingsIndex is an opened postings payload: value keys sorted by
// encoding, and the key-less classes.
type postingsIndex struct {
	h       Header
	keyType iceberg.Type
	values  []posting // class 0, ascending encodings
	classes [classCount]*roaring64.Bitmap
	bytes   int64
}

// readPostings opens kind's payload, checks its header against want, its
// checksum, its order and that every position lies inside the file.
// keyType gives the key type of a header's Iceberg type (as
// Type.String() spells it).
func readPostings(payload []byte, want Header, keyType func(string) (iceberg.Type, error)) (idx *postingsIndex, err error) {
	fail := func(err error) (*postingsIndex, error) { return nil, fmt.Errorf("%s side index: %w", want.Kind, err) }
	defer func() {
		if p := recover(); p != nil {
			idx, err = fail(fmt.Errorf("malformed payload: %v", p))
		}
	}()
	if len(payload) > maxPayloadBytes {
		return fail(fmt.Errorf("payload of %d bytes is too large", len(payload)))
	}
	rdr, err := openPayloadParquet(payload)
	if err != nil {
		return fail(err)
	}
	kv := rdr.MetaData().KeyValueMetadata()
	get := func(k string) string {
		if v := kv.FindValue(k); v != nil {
			return *v
		}
		return ""
	}
	hs := get(headerKey)
	h, err := checkHeader(hs, want)
	if err != nil {
		return fail(err)
	}
	kt, err := keyType(h.IcebergType)
	if err != nil {
		return fail(fmt.Errorf("type %s: %v", short(h.IcebergType), err))
	}
	codec, err := newKeyCodec(kt)
	if err != nil {
		return fail(err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return fail(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return fail(err)
	}
	defer tbl.Release()
	if tbl.NumCols() != 3 {
		return fail(fmt.Errorf("payload has %d columns, want 3", tbl.NumCols()))
	}
	idx = &postingsIndex{h: h, keyType: kt, bytes: int64(len(payload)) + 256}
	var rows []posting
	var bms [][]byte
	cc, kc, pc := tbl.Column(0).Data().Chunks(), tbl.Column(1).Data().Chunks(), tbl.Column(2).Data().Chunks()
	if len(cc) != len(kc) || len(cc) != len(pc) {
		return fail(errors.New("columns are chunked differently"))
	}
	for c := range cc {
		cls, ok1 := cc[c].(*array.Int32)
		pos, ok2 := pc[c].(*array.Binary)
		if !ok1 || !ok2 || cls.Len() != pos.Len() || kc[c].Len() != pos.Len() {
			return fail(errors.New("class or position column has the wrong type"))
		}
		for r := 0; r < pos.Len(); r++ {
			p := posting{class: cls.Value(r)}
			if p.class < 0 || p.class >= classCount {
				return fail(fmt.Errorf("row %d has class %d", len(rows), p.class))
			}
			if (p.class == classValue || p.class == classNaN) != !kc[c].IsNull(r) {
				return fail(fmt.Errorf("row %d of class %d has the wrong key nullness", len(rows), p.class))
			}
			if !kc[c].IsNull(r) {
				v, err := value.FromArrow(kc[c], r, kt)
				if err != nil {
					return fail(err)
				}
				if p.enc, ok1 = codec.appendKey(nil, v); !ok1 {
					return fail(fmt.Errorf("key %s outside type %s", short(v.String()), kt))
				}
				if p.enc == nil {
					p.enc = []byte{}
				}
				p.key = v
			}
			b := pos.Value(r)
			p.bm = roaring64.New()
			if err := p.bm.UnmarshalBinary(b); err != nil {
				return fail(fmt.Errorf("row %d: positions: %v", len(rows), err))
			}
			if !p.bm.IsEmpty() && p.bm.Maximum() >= uint64(h.Rows) {
				return fail(fmt.Errorf("row %d holds position %d, the file has %d rows", len(rows), p.bm.Maximum(), h.Rows))
			}
			if n := len(rows); n > 0 {
				prev := rows[n-1]
				if prev.class > p.class || (prev.class == p.class && (p.class != classValue || bytes.Compare(prev.enc, p.enc) >= 0)) {
					return fail(fmt.Errorf("row %d is out of order", n))
				}
			}
			rows = append(rows, p)
			bms = append(bms, bytes.Clone(b))
			idx.bytes += int64(p.bm.GetSizeInBytes()) + int64(len(p.enc)) + 64
		}
	}
	if rowsDigest(hs, rows, bms) != get(checksumKey) {
		return fail(errors.New("checksum mismatch: the payload is corrupt"))
	}
	for _, p := range rows {
		if p.class == classValue {
			idx.values = append(idx.values, p)
		} else {
			idx.classes[p.class] = p.bm
		}
	}
	return idx, nil
}

// withKind is want naming kind k (Open pins the kind it is).
func withKind(want Header, k Kind) Header {
	want.Kind = k.Name()
	return want
}

// class returns the positions of a key-less class (never nil).
func (p *postingsIndex) class(c int32) *roaring64.Bitmap {
	if bm := p.classes[c]; bm != nil {
		return bm
	}
	return roaring64.New()
}

// lookup returns the positions of key enc, or nil.
func (p *postingsIndex) lookup(enc []byte) *roaring64.Bitmap {
	i, ok := slices.BinarySearchFunc(p.values, enc, func(x posting, k []byte) int { return bytes.Compare(x.enc, k) })
	if !ok {
		return nil
	}
	return p.values[i].bm
}

func (p *postingsIndex) Bytes() int64 { return p.bytes }
