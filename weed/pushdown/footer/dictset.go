package footer

// A column chunk whose data pages are all dictionary-encoded holds no
// value outside its dictionary page. Read once, that page answers "is v
// in this row group?" exactly — a bloom filter without false positives:
//
//	chunk: [dictionary page][data pages: indices into it]
//	          │ PLAIN values
//	          ▼
//	xxhash64 of each value's plain bytes (the hash Parquet bloom filters
//	use, so a predicate literal hashes as for a bloom filter), sorted
//	          ▼
//	CheckHash(h): h among them (absent: no row of the chunk holds v)

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/cespare/xxhash/v2"
)

// MaxDictionaryPage bounds the dictionary pages read as value sets (their
// bytes as stored): a larger one is not worth reading to plan.
const MaxDictionaryPage = 4 << 20

// Parquet's page types (format.PageType) as EncodingStats reports them.
const (
	pageTypeData   = 0
	pageTypeDataV2 = 3
)

// dictionaryOnly reports whether every data page of a chunk is
// dictionary-encoded, as its encoding stats say (without them a writer
// may have fallen back to PLAIN pages, which the encodings list cannot
// tell apart from a PLAIN dictionary page: not known, false).
func dictionaryOnly(cc *metadata.ColumnChunkMetaData) bool {
	if !cc.HasDictionaryPage() || cc.CryptoMetadata() != nil {
		return false
	}
	stats := cc.EncodingStats()
	data := 0
	for _, st := range stats {
		switch int32(st.PageType) {
		case pageTypeData, pageTypeDataV2:
			data++
			if st.Encoding != parquet.Encodings.PlainDict && st.Encoding != parquet.Encodings.RLEDict {
				return false
			}
		}
	}
	return data > 0
}

// dictionarySet is the hashes of a dictionary page's values.
type dictionarySet struct{ hashes []uint64 }

type xxhasher struct{}

func (xxhasher) Sum64(b []byte) uint64 { return xxhash.Sum64(b) }
func (xxhasher) Sum64s(bs [][]byte) []uint64 {
	out := make([]uint64, len(bs))
	for i, b := range bs {
		out[i] = xxhash.Sum64(b)
	}
	return out
}

func (d *dictionarySet) Hasher() metadata.Hasher { return xxhasher{} }
func (d *dictionarySet) Size() int64             { return int64(8 * len(d.hashes)) }
func (d *dictionarySet) CheckHash(h uint64) bool {
	_, found := slices.BinarySearch(d.hashes, h)
	return found
}

// IsDictionarySet reports whether a BloomFilter answer is a chunk's
// dictionary (exact) rather than its bloom filter.
func IsDictionarySet(bf BloomFilter) bool {
	_, ok := bf.(*dictionarySet)
	return ok
}

// windowSource serves one range of a file from memory (io.EOF past it).
type windowSource struct {
	off  int64
	data []byte
	size int64
}

func (w *windowSource) ReadAt(p []byte, off int64) (int, error) {
	if off < w.off || off >= w.off+int64(len(w.data)) {
		return 0, io.EOF
	}
	n := copy(p, w.data[off-w.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (w *windowSource) Seek(offset int64, whence int) (int64, error) {
	if whence == io.SeekEnd {
		return w.size + offset, nil
	}
	return offset, nil
}

// ReadDictionarySet reads the dictionary page of (rg, col) as a value set;
// nil, nil when the chunk is not wholly dictionary-encoded or its
// dictionary page is larger than MaxDictionaryPage.
func (f *Footer) ReadDictionarySet(ctx context.Context, rg, col int) (bf BloomFilter, err error) {
	defer func() {
		if r := recover(); r != nil {
			bf, err = nil, fmt.Errorf("malformed dictionary page: %v", r)
		}
	}()
	ch := f.Chunks[rg][col]
	if !ch.DictionaryOnly || ch.DataOffset-ch.Start > MaxDictionaryPage {
		return nil, nil
	}
	// the dictionary page and a little more, for the page reader's peek
	// at a header that may end past it
	n := min(ch.DataOffset-ch.Start+64<<10, ch.Length)
	data, err := f.readRange(ctx, ch.Start, n)
	if err != nil {
		return nil, err
	}
	props := parquet.NewReaderProperties(nil)
	props.BufferedStreamEnabled = true
	props.BufferSize = n
	rdr, err := file.NewParquetReader(&windowSource{off: ch.Start, data: data, size: f.ID.Size}, file.WithMetadata(f.Meta), file.WithReadProps(props))
	if err != nil {
		return nil, err
	}
	pr, err := rdr.RowGroup(rg).GetColumnPageReader(col)
	if err != nil {
		return nil, err
	}
	if !pr.Next() {
		if pr.Err() != nil {
			return nil, pr.Err()
		}
		return nil, fmt.Errorf("no dictionary page")
	}
	dp, ok := pr.Page().(*file.DictionaryPage)
	if !ok {
		return nil, fmt.Errorf("first page is a %T, not the dictionary", pr.Page())
	}
	if e := parquet.Encoding(dp.Encoding()); e != parquet.Encodings.Plain && e != parquet.Encodings.PlainDict {
		return nil, fmt.Errorf("dictionary page encoded %s", e)
	}
	hashes, err := plainHashes(dp.Data(), int(dp.NumValues()), f.Meta.Schema.Column(col).PhysicalType(), f.Meta.Schema.Column(col).TypeLength())
	if err != nil {
		return nil, err
	}
	slices.Sort(hashes)
	return &dictionarySet{hashes: slices.Compact(hashes)}, nil
}

// plainHashes hashes n PLAIN-encoded values of a physical type as bloom
// filters hash them: a value's plain bytes, without a byte array's length.
func plainHashes(b []byte, n int, t parquet.Type, typeLen int) ([]uint64, error) {
	if n < 0 {
		return nil, fmt.Errorf("%d dictionary values", n)
	}
	width := 0
	switch t {
	case parquet.Types.Int32, parquet.Types.Float:
		width = 4
	case parquet.Types.Int64, parquet.Types.Double:
		width = 8
	case parquet.Types.Int96:
		width = 12
	case parquet.Types.FixedLenByteArray:
		width = typeLen
	case parquet.Types.ByteArray:
	default:
		return nil, fmt.Errorf("no dictionary of %s values", t)
	}
	out := make([]uint64, 0, n)
	if width > 0 {
		if len(b) < n*width {
			return nil, fmt.Errorf("dictionary page holds %d bytes, %d values of %d need %d", len(b), n, width, n*width)
		}
		for i := 0; i < n; i++ {
			out = append(out, xxhash.Sum64(b[i*width:(i+1)*width]))
		}
		return out, nil
	}
	r := bytes.NewReader(b)
	for i := 0; i < n; i++ {
		var l uint32
		if err := binary.Read(r, binary.LittleEndian, &l); err != nil {
			return nil, fmt.Errorf("dictionary value %d: %w", i, err)
		}
		if int64(l) > int64(r.Len()) {
			return nil, fmt.Errorf("dictionary value %d: %d bytes, %d left", i, l, r.Len())
		}
		off := len(b) - r.Len()
		out = append(out, xxhash.Sum64(b[off:off+int(l)]))
		r.Seek(int64(l), io.SeekCurrent)
	}
	return out, nil
}
