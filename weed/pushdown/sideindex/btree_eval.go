package sideindex

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// btreeIndex keeps the payload bytes and its directory; Eval decodes the
// row groups a leaf's key ranges meet and checks each against its digest.
type btreeIndex struct {
	h       Header
	typ     iceberg.Type
	codec   keyCodec
	payload []byte
	groups  []btreeNode
	nulls   bool // some group holds NULL keys
	// decoded[i] is payload row group i once read and verified against its
	// digest; later lookups binary-search it in memory.
	decoded []atomic.Pointer[decodedGroup]
	decodeM []sync.Mutex
}

// decodedGroup is one verified payload row group: keys (ascending, NULLs
// first) and their file positions.
type decodedGroup struct {
	keys arrow.Array
	pos  []int64
	// enc[off[r]:off[r+1]] is row r's key encoding (empty for a NULL),
	// computed once when the group is verified, so a lookup compares
	// bytes instead of boxing each key it visits.
	enc []byte
	off []uint32
}

// key is the encoding of row r's (non-null) key.
func (dg *decodedGroup) key(r int) []byte { return dg.enc[dg.off[r]:dg.off[r+1]:dg.off[r+1]] }

type btreeNode struct {
	btreeGroup
	first, last []byte // decoded First/Last (nil: no non-null key)
}

func (k btreeKind) Open(ctx context.Context, payload []byte, want Header) (Index, error) {
	want.Kind = k.Name()
	idx, err := openBtree(payload, want)
	if err != nil {
		return nil, fmt.Errorf("btree side index: %w", err)
	}
	return idx, nil
}

func openBtree(payload []byte, want Header) (*btreeIndex, error) {
	if len(payload) > maxPayloadBytes {
		return nil, fmt.Errorf("payload of %d bytes is too large", len(payload))
	}
	rdr, err := openPayloadParquet(payload)
	if err != nil {
		return nil, err
	}
	kv := rdr.MetaData().KeyValueMetadata()
	get := func(k string) string {
		if v := kv.FindValue(k); v != nil {
			return *v
		}
		return ""
	}
	hs, ds := get(headerKey), get(btreeDirKey)
	h, err := checkHeader(hs, want)
	if err != nil {
		return nil, err
	}
	if digest([]byte(hs), []byte(ds)) != get(checksumKey) {
		return nil, errors.New("checksum mismatch: the payload is corrupt")
	}
	var dir btreeDir
	if err := json.Unmarshal([]byte(ds), &dir); err != nil {
		return nil, fmt.Errorf("directory not readable: %v", err)
	}
	typ, err := parseType(h.IcebergType)
	if err != nil {
		return nil, fmt.Errorf("type %s: %v", short(h.IcebergType), err)
	}
	codec, err := newKeyCodec(typ)
	if err != nil {
		return nil, err
	}
	if len(dir.Groups) != rdr.NumRowGroups() {
		return nil, fmt.Errorf("directory lists %d row groups, the payload has %d", len(dir.Groups), rdr.NumRowGroups())
	}
	idx := &btreeIndex{h: h, typ: typ, codec: codec, payload: payload,
		decoded: make([]atomic.Pointer[decodedGroup], len(dir.Groups)), decodeM: make([]sync.Mutex, len(dir.Groups))}
	var rows int64
	var prev []byte
	for i, g := range dir.Groups {
		n := btreeNode{btreeGroup: g}
		if g.Rows != rdr.MetaData().RowGroup(i).NumRows() || g.Nulls < 0 || g.Nulls > g.Rows {
			return nil, fmt.Errorf("directory entry %d does not describe payload row group %d", i, i)
		}
		if g.Nulls > 0 && (rows != 0 && dir.Groups[i-1].Nulls != dir.Groups[i-1].Rows) {
			return nil, fmt.Errorf("directory entry %d has NULL keys after non-null ones", i)
		}
		if g.Nulls < g.Rows {
			n.first, err = hex.DecodeString(g.First)
			if err == nil {
				n.last, err = hex.DecodeString(g.Last)
			}
			if err != nil || bytes.Compare(n.first, n.last) > 0 || (prev != nil && bytes.Compare(prev, n.first) > 0) {
				return nil, fmt.Errorf("directory entry %d has keys out of order", i)
			}
			if n.first == nil {
				n.first = []byte{}
			}
			prev = n.last
		}
		idx.nulls = idx.nulls || g.Nulls > 0
		rows += g.Rows
		idx.groups = append(idx.groups, n)
	}
	if rows != h.Rows {
		return nil, fmt.Errorf("payload holds %d rows, the data file %d", rows, h.Rows)
	}
	return idx, nil
}

func openPayloadParquet(payload []byte) (rdr *file.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			rdr, err = nil, fmt.Errorf("malformed Parquet payload: %v", p)
		}
	}()
	return file.NewParquetReader(bytes.NewReader(payload))
}

// Bytes counts the payload and, as an upper bound, every group decoded:
// keys and positions in memory take about the payload's size again plus 16
// bytes a row.
func (b *btreeIndex) Bytes() int64 {
	n := 2*int64(len(b.payload)) + 32*b.h.Rows + 256 // decoded keys, positions, key encodings
	for _, g := range b.groups {
		n += int64(len(g.first)+len(g.last)) + 128
	}
	return n
}

// keyRange is an inclusive range of key encodings; nil ends are open.
type keyRange struct{ lo, hi []byte }

// ranges returns key ranges holding every non-null key that might
// satisfy l (a superset: Eval rechecks each key with the predicate's own
// row semantics, so the answer is exact).
func (b *btreeIndex) ranges(l *predicate.Leaf) []keyRange {
	all := []keyRange{{}}
	if l.Negated {
		return all
	}
	// point is the range of keys equal to v under either semantics (both
	// float zeros for a zero literal).
	point := func(v value.Value) keyRange {
		if v.IsZeroFloat() {
			return keyRange{b.codec.literalKey(value.OfFloat(math.Copysign(0, -1))), b.codec.literalKey(value.OfFloat(0))}
		}
		k := b.codec.literalKey(v)
		return keyRange{k, k}
	}
	switch l.Op {
	case predicate.OpIsNull:
		return nil
	case predicate.OpIsNaN:
		return []keyRange{point(value.OfFloat(math.NaN()))}
	case predicate.OpEq, predicate.OpIn:
		var out []keyRange
		for _, v := range l.Lits {
			out = append(out, point(v))
		}
		return out
	case predicate.OpLt, predicate.OpLtEq:
		return []keyRange{{hi: point(l.Lits[0]).hi}}
	case predicate.OpGt, predicate.OpGtEq:
		return []keyRange{{lo: point(l.Lits[0]).lo}}
	case predicate.OpStartsWith:
		p := l.Lits[0].B
		if s, ok := successor(p); ok {
			return []keyRange{{lo: p, hi: s}}
		}
		return []keyRange{{lo: p}}
	}
	return all
}

// successor is the smallest byte string greater than every string with
// prefix p; ok is false when none exists (p is all 0xff).
func successor(p []byte) ([]byte, bool) {
	s := bytes.Clone(p)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] < 0xff {
			s[i]++
			return s[:i+1], true
		}
	}
	return nil, false
}

// mergeRanges sorts ranges by their low end and merges those that
// overlap, so that keys read in ascending order meet them in order.
func mergeRanges(rs []keyRange) []keyRange {
	if len(rs) < 2 {
		return rs
	}
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].lo == nil || rs[j].lo == nil {
			return rs[i].lo == nil && rs[j].lo != nil
		}
		return bytes.Compare(rs[i].lo, rs[j].lo) < 0
	})
	out := []keyRange{rs[0]}
	for _, r := range rs[1:] {
		cur := &out[len(out)-1]
		if cur.hi == nil || (r.lo != nil && bytes.Compare(r.lo, cur.hi) <= 0) || r.lo == nil {
			if cur.hi != nil && (r.hi == nil || bytes.Compare(r.hi, cur.hi) > 0) {
				cur.hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

func (r keyRange) holds(k []byte) bool {
	return (r.lo == nil || bytes.Compare(r.lo, k) <= 0) && (r.hi == nil || bytes.Compare(k, r.hi) <= 0)
}

func (b *btreeIndex) Eval(ctx context.Context, l *predicate.Leaf) (Answer, error) {
	if !leafMatchesIndex(l, b.h) {
		return unknown, nil
	}
	nullMatches := predicate.Matches(l, func(int) (value.Value, bool) { return value.Value{}, true })
	rs := mergeRanges(b.ranges(l))
	// Row groups to decode: those with NULL keys when NULL matches, and
	// those whose [first, last] meets a range (binary search for the
	// first group ending at or after the range's low end).
	need := map[int]bool{}
	for i, g := range b.groups {
		if g.Nulls == 0 {
			break
		}
		if nullMatches {
			need[i] = true
		}
	}
	for _, r := range rs {
		i := sort.Search(len(b.groups), func(i int) bool {
			g := b.groups[i]
			return g.last != nil && (r.lo == nil || bytes.Compare(g.last, r.lo) >= 0)
		})
		for ; i < len(b.groups); i++ {
			if g := b.groups[i]; g.first != nil {
				if r.hi != nil && bytes.Compare(g.first, r.hi) > 0 {
					break
				}
				need[i] = true
			}
		}
	}
	out := roaring64.New()
	if len(need) == 0 {
		return Answer{Positions: out, Exact: true}, nil
	}
	groups := make([]int, 0, len(need))
	for i := range need {
		groups = append(groups, i)
	}
	sort.Ints(groups)
	var fr *pqarrow.FileReader // opened when a group is first decoded
	for _, gi := range groups {
		if err := ctx.Err(); err != nil {
			return Answer{}, err
		}
		dg, err := b.group(ctx, &fr, gi)
		if err != nil {
			return Answer{}, fmt.Errorf("btree side index: row group %d: %w", gi, err)
		}
		if err := b.matchGroup(dg, gi, l, rs, nullMatches, out); err != nil {
			return Answer{}, fmt.Errorf("btree side index: row group %d: %w", gi, err)
		}
	}
	return Answer{Positions: out, Exact: true}, nil
}

// group returns payload row group gi decoded and verified, decoding it on
// first use (opening *fr, the payload's reader, when still nil).
func (b *btreeIndex) group(ctx context.Context, fr **pqarrow.FileReader, gi int) (*decodedGroup, error) {
	if dg := b.decoded[gi].Load(); dg != nil {
		return dg, nil
	}
	b.decodeM[gi].Lock()
	defer b.decodeM[gi].Unlock()
	if dg := b.decoded[gi].Load(); dg != nil {
		return dg, nil
	}
	if *fr == nil {
		rdr, err := openPayloadParquet(b.payload)
		if err != nil {
			return nil, err
		}
		if *fr, err = pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator); err != nil {
			return nil, err
		}
	}
	dg, err := b.decodeGroup(ctx, *fr, gi)
	if err != nil {
		return nil, err
	}
	b.decoded[gi].Store(dg)
	return dg, nil
}

// decodeGroup reads payload row group gi and checks it against its
// digest and the directory.
func (b *btreeIndex) decodeGroup(ctx context.Context, fr *pqarrow.FileReader, gi int) (dg *decodedGroup, err error) {
	defer func() {
		if p := recover(); p != nil {
			dg, err = nil, fmt.Errorf("malformed payload: %v", p)
		}
	}()
	tbl, err := fr.RowGroup(gi).ReadTable(ctx, []int{0, 1})
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	kc, pc := tbl.Column(0).Data().Chunks(), tbl.Column(1).Data().Chunks()
	if len(kc) != len(pc) {
		return nil, errors.New("key and position columns are chunked differently")
	}
	keys, err := array.Concatenate(kc, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	dg = &decodedGroup{keys: keys, pos: make([]int64, 0, keys.Len())}
	for c := range pc {
		pos, ok := pc[c].(*array.Int64)
		if !ok || pos.Len() != kc[c].Len() {
			return nil, errors.New("position column is not int64")
		}
		dg.pos = append(dg.pos, pos.Int64Values()...)
	}
	var gd groupDigest
	nulls := int64(0)
	dg.off = make([]uint32, 1, keys.Len()+1)
	dg.enc = make([]byte, 0, 9*keys.Len())
	prev := -1 // the previous non-null row
	for r := 0; r < keys.Len(); r++ {
		if p := dg.pos[r]; p < 0 || p >= b.h.Rows {
			return nil, fmt.Errorf("row %d holds position %d, the file has %d rows", r, p, b.h.Rows)
		}
		if keys.IsNull(r) {
			if int64(r) != nulls {
				return nil, errors.New("NULL keys after non-null ones")
			}
			nulls++
			gd.add(nil, dg.pos[r])
			dg.off = append(dg.off, uint32(len(dg.enc)))
			continue
		}
		at := len(dg.enc)
		if dg.enc, err = b.keyAt(dg.enc, dg, r); err != nil {
			return nil, err
		}
		if len(dg.enc) > math.MaxUint32 {
			return nil, errors.New("key encodings of a payload row group exceed 4 GiB")
		}
		gd.add(dg.enc[at:], dg.pos[r])
		dg.off = append(dg.off, uint32(len(dg.enc)))
		// lookups binary-search the keys: they must ascend
		if prev >= 0 && bytes.Compare(dg.key(prev), dg.key(r)) > 0 {
			return nil, fmt.Errorf("row %d: keys out of order", r)
		}
		prev = r
	}
	if gd.sum() != b.groups[gi].SHA256 {
		return nil, errors.New("content does not match its checksum: the payload is corrupt")
	}
	if gd.rows != b.groups[gi].Rows || nulls != b.groups[gi].Nulls {
		return nil, errors.New("row count does not match the directory")
	}
	// the directory's key range chose this group: it must be the group's
	if g := b.groups[gi]; prev >= 0 && (!bytes.Equal(dg.key(int(nulls)), g.first) || !bytes.Equal(dg.key(prev), g.last)) {
		return nil, errors.New("keys do not match the directory's first and last key")
	}
	return dg, nil
}

// keyAt appends the encoding of the (non-null) key of row r.
func (b *btreeIndex) keyAt(dst []byte, dg *decodedGroup, r int) ([]byte, error) {
	v, err := value.FromArrow(dg.keys, r, b.typ)
	if err != nil {
		return nil, err
	}
	key, ok := b.codec.appendKey(dst, v)
	if !ok {
		return nil, fmt.Errorf("key %s outside type %s", short(v.String()), b.typ)
	}
	if key == nil {
		key = []byte{} // the empty string is a key, not NULL
	}
	return key, nil
}

// matchGroup adds the positions of group gi whose key satisfies l: the
// NULL rows when NULL matches, and for each key range the rows a binary
// search finds in it, each distinct key rechecked with the predicate's row
// semantics (the ranges are a superset).
func (b *btreeIndex) matchGroup(dg *decodedGroup, gi int, l *predicate.Leaf, rs []keyRange, nullMatches bool, out *roaring64.Bitmap) error {
	nulls := int(b.groups[gi].Nulls)
	n := dg.keys.Len()
	if nullMatches {
		for r := 0; r < nulls; r++ {
			out.Add(uint64(dg.pos[r]))
		}
	}
	var lastKey []byte
	first, last := b.groups[gi].first, b.groups[gi].last
	for _, rg := range rs {
		if first == nil || rg.hi != nil && bytes.Compare(rg.hi, first) < 0 || rg.lo != nil && bytes.Compare(rg.lo, last) > 0 {
			continue // the range misses every key of the group
		}
		start := nulls
		if rg.lo != nil {
			start = nulls + sort.Search(n-nulls, func(i int) bool {
				return bytes.Compare(dg.key(nulls+i), rg.lo) >= 0
			})
		}
		lastMatch, seen := false, false
		for r := start; r < n; r++ {
			k := dg.key(r)
			if rg.hi != nil && bytes.Compare(k, rg.hi) > 0 {
				break
			}
			if !seen || !bytes.Equal(k, lastKey) {
				seen = true
				lastKey = k
				v, err := value.FromArrow(dg.keys, r, b.typ)
				if err != nil {
					return err
				}
				lastMatch = predicate.Matches(l, func(int) (value.Value, bool) { return v, false })
			}
			if lastMatch {
				out.Add(uint64(dg.pos[r]))
			}
		}
	}
	return nil
}
