package pagedecode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// DictionaryCounts are the rows of one wholly dictionary-encoded column
// chunk by value: Counts[code] rows hold Values[code], Nulls rows are
// NULL. A COUNT(*) whose predicate reads this column alone is the sum of
// the counts of the values it keeps (evaluated once each), without the
// column's rows ever being built:
//
//	chunk ── arrow-go's page reader (headers, decompression, CRCs) ──▶ pages
//	dictionary page ──▶ Values (PLAIN byte arrays, copied)
//	data page ──▶ definition levels: NULLs counted (RLE/bit-packed runs)
//	          └─▶ indices: Counts[code] += run length, or one by one in
//	              bit-packed groups of eight
type DictionaryCounts struct {
	Values [][]byte
	Counts []int64
	Nulls  int64
}

// errNotDictionary: a page of the chunk is not dictionary-encoded (its
// writer fell back to PLAIN, say), or its levels are in the deprecated
// BIT_PACKED encoding: the chunk has no counts by code.
var errNotDictionary = errors.New("the chunk is not wholly dictionary-encoded with RLE levels")

// CountDictionary counts the rows of each dictionary value of a flat
// (not repeated) BYTE_ARRAY column chunk of nrows rows: chunk holds its
// bytes from its dictionary page on. Any error means only that the chunk
// cannot be counted this way (not dictionary-encoded throughout, or not
// what its pages say): the caller decodes it instead, and that decode
// reports a corrupt chunk.
func CountDictionary(descr *schema.Column, codec compress.Compression, chunk []byte, nrows int64) (*DictionaryCounts, error) {
	var codes []int64
	values, nulls, err := walkDictionaryChunk(descr, codec, chunk, nrows, func(values [][]byte, pg *dictPage) (err error) {
		if codes == nil {
			codes = make([]int64, len(values))
		}
		if nonNull := pg.n - pg.nulls; nonNull > 0 {
			codes, err = countRuns(pg.indices, pg.width, nonNull, codes)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if codes == nil {
		codes = make([]int64, len(values))
	}
	for code := len(values); code < len(codes); code++ {
		if codes[code] != 0 {
			return nil, fmt.Errorf("index %d past a dictionary of %d values", code, len(values))
		}
	}
	return &DictionaryCounts{Values: values, Counts: codes[:len(values)], Nulls: nulls}, nil
}

// dictPage is one data page of a dictionary-encoded chunk: its rows and
// NULLs, its definition levels (RLE/bit-packed runs of width levelWidth;
// nil when the column is required) and its indices (runs of width width).
type dictPage struct {
	n, nulls   int64
	levels     []byte
	levelWidth int
	indices    []byte
	width      int
}

// walkDictionaryChunk reads a flat BYTE_ARRAY chunk of nrows rows whose
// pages are all dictionary-encoded: its dictionary's values (copies), then
// each data page handed to page in order; it returns the values and the
// NULL rows. errNotDictionary when a page is not dictionary-encoded (or
// its levels are BIT_PACKED); any other error: the chunk is not what its
// pages say (arrow-go's page reader's panics on damaged headers too).
func walkDictionaryChunk(descr *schema.Column, codec compress.Compression, chunk []byte, nrows int64, page func([][]byte, *dictPage) error) (values [][]byte, nulls int64, err error) {
	defer func() {
		if p := recover(); p != nil { // arrow-go's page reader on a damaged header
			values, nulls, err = nil, 0, fmt.Errorf("the chunk's pages: %v", p)
		}
	}()
	if descr.PhysicalType() != parquet.Types.ByteArray || descr.MaxRepetitionLevel() != 0 {
		return nil, 0, errNotDictionary
	}
	maxDef := descr.MaxDefinitionLevel()
	pr, err := pageReader(codec, chunk, nrows, memory.DefaultAllocator)
	if err != nil {
		return nil, 0, err
	}
	var levels []int64
	var rows int64
	for pr.Next() {
		var data []byte
		pg := &dictPage{levelWidth: bits.Len(uint(maxDef))}
		switch p := pr.Page().(type) {
		case *file.DictionaryPage:
			if values != nil || !isEncoding(p.Encoding(), parquet.Encodings.Plain, parquet.Encodings.PlainDict) {
				return nil, 0, errNotDictionary
			}
			if values, err = plainByteArrays(p.Data(), int(p.NumValues())); err != nil {
				return nil, 0, err
			}
			continue
		case *file.DataPageV1:
			if values == nil || !isEncoding(p.Encoding(), parquet.Encodings.RLEDict, parquet.Encodings.PlainDict) {
				return nil, 0, errNotDictionary
			}
			data, pg.n = p.Data(), int64(p.NumValues())
			if maxDef > 0 {
				if p.DefinitionLevelEncoding() != parquet.Encodings.RLE {
					return nil, 0, errNotDictionary
				}
				if len(data) < 4 {
					return nil, 0, errors.New("a data page ends inside its definition levels' length")
				}
				size := int64(binary.LittleEndian.Uint32(data))
				if size > int64(len(data)-4) {
					return nil, 0, fmt.Errorf("definition levels of %d bytes in a page of %d", size, len(data))
				}
				pg.levels, data = data[4:4+size], data[4+size:]
				if pg.nulls, levels, err = countNulls(pg.levels, maxDef, pg.n, levels); err != nil {
					return nil, 0, err
				}
			}
		case *file.DataPageV2:
			if values == nil || !isEncoding(p.Encoding(), parquet.Encodings.RLEDict, parquet.Encodings.PlainDict) {
				return nil, 0, errNotDictionary
			}
			data, pg.n = p.Data(), int64(p.NumValues())
			rep, def := int64(p.RepetitionLevelByteLen()), int64(p.DefinitionLevelByteLen())
			if rep != 0 || def < 0 || def > int64(len(data)) {
				return nil, 0, fmt.Errorf("levels of %d and %d bytes in a page of %d", rep, def, len(data))
			}
			if maxDef > 0 {
				pg.levels = data[:def]
				if pg.nulls, levels, err = countNulls(pg.levels, maxDef, pg.n, levels); err != nil {
					return nil, 0, err
				}
			}
			if pg.nulls != int64(p.NumNulls()) {
				return nil, 0, fmt.Errorf("a page's levels hold %d NULLs, its header says %d", pg.nulls, p.NumNulls())
			}
			data = data[def:]
		default:
			return nil, 0, errNotDictionary
		}
		if pg.n-pg.nulls > 0 {
			if len(data) == 0 {
				return nil, 0, errors.New("a data page has no indices")
			}
			if pg.width = int(data[0]); pg.width > 32 {
				return nil, 0, fmt.Errorf("indices of bit width %d", pg.width)
			}
			pg.indices = data[1:]
		}
		if err := page(values, pg); err != nil {
			return nil, 0, err
		}
		nulls += pg.nulls
		rows += pg.n
	}
	if err := pr.Err(); err != nil {
		return nil, 0, err
	}
	if rows != nrows {
		return nil, 0, fmt.Errorf("the chunk's pages hold %d rows, its row group %d", rows, nrows)
	}
	if values == nil {
		return nil, 0, errNotDictionary
	}
	return values, nulls, nil
}

func isEncoding[E ~int32 | ~int64](e E, want ...parquet.Encoding) bool {
	for _, w := range want {
		if int64(e) == int64(w) {
			return true
		}
	}
	return false
}

// plainByteArrays are n PLAIN-encoded byte arrays (a 4-byte little-endian
// length, then the bytes), copied into one buffer.
func plainByteArrays(data []byte, n int) ([][]byte, error) {
	if n < 0 || n > len(data)/4 {
		return nil, fmt.Errorf("a dictionary of %d values in %d bytes", n, len(data))
	}
	own := append([]byte(nil), data...)
	out := make([][]byte, n)
	for i := range out {
		if len(own) < 4 {
			return nil, fmt.Errorf("dictionary value %d: the page ends inside its length", i)
		}
		size := int64(binary.LittleEndian.Uint32(own))
		if size > int64(len(own)-4) {
			return nil, fmt.Errorf("dictionary value %d: %d bytes, %d left in the page", i, size, len(own)-4)
		}
		out[i] = own[4 : 4+size : 4+size]
		own = own[4+size:]
	}
	return out, nil
}

// countNulls counts the NULLs among n definition levels (levels below
// maxDef); levels is scratch, returned for reuse.
func countNulls(data []byte, maxDef int16, n int64, levels []int64) (int64, []int64, error) {
	clear(levels)
	levels, err := countRuns(data, bits.Len(uint(maxDef)), n, levels[:0])
	if err != nil {
		return 0, levels, fmt.Errorf("definition levels: %w", err)
	}
	if len(levels) > int(maxDef)+1 {
		for _, c := range levels[maxDef+1:] {
			if c != 0 {
				return 0, levels, fmt.Errorf("a definition level above the column's %d", maxDef)
			}
		}
	}
	var defined int64
	if int(maxDef) < len(levels) {
		defined = levels[maxDef]
	}
	return n - defined, levels, nil
}

// countRuns adds to counts[v] the occurrences of each value v of the
// first n values of an RLE/bit-packed hybrid run sequence of bitWidth
// (Parquet's levels and dictionary indices), growing counts to hold every
// value the width can spell when it is at most 16 bits (the caller checks
// the values past its domain are zero) and failing on a larger value
// otherwise.
func countRuns(data []byte, bitWidth int, n int64, counts []int64) ([]int64, error) {
	if bitWidth <= 16 && bitWidth >= 0 && len(counts) < 1<<bitWidth {
		counts = append(counts, make([]int64, 1<<bitWidth-len(counts))...)
	}
	rs, err := newHybridRuns(data, bitWidth)
	if err != nil {
		return counts, err
	}
	for n > 0 {
		r, err := rs.next(n)
		if err != nil {
			return counts, err
		}
		n -= r.values
		if r.packed == nil {
			if r.value >= uint64(len(counts)) {
				return counts, fmt.Errorf("value %d past %d", r.value, len(counts))
			}
			counts[r.value] += r.values
			continue
		}
		if bitWidth == 0 {
			counts[0] += r.values
			continue
		}
		d, i := r.packed, int64(0)
		if bitWidth <= 8 && len(counts) >= 1<<bitWidth {
			// whole groups: eight values in bitWidth bytes, one word
			for ; i+8 <= r.values && len(d) >= 8; i += 8 {
				w := binary.LittleEndian.Uint64(d)
				for s := 0; s < 8*bitWidth; s += bitWidth {
					counts[(w>>s)&rs.mask]++
				}
				d = d[bitWidth:]
			}
		}
		u := unpacker{d: d, width: bitWidth, mask: rs.mask}
		for ; i < r.values; i++ {
			v := u.next()
			if v >= uint64(len(counts)) {
				return counts, fmt.Errorf("value %d past %d", v, len(counts))
			}
			counts[v]++
		}
	}
	return counts, nil
}

// hybridRuns reads an RLE/bit-packed hybrid run sequence a run at a time.
type hybridRuns struct {
	data             []byte
	width, byteWidth int
	mask             uint64
}

// run is one run: values repeated (packed nil) or bit-packed.
type run struct {
	values int64  // of the values wanted
	value  uint64 // the repeated value
	packed []byte // the bit-packed values' bytes
}

func newHybridRuns(data []byte, width int) (*hybridRuns, error) {
	if width < 0 || width > 32 {
		return nil, fmt.Errorf("bit width %d", width)
	}
	return &hybridRuns{data: data, width: width, byteWidth: (width + 7) / 8, mask: uint64(1)<<width - 1}, nil
}

// next is the next run, of at most left values.
func (h *hybridRuns) next(left int64) (run, error) {
	header, k := binary.Uvarint(h.data)
	if k <= 0 {
		return run{}, errors.New("a run header past the data")
	}
	h.data = h.data[k:]
	if header&1 == 0 { // a repeated value
		n := int64(header >> 1)
		if n <= 0 || len(h.data) < h.byteWidth {
			return run{}, errors.New("an RLE run without length or value")
		}
		var v uint64
		for i := range h.byteWidth {
			v |= uint64(h.data[i]) << (8 * i)
		}
		h.data = h.data[h.byteWidth:]
		return run{values: min(n, left), value: v}, nil
	}
	groups := int64(header >> 1) // bit-packed: groups of eight values
	if groups <= 0 || groups > int64(len(h.data)) {
		return run{}, errors.New("a bit-packed run without groups")
	}
	values := min(groups*8, left)
	need := (values*int64(h.width) + 7) / 8
	if int64(len(h.data)) < need {
		return run{}, errors.New("a bit-packed run past the data")
	}
	r := run{values: values, packed: h.data[:need:need]}
	h.data = h.data[min(int64(len(h.data)), groups*int64(h.width)):]
	return r, nil
}

// unpacker reads bit-packed values of width bits, least significant first.
type unpacker struct {
	d     []byte
	acc   uint64
	have  int
	width int
	mask  uint64
}

func (u *unpacker) next() uint64 {
	for u.have < u.width {
		u.acc |= uint64(u.d[0]) << u.have
		u.d = u.d[1:]
		u.have += 8
	}
	v := u.acc & u.mask
	u.acc >>= u.width
	u.have -= u.width
	return v
}

// DictionaryArray decodes a flat string or binary chunk of nrows rows
// whose pages are all dictionary-encoded as an Arrow dictionary array of
// type dt (int32 indices): the indices straight from the pages' runs, the
// values the dictionary page's. It is what pqarrow's dictionary reader
// gives, without arrow-go's dictionary builder (which converts each index
// twice and copies it into a new slice, a page at a time). An error means
// only that the chunk cannot be decoded this way (as CountDictionary's).
func DictionaryArray(descr *schema.Column, codec compress.Compression, chunk []byte, nrows int64, dt *arrow.DictionaryType, mem memory.Allocator) (_ arrow.Array, err error) {
	if dt.IndexType.ID() != arrow.INT32 || (dt.ValueType.ID() != arrow.STRING && dt.ValueType.ID() != arrow.BINARY) {
		return nil, fmt.Errorf("no dictionary of %s", dt)
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	idxBuf := memory.NewResizableBuffer(mem)
	defer idxBuf.Release()
	idxBuf.Resize(int(nrows) * 4)
	idx := arrow.Int32Traits.CastFromBytes(idxBuf.Bytes())
	var validBuf *memory.Buffer // allocated at the first NULL
	defer func() {
		if validBuf != nil {
			validBuf.Release()
		}
	}()
	var levels, packed []int32
	var pos, nullCount int64
	values, _, err := walkDictionaryChunk(descr, codec, chunk, nrows, func(values [][]byte, pg *dictPage) error {
		if pos+pg.n > nrows {
			return fmt.Errorf("the chunk's pages hold more than %d rows", nrows)
		}
		out := idx[pos : pos+pg.n]
		defer func() { pos += pg.n }()
		if pg.nulls == 0 {
			if err := decodeRuns(pg.indices, pg.width, out, len(values)); err != nil {
				return err
			}
			if validBuf != nil {
				bitutil.SetBitsTo(validBuf.Bytes(), pos, pg.n, true)
			}
			return nil
		}
		if validBuf == nil {
			validBuf = memory.NewResizableBuffer(mem)
			validBuf.Resize(int(bitutil.BytesForBits(nrows)))
			clear(validBuf.Bytes())
			bitutil.SetBitsTo(validBuf.Bytes(), 0, pos, true)
		}
		levels = growInt32(levels, int(pg.n))
		if err := decodeRuns(pg.levels, pg.levelWidth, levels, 1<<pg.levelWidth); err != nil {
			return fmt.Errorf("definition levels: %w", err)
		}
		packed = growInt32(packed, int(pg.n-pg.nulls))
		if err := decodeRuns(pg.indices, pg.width, packed, len(values)); err != nil {
			return err
		}
		maxDef := int32(descr.MaxDefinitionLevel())
		k := 0
		valid := validBuf.Bytes()
		for i, l := range levels {
			if l == maxDef {
				out[i] = packed[k]
				k++
				bitutil.SetBit(valid, int(pos)+i)
			} else {
				out[i] = 0
				bitutil.ClearBit(valid, int(pos)+i)
			}
		}
		if k != len(packed) {
			return fmt.Errorf("%d values for %d defined rows", len(packed), k)
		}
		nullCount += pg.nulls
		return nil
	})
	if err != nil {
		return nil, err
	}
	if pos != nrows {
		return nil, fmt.Errorf("the chunk's pages hold %d rows, its row group %d", pos, nrows)
	}
	vb := array.NewBuilder(mem, dt.ValueType)
	defer vb.Release()
	for _, v := range values {
		switch b := vb.(type) {
		case *array.StringBuilder:
			b.BinaryBuilder.Append(v)
		case *array.BinaryBuilder:
			b.Append(v)
		}
	}
	dict := vb.NewArray()
	defer dict.Release()
	var buffers []*memory.Buffer
	if validBuf != nil {
		buffers = []*memory.Buffer{validBuf, idxBuf}
	} else {
		buffers = []*memory.Buffer{nil, idxBuf}
	}
	data := array.NewData(arrow.PrimitiveTypes.Int32, int(nrows), buffers, nil, int(nullCount), 0)
	defer data.Release()
	indices := array.MakeFromData(data)
	defer indices.Release()
	return array.NewDictionaryArray(dt, indices, dict), nil
}

func growInt32(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
}

// decodeRuns decodes len(out) values of an RLE/bit-packed hybrid run
// sequence of bitWidth into out, failing on a value not below limit.
func decodeRuns(data []byte, bitWidth int, out []int32, limit int) error {
	rs, err := newHybridRuns(data, bitWidth)
	if err != nil {
		return err
	}
	for len(out) > 0 {
		r, err := rs.next(int64(len(out)))
		if err != nil {
			return err
		}
		dst := out[:r.values]
		out = out[r.values:]
		if r.packed == nil {
			if r.value >= uint64(limit) {
				return fmt.Errorf("value %d past %d", r.value, limit)
			}
			for i := range dst {
				dst[i] = int32(r.value)
			}
			continue
		}
		if bitWidth == 0 {
			clear(dst)
			continue
		}
		d, i := r.packed, 0
		if bitWidth <= 8 {
			// whole groups: eight values in bitWidth bytes, one word; a
			// value past limit is possible only when the width spells more
			check := uint64(limit) < 1<<bitWidth
			for ; i+8 <= len(dst) && len(d) >= 8; i += 8 {
				w := binary.LittleEndian.Uint64(d)
				g := dst[i : i+8 : i+8]
				for j := range g {
					v := (w >> (j * bitWidth)) & rs.mask
					if check && v >= uint64(limit) {
						return fmt.Errorf("value %d past %d", v, limit)
					}
					g[j] = int32(v)
				}
				d = d[bitWidth:]
			}
		}
		u := unpacker{d: d, width: bitWidth, mask: rs.mask}
		for ; i < len(dst); i++ {
			v := u.next()
			if v >= uint64(limit) {
				return fmt.Errorf("value %d past %d", v, limit)
			}
			dst[i] = int32(v)
		}
	}
	return nil
}
