package sideindex

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// bloomIndex answers = and IN with the row groups whose filter may hold
// a literal, exactly as the native bloom of that row group would.
type bloomIndex struct {
	h      Header
	col    *schema.Column
	groups []bloomGroup
	bytes  int64
}

type bloomGroup struct {
	first, rows int64
	filter      *SplitBlockFilter
}

func (k bloomKind) Open(ctx context.Context, payload []byte, want Header) (Index, error) {
	want.Kind = k.Name()
	h, props, blobs, err := readPuffin(payload, want)
	if err != nil {
		return nil, err
	}
	col, err := parseDescr(props[bloomColumnProp])
	if err != nil {
		return nil, fmt.Errorf("bloom side index: %w", err)
	}
	idx := &bloomIndex{h: h, col: col, bytes: int64(len(payload))}
	next := int64(0)
	for i, b := range blobs {
		if b.typ != bloomBlobType {
			return nil, fmt.Errorf("bloom side index: blob %d has type %s", i, short(b.typ))
		}
		rg, err1 := blobInt(b, "row-group")
		first, err2 := blobInt(b, "first-row")
		rows, err3 := blobInt(b, "rows")
		if err := firstErr(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("bloom side index: %w", err)
		}
		if rg != int64(i) || first != next || rows < 0 || rows > h.Rows-next {
			return nil, fmt.Errorf("bloom side index: blob %d describes row group %d rows [%d, +%d), expected row group %d from row %d", i, rg, first, rows, i, next)
		}
		f, err := NewSplitBlockFilter(b.data)
		if err != nil {
			return nil, fmt.Errorf("bloom side index: row group %d: %w", rg, err)
		}
		idx.groups = append(idx.groups, bloomGroup{first: first, rows: rows, filter: f})
		next += rows
	}
	if next != h.Rows {
		return nil, fmt.Errorf("bloom side index: row groups cover %d rows, the file has %d", next, h.Rows)
	}
	return idx, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (b *bloomIndex) Bytes() int64 { return b.bytes }

// RowGroupBloom is row group rg's filter, for the planner's bloom tier
// (the same evaluator as for native blooms: Hasher and CheckHash).
func (b *bloomIndex) RowGroupBloom(rg int) (metadata.BloomFilter, error) {
	if rg < 0 || rg >= len(b.groups) {
		return nil, fmt.Errorf("bloom side index has no row group %d", rg)
	}
	return b.groups[rg].filter, nil
}

func (b *bloomIndex) Eval(ctx context.Context, l *predicate.Leaf) (Answer, error) {
	if !leafMatchesIndex(l, b.h) || l.Negated || (l.Op != predicate.OpEq && l.Op != predicate.OpIn) {
		return unknown, nil
	}
	out := roaring64.New()
	for _, g := range b.groups {
		if err := ctx.Err(); err != nil {
			return Answer{}, err
		}
		for i := range l.Lits {
			h, ok := value.BloomHash(b.col, l.Type, l.Lits[i], g.filter.Hasher())
			if !ok || g.filter.CheckHash(h) {
				out.AddRange(uint64(g.first), uint64(g.first+g.rows))
				break
			}
		}
	}
	return Answer{Positions: out}, nil
}

// leafMatchesIndex reports whether leaf l is on the indexed field, bound
// to the type the index was built for.
func leafMatchesIndex(l *predicate.Leaf, h Header) bool {
	return l != nil && l.FieldID == h.FieldID && l.Type != nil && l.Type.String() == h.IcebergType
}

// SplitBlockFilter is a Parquet split-block bloom filter read from its
// bitset (Parquet's format: 32-byte blocks of eight little-endian words,
// xxHash64 of the plain-encoded value). It implements
// metadata.BloomFilter.
type SplitBlockFilter struct {
	words  []uint32
	hasher metadata.Hasher
}

// bloomSalt are the SALT constants of the Parquet bloom filter spec.
var bloomSalt = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

// xxHasher is arrow-go's bloom hasher (xxHash64, seed 0).
var xxHasher = metadata.NewBloomFilter(32, 32, memory.DefaultAllocator).Hasher()

// NewSplitBlockFilter reads a bitset; its length must be a positive
// multiple of 32 bytes.
func NewSplitBlockFilter(bits []byte) (*SplitBlockFilter, error) {
	if len(bits) == 0 || len(bits)%32 != 0 {
		return nil, fmt.Errorf("bloom filter bitset of %d bytes is not a whole number of 32-byte blocks", len(bits))
	}
	w := make([]uint32, len(bits)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(bits[4*i:])
	}
	return &SplitBlockFilter{words: w, hasher: xxHasher}, nil
}

func (f *SplitBlockFilter) Hasher() metadata.Hasher { return f.hasher }
func (f *SplitBlockFilter) Size() int64             { return int64(4 * len(f.words)) }

// CheckHash reports whether hash may have been inserted.
func (f *SplitBlockFilter) CheckHash(hash uint64) bool {
	blocks := uint64(len(f.words) / 8)
	b := ((hash >> 32) * blocks) >> 32
	key := uint32(hash)
	block := f.words[b*8 : b*8+8]
	for i, s := range bloomSalt {
		if block[i]&(1<<((key*s)>>27)) == 0 {
			return false
		}
	}
	return true
}
