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

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
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
}

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
	idx := &btreeIndex{h: h, typ: typ, codec: codec, payload: payload}
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

func (b *btreeIndex) Bytes() int64 {
	n := int64(len(b.payload)) + 256
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
	rdr, err := openPayloadParquet(b.payload)
	if err != nil {
		return Answer{}, fmt.Errorf("btree side index: %w", err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return Answer{}, fmt.Errorf("btree side index: %w", err)
	}
	for _, gi := range groups {
		if err := ctx.Err(); err != nil {
			return Answer{}, err
		}
		if err := b.evalGroup(ctx, fr, gi, l, rs, nullMatches, out); err != nil {
			return Answer{}, fmt.Errorf("btree side index: row group %d: %w", gi, err)
		}
	}
	return Answer{Positions: out, Exact: true}, nil
}

// evalGroup decodes payload row group gi, checks its digest and adds the
// positions whose key satisfies l.
func (b *btreeIndex) evalGroup(ctx context.Context, fr *pqarrow.FileReader, gi int, l *predicate.Leaf, rs []keyRange, nullMatches bool, out *roaring64.Bitmap) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed payload: %v", p)
		}
	}()
	tbl, err := fr.RowGroup(gi).ReadTable(ctx, []int{0, 1})
	if err != nil {
		return err
	}
	defer tbl.Release()
	var gd groupDigest
	var hits []uint64
	var lastKey []byte
	lastMatch, seen := false, false
	kc, pc := tbl.Column(0).Data().Chunks(), tbl.Column(1).Data().Chunks()
	if len(kc) != len(pc) {
		return errors.New("key and position columns are chunked differently")
	}
	var key []byte
	next := 0 // first range of rs that may hold the current key
	for c := range kc {
		pos, ok := pc[c].(*array.Int64)
		if !ok || pos.Len() != kc[c].Len() {
			return errors.New("position column is not int64")
		}
		for r := 0; r < pos.Len(); r++ {
			p := pos.Value(r)
			if kc[c].IsNull(r) {
				gd.add(nil, p)
				if nullMatches {
					hits = append(hits, uint64(p))
				}
				continue
			}
			v, err := oracle.ArrowValue(kc[c], r, b.typ)
			if err != nil {
				return err
			}
			key, ok = b.codec.appendKey(key[:0], v)
			if key == nil {
				key = []byte{} // the empty string is a key, not NULL
			}
			if !ok {
				return fmt.Errorf("key %s outside type %s", short(v.String()), b.typ)
			}
			gd.add(key, p)
			if !seen || !bytes.Equal(key, lastKey) {
				seen = true
				lastKey = append(lastKey[:0], key...)
				lastMatch = false
				// Keys ascend and rs are disjoint and sorted: skip the
				// ranges that end below this key.
				for next < len(rs) && rs[next].hi != nil && bytes.Compare(rs[next].hi, key) < 0 {
					next++
				}
				if next < len(rs) && rs[next].holds(key) {
					lastMatch = predicate.Matches(l, func(int) (value.Value, bool) { return v, false })
				}
			}
			if lastMatch {
				hits = append(hits, uint64(p))
			}
		}
	}
	if gd.sum() != b.groups[gi].SHA256 {
		return errors.New("content does not match its checksum: the payload is corrupt")
	}
	if gd.rows != b.groups[gi].Rows {
		return errors.New("row count does not match the directory")
	}
	out.AddMany(hits)
	return nil
}
