package pagedecode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

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
func CountDictionary(descr *schema.Column, codec compress.Compression, chunk []byte, nrows int64) (out *DictionaryCounts, err error) {
	defer func() {
		if p := recover(); p != nil { // arrow-go's page reader on a damaged header
			out, err = nil, fmt.Errorf("the chunk's pages: %v", p)
		}
	}()
	if descr.PhysicalType() != parquet.Types.ByteArray || descr.MaxRepetitionLevel() != 0 {
		return nil, errNotDictionary
	}
	maxDef := descr.MaxDefinitionLevel()
	pr, err := pageReader(codec, chunk, nrows, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	out = &DictionaryCounts{}
	var codes, levels []int64
	var rows int64
	for pr.Next() {
		var data []byte
		var n, nulls int64
		switch pg := pr.Page().(type) {
		case *file.DictionaryPage:
			if out.Values != nil || !isEncoding(pg.Encoding(), parquet.Encodings.Plain, parquet.Encodings.PlainDict) {
				return nil, errNotDictionary
			}
			if out.Values, err = plainByteArrays(pg.Data(), int(pg.NumValues())); err != nil {
				return nil, err
			}
			continue
		case *file.DataPageV1:
			if out.Values == nil || !isEncoding(pg.Encoding(), parquet.Encodings.RLEDict, parquet.Encodings.PlainDict) {
				return nil, errNotDictionary
			}
			data, n = pg.Data(), int64(pg.NumValues())
			if maxDef > 0 {
				if pg.DefinitionLevelEncoding() != parquet.Encodings.RLE {
					return nil, errNotDictionary
				}
				if len(data) < 4 {
					return nil, errors.New("a data page ends inside its definition levels' length")
				}
				size := int64(binary.LittleEndian.Uint32(data))
				if size > int64(len(data)-4) {
					return nil, fmt.Errorf("definition levels of %d bytes in a page of %d", size, len(data))
				}
				if nulls, levels, err = countNulls(data[4:4+size], maxDef, n, levels); err != nil {
					return nil, err
				}
				data = data[4+size:]
			}
		case *file.DataPageV2:
			if out.Values == nil || !isEncoding(pg.Encoding(), parquet.Encodings.RLEDict, parquet.Encodings.PlainDict) {
				return nil, errNotDictionary
			}
			data, n = pg.Data(), int64(pg.NumValues())
			rep, def := int64(pg.RepetitionLevelByteLen()), int64(pg.DefinitionLevelByteLen())
			if rep != 0 || def < 0 || def > int64(len(data)) {
				return nil, fmt.Errorf("levels of %d and %d bytes in a page of %d", rep, def, len(data))
			}
			if maxDef > 0 {
				if nulls, levels, err = countNulls(data[:def], maxDef, n, levels); err != nil {
					return nil, err
				}
			}
			if nulls != int64(pg.NumNulls()) {
				return nil, fmt.Errorf("a page's levels hold %d NULLs, its header says %d", nulls, pg.NumNulls())
			}
			data = data[def:]
		default:
			return nil, errNotDictionary
		}
		if codes == nil {
			codes = make([]int64, len(out.Values))
		}
		if nonNull := n - nulls; nonNull > 0 {
			if len(data) == 0 {
				return nil, errors.New("a data page has no indices")
			}
			bw := int(data[0])
			if bw > 32 {
				return nil, fmt.Errorf("indices of bit width %d", bw)
			}
			if codes, err = countRuns(data[1:], bw, nonNull, codes); err != nil {
				return nil, err
			}
		}
		out.Nulls += nulls
		rows += n
	}
	if err := pr.Err(); err != nil {
		return nil, err
	}
	if rows != nrows {
		return nil, fmt.Errorf("the chunk's pages hold %d rows, its row group %d", rows, nrows)
	}
	if out.Values == nil {
		return nil, errNotDictionary
	}
	if codes == nil {
		codes = make([]int64, len(out.Values))
	}
	for code := len(out.Values); code < len(codes); code++ {
		if codes[code] != 0 {
			return nil, fmt.Errorf("index %d past a dictionary of %d values", code, len(out.Values))
		}
	}
	out.Counts = codes[:len(out.Values)]
	return out, nil
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
	if bitWidth < 0 || bitWidth > 32 {
		return counts, fmt.Errorf("bit width %d", bitWidth)
	}
	if bitWidth <= 16 && len(counts) < 1<<bitWidth {
		counts = append(counts, make([]int64, 1<<bitWidth-len(counts))...)
	}
	byteWidth := (bitWidth + 7) / 8
	mask := uint64(1)<<bitWidth - 1
	for n > 0 {
		h, k := binary.Uvarint(data)
		if k <= 0 {
			return counts, errors.New("a run header past the data")
		}
		data = data[k:]
		if h&1 == 0 { // a repeated value
			run := int64(h >> 1)
			if run <= 0 || len(data) < byteWidth {
				return counts, errors.New("an RLE run without length or value")
			}
			var v uint64
			for i := range byteWidth {
				v |= uint64(data[i]) << (8 * i)
			}
			data = data[byteWidth:]
			if v >= uint64(len(counts)) {
				return counts, fmt.Errorf("value %d past %d", v, len(counts))
			}
			take := min(run, n)
			counts[v] += take
			n -= take
			continue
		}
		groups := int64(h >> 1) // bit-packed: groups of eight values
		if groups <= 0 || groups > int64(len(data)) {
			return counts, errors.New("a bit-packed run without groups")
		}
		values := min(groups*8, n)
		need := (values*int64(bitWidth) + 7) / 8
		if int64(len(data)) < need {
			return counts, errors.New("a bit-packed run past the data")
		}
		d := data[:need]
		data = data[min(int64(len(data)), groups*int64(bitWidth)):]
		n -= values
		if bitWidth == 0 {
			counts[0] += values
			continue
		}
		i := int64(0)
		if bitWidth <= 8 && len(counts) >= 1<<bitWidth {
			// whole groups: eight values in bitWidth bytes, one word
			for ; i+8 <= values && len(d) >= 8; i += 8 {
				w := binary.LittleEndian.Uint64(d)
				for s := 0; s < 8*bitWidth; s += bitWidth {
					counts[(w>>s)&mask]++
				}
				d = d[bitWidth:]
			}
		}
		var acc uint64
		var have int
		for ; i < values; i++ {
			for have < bitWidth {
				acc |= uint64(d[0]) << have
				d = d[1:]
				have += 8
			}
			v := acc & mask
			acc >>= bitWidth
			have -= bitWidth
			if v >= uint64(len(counts)) {
				return counts, fmt.Errorf("value %d past %d", v, len(counts))
			}
			counts[v]++
		}
	}
	return counts, nil
}
