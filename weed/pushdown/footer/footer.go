// Package footer caches parsed Parquet footers, page indexes and bloom
// filters by file identity.
//
//	Get(identity) ──hit──▶ *Footer
//	     │ miss (one load per key at a time)
//	     ▼
//	Source.ReadAt(tail: last TailBytes) ──▶ footer length + magic
//	     │ footer longer than the tail? one more read for the rest
//	     ▼
//	metadata.NewFileMetaData ──▶ *Footer (LRU, bounded by bytes)
//	     │ later, on demand:
//	     ├─ PageIndex(rg): ColumnIndex/OffsetIndex of the row group,
//	     │                 served from the tail when it covers them
//	     └─ BloomFilter(rg, col): cached per (identity, rg, column)
//
// Identity is (path, size): Iceberg data files are immutable, and a file
// whose size changed has a different key, so a stale entry is never served.
// A source whose size differs from the identity is refused.
package footer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// TailBytes is the size of the speculative read at the end of a cold file:
// large enough for most footers and, often, their page indexes.
const TailBytes = 64 << 10

// MaxFooterBytes refuses absurd footer lengths before allocating them.
const MaxFooterBytes = 256 << 20

// Identity names one immutable version of a file.
type Identity struct {
	Path string
	Size int64
}

// IdentityDir is the one identity rule of the project: the <identity>
// folder name of a data file's side indexes and persisted delete bitmaps
// (<parent>/.index/<file name>/<identity>/), "<size>-<rows>-<footer hash>".
// A file rewritten with other bytes gets another folder, so what was built
// for the old bytes is never found for the new ones. An empty hash (the
// footer was not read) gives "<size>-<rows>", which nothing persists under.
func IdentityDir(size, rows int64, hash string) string {
	s := strconv.FormatInt(size, 10) + "-" + strconv.FormatInt(rows, 10)
	if hash != "" {
		s += "-" + hash
	}
	return s
}

// cacheKey identifies a cache entry: a footer (bloom == false) or the bloom
// filter of one column chunk.
type cacheKey struct {
	Identity
	bloom   bool
	rg, col int
	gen     uint64 // bloom entries: the generation of the footer they belong to
}

func (id Identity) key() cacheKey { return cacheKey{Identity: id} }

// Source reads bytes of one file.
type Source interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	Size() int64
}

// Opener opens the source of an identity.
type Opener func(ctx context.Context, id Identity) (Source, error)

// ChunkStats are a column chunk's footer statistics as arrow-go accepts
// them (writers known to compute them wrongly are already filtered out).
type ChunkStats struct {
	HasMinMax        bool
	Min, Max         []byte // plain-encoded
	HasNullCount     bool
	NullCount        int64
	TypeDefinedOrder bool // false: deprecated min/max written without a column order
}

// Chunk is the layout of one column chunk, computed once per footer.
type Chunk struct {
	Start, Length int64 // byte range of the whole chunk
	HasDictionary bool  // a dictionary page precedes the data pages
	// DictionaryOnly: every data page is dictionary-encoded (encoding
	// stats say so), from DataOffset on: the dictionary page holds every
	// value of the chunk (ReadDictionarySet).
	DictionaryOnly bool
	DataOffset     int64
	NumValues      int64
	ColumnIndex    *metadata.IndexLocation
	OffsetIndex    *metadata.IndexLocation
	BloomOffset    int64
	Stats          *ChunkStats // nil: no usable statistics
}

// Footer is a parsed footer and the lazily loaded indexes of one file.
type Footer struct {
	ID   Identity
	Meta *metadata.FileMetaData
	// Hash is the hex SHA-256 (first 16 bytes) of the Thrift FileMetaData
	// bytes: with the path, size and row count it names this version of
	// the file (IdentityDir), so a rewrite of the same size is told apart.
	Hash string
	gen  uint64 // unique per load: a reloaded footer never meets the old one's blooms
	// Chunks[rg][col] is the layout of every column chunk.
	Chunks       [][]Chunk
	rowGroupRows []int64 // rows per row group, set by Load (nil: ask Meta)
	numRows      int64   // their sum
	identityDir  string  // IdentityDir of this version, set by Load
	hasPageIndex bool
	MetaOffset   int64 // start of the Thrift FileMetaData
	MetaLength   int64 // its length (the 8-byte length + magic trailer follows)
	tail         []byte
	tailOffset   int64
	open         Opener
	cache        *Cache
	mu           sync.Mutex
	pageIndex    []*RowGroupIndex // by row group; nil until loaded
	pageIndexErr error
	side         sidePages // page indexes of columns from page_index side indexes
	size         int64     // accounted bytes
	loadRead     int64     // bytes read by Load
	memo         sync.Map
	chunkMemo    []atomic.Pointer[chunkMemoEntry] // by rg*columns+col; allocated on first use
	chunkMemoMu  sync.Mutex
	smallMemo    atomic.Pointer[chunkMemoEntry] // SmallMemo's chain
	attachment   atomic.Pointer[any]            // see Attachment
	// bloomRefs[rg*columns+col] weakly references the bloom cache's entry
	// of that chunk (Cache.BloomFilter's fast path); allocated on first use
	bloomRefs atomic.Pointer[[]atomic.Pointer[weak.Pointer[entry]]]
}

// bloomSlot is the bloom reference slot of chunk (rg, col); nil when out
// of range.
func (f *Footer) bloomSlot(rg, col int) *atomic.Pointer[weak.Pointer[entry]] {
	ncols := f.Meta.Schema.NumColumns()
	if rg < 0 || col < 0 || rg >= len(f.Chunks) || col >= ncols {
		return nil
	}
	refs := f.bloomRefs.Load()
	if refs == nil { // first use: allocate, or take the one another goroutine did
		fresh := make([]atomic.Pointer[weak.Pointer[entry]], len(f.Chunks)*ncols)
		f.bloomRefs.CompareAndSwap(nil, &fresh)
		refs = f.bloomRefs.Load()
	}
	return &(*refs)[rg*ncols+col]
}

// Attachment returns the one value attached to this footer, attaching
// build's result on first use: the planner's per-file state, reached with
// one load (no tag comparison) by every plan of the file. It lives and
// dies with the footer.
func (f *Footer) Attachment(build func() any) any {
	if v := f.attachment.Load(); v != nil {
		return *v
	}
	v := build()
	if f.attachment.CompareAndSwap(nil, &v) {
		return v
	}
	return *f.attachment.Load()
}

// smallMemoMax bounds SmallMemo's chain; further tags go to Memo.
const smallMemoMax = 16

// SmallMemo is Memo for the few per-file values every plan asks for
// (column map, projection, decoders): a short chain compared by ==, no
// hashing; past smallMemoMax tags it falls back to Memo.
func (f *Footer) SmallMemo(tag any, build func() any) any {
	for {
		head := f.smallMemo.Load()
		n := 0
		for e := head; e != nil; e = e.next {
			if e.tag == tag {
				return e.v
			}
			n++
		}
		if n >= smallMemoMax {
			return f.Memo(tag, build)
		}
		v := build()
		if f.smallMemo.CompareAndSwap(head, &chunkMemoEntry{tag: tag, v: v, next: head}) {
			return v
		}
		// another goroutine added an entry: look again (v is dropped)
	}
}

// chunkMemoEntry is one memoized value of a column chunk, tagged; entries
// of one chunk with other tags chain through next.
type chunkMemoEntry struct {
	tag  any
	v    any
	next *chunkMemoEntry
}

// ChunkMemo is Memo for values of one column chunk (rg, col), told apart
// by tag (a comparable value, e.g. the Iceberg type the chunk is read as):
// a slot per chunk, no hashing.
func (f *Footer) ChunkMemo(rg, col int, tag any, build func() any) any {
	ncols := f.Meta.Schema.NumColumns()
	if rg < 0 || col < 0 || rg >= len(f.Chunks) || col >= ncols {
		return build()
	}
	slots := f.chunkSlots(ncols)
	slot := &slots[rg*ncols+col]
	for e := slot.Load(); e != nil; e = e.next {
		if e.tag == tag {
			return e.v
		}
	}
	v := build()
	for {
		head := slot.Load()
		for e := head; e != nil; e = e.next {
			if e.tag == tag {
				return e.v
			}
		}
		if slot.CompareAndSwap(head, &chunkMemoEntry{tag: tag, v: v, next: head}) {
			return v
		}
	}
}

func (f *Footer) chunkSlots(ncols int) []atomic.Pointer[chunkMemoEntry] {
	f.chunkMemoMu.Lock()
	defer f.chunkMemoMu.Unlock()
	if f.chunkMemo == nil {
		f.chunkMemo = make([]atomic.Pointer[chunkMemoEntry], len(f.Chunks)*ncols)
	}
	return f.chunkMemo
}

// Memo returns the value cached under key for this footer, building it once.
// Callers derive per-file structures from the footer (column maps) with it.
func (f *Footer) Memo(key any, build func() any) any {
	if v, ok := f.memo.Load(key); ok {
		return v
	}
	v, _ := f.memo.LoadOrStore(key, build())
	return v
}

// NumRows is the number of rows, summed over the row groups.
func (f *Footer) NumRows() int64 {
	if f.rowGroupRows != nil {
		return f.numRows // computed by Load: every plan asks, for every file
	}
	var n int64
	for i := 0; i < f.Meta.NumRowGroups(); i++ {
		n += f.Meta.RowGroup(i).NumRows()
	}
	return n
}

// IdentityDir is IdentityDir of this version of the file (its size,
// rows and footer hash).
func (f *Footer) IdentityDir() string {
	if f.identityDir != "" {
		return f.identityDir
	}
	return IdentityDir(f.ID.Size, f.NumRows(), f.Hash)
}

// RowGroupRows is the number of rows of row group rg.
func (f *Footer) RowGroupRows(rg int) int64 {
	if f.rowGroupRows != nil {
		return f.rowGroupRows[rg]
	}
	return f.Meta.RowGroup(rg).NumRows()
}

// TrailerOffset is where the footer (metadata, length, magic) begins.
func (f *Footer) TrailerOffset() int64 { return f.MetaOffset }

// TrailerLength covers metadata + 4-byte length + 4-byte magic.
func (f *Footer) TrailerLength() int64 { return f.MetaLength + 8 }

// RowGroupIndex is the page index of one row group: per leaf column, the
// ColumnIndex and OffsetIndex (either may be nil when absent or unreadable).
type RowGroupIndex struct {
	Columns []ColumnPageIndex
}

// ColumnPageIndex is the page index of one column chunk.
type ColumnPageIndex struct {
	Column metadata.ColumnIndex
	Offset metadata.OffsetIndex
	Err    error // why an index is missing although the footer announced it
	// Pages are the offset index's pages with their row spans, validated
	// against the chunk; nil (with SpansErr) when the offset index is not
	// self-consistent.
	Pages    []Page
	SpansErr error
}

// Page is one data page: its bytes and the rows [FirstRow, EndRow) of the
// row group starting in it. StartsInsideRow: the page's first levels end
// row FirstRow-1, begun in the page before (a list column's pages as
// arrow-go's V1 writer cuts them without a page index, listed by a
// page_index side index; a native page index starts every page at a row).
type Page struct {
	Offset, Length   int64
	FirstRow, EndRow int64
	StartsInsideRow  bool
}

// HeldRows are the rows [start, end) having levels in the page: those
// starting in it and the row it continues.
func (p Page) HeldRows() (start, end int64) {
	if p.StartsInsideRow {
		return p.FirstRow - 1, p.EndRow
	}
	return p.FirstRow, p.EndRow
}

// MarkContinuedPages sets StartsInsideRow on pages[i] for each ordinal i
// of continued, validated: in range, not the first page (a chunk begins
// with a row), ascending, and not a page with no row before it.
func MarkContinuedPages(pages []Page, continued []int32) error {
	prev := int32(0)
	for _, i := range continued {
		if i <= prev || int(i) >= len(pages) {
			return fmt.Errorf("continued page %d of %d pages is out of place", i, len(pages))
		}
		if pages[i].FirstRow < 1 {
			return fmt.Errorf("continued page %d has no row before it", i)
		}
		pages[i].StartsInsideRow = true
		prev = i
	}
	return nil
}

// PagesOf validates an offset index against its chunk and the row
// group's row count and returns its pages with their row spans.
func PagesOf(oi metadata.OffsetIndex, c Chunk, numRows int64) ([]Page, error) {
	return pagesOf(oi, c, numRows)
}

// ParseOffsetIndex decodes a serialized OffsetIndex; malformed bytes are an
// error, never a panic.
func ParseOffsetIndex(b []byte) (metadata.OffsetIndex, error) {
	return parseOffsetIndex(b, parquet.NewReaderProperties(nil))
}

// ParseColumnIndex parses a Thrift ColumnIndex of column descr; malformed
// bytes are an error, never a panic.
func ParseColumnIndex(descr *schema.Column, b []byte) (metadata.ColumnIndex, error) {
	return parseColumnIndex(descr, b, parquet.NewReaderProperties(nil))
}

// pagesOf validates an offset index against its chunk and row count.
func pagesOf(oi metadata.OffsetIndex, c Chunk, numRows int64) ([]Page, error) {
	if oi == nil {
		return nil, fmt.Errorf("no offset index")
	}
	locs := oi.GetPageLocations()
	if len(locs) == 0 {
		return nil, fmt.Errorf("offset index lists no pages")
	}
	if c.Start < 0 || c.Length < 0 || c.Start > math.MaxInt64-c.Length {
		return nil, fmt.Errorf("column chunk [%d, +%d) is not a byte range", c.Start, c.Length)
	}
	out := make([]Page, len(locs))
	end := c.Start + c.Length
	for i, l := range locs {
		if l == nil {
			return nil, fmt.Errorf("page %d has no location", i)
		}
		// (l.Offset > end − size: l.Offset + size could overflow)
		if l.Offset < c.Start || l.CompressedPageSize <= 0 || l.Offset > end-int64(l.CompressedPageSize) {
			return nil, fmt.Errorf("page %d at [%d, +%d) lies outside its column chunk [%d, %d)", i, l.Offset, l.CompressedPageSize, c.Start, end)
		}
		last := numRows
		if i+1 < len(locs) && locs[i+1] != nil {
			last = locs[i+1].FirstRowIndex
		}
		if (i == 0 && l.FirstRowIndex != 0) || l.FirstRowIndex < 0 || last < l.FirstRowIndex || last > numRows {
			return nil, fmt.Errorf("page %d covers rows [%d, %d) of a %d-row group", i, l.FirstRowIndex, last, numRows)
		}
		if i > 0 && l.Offset < out[i-1].Offset+out[i-1].Length {
			return nil, fmt.Errorf("page %d overlaps page %d", i, i-1)
		}
		out[i] = Page{Offset: l.Offset, Length: int64(l.CompressedPageSize), FirstRow: l.FirstRowIndex, EndRow: last}
	}
	return out, nil
}

// Load reads and parses the footer of id from src (no caching).
func Load(ctx context.Context, id Identity, src Source) (*Footer, error) {
	size := src.Size()
	if size != id.Size {
		return nil, perr.New(perr.FailedPrecondition, "%s has %d bytes, the table metadata says %d: the file changed or the metadata is wrong", id.Path, size, id.Size)
	}
	if size < 12 {
		return nil, perr.New(perr.Corrupt, "%s is %d bytes, too small for a Parquet file", id.Path, size)
	}
	tailLen := min(int64(TailBytes), size)
	tail := make([]byte, tailLen)
	if err := readFull(ctx, src, tail, size-tailLen); err != nil {
		return nil, perr.Wrap(perr.Unavailable, fmt.Errorf("read footer of %s: %w", id.Path, err))
	}
	magic := string(tail[len(tail)-4:])
	switch magic {
	case "PAR1":
	case "PARE":
		return nil, perr.New(perr.FailedPrecondition, "%s is an encrypted Parquet file (encrypted footer); pushdown cannot plan it without the keys", id.Path)
	default:
		return nil, perr.New(perr.Corrupt, "%s is not a Parquet file: trailing magic %q", id.Path, magic)
	}
	metaLen := int64(binary.LittleEndian.Uint32(tail[len(tail)-8:]))
	if metaLen <= 0 || metaLen > size-12 || metaLen > MaxFooterBytes {
		return nil, perr.New(perr.Corrupt, "%s: footer length %d does not fit the file (%d bytes)", id.Path, metaLen, size)
	}
	metaOffset := size - 8 - metaLen
	tailOffset := size - tailLen
	if metaOffset < tailOffset {
		more := make([]byte, tailOffset-metaOffset)
		if err := readFull(ctx, src, more, metaOffset); err != nil {
			return nil, perr.Wrap(perr.Unavailable, fmt.Errorf("read footer of %s: %w", id.Path, err))
		}
		tail = append(more, tail...)
		tailOffset = metaOffset
	}
	raw := tail[metaOffset-tailOffset : int64(len(tail))-8]
	md, err := parseMeta(raw)
	if err != nil {
		return nil, perr.New(perr.Corrupt, "%s: malformed Parquet footer: %v", id.Path, err)
	}
	md.SetSourceFileSize(size)
	if md.IsSetEncryptionAlgorithm() {
		return nil, perr.New(perr.FailedPrecondition, "%s has encrypted columns (plaintext footer); pushdown cannot plan it without the keys", id.Path)
	}
	chunks, err := layout(md, metaOffset)
	if err != nil {
		return nil, perr.New(perr.Corrupt, "%s: %v", id.Path, err)
	}
	sum := sha256.Sum256(raw)
	f := &Footer{ID: id, Meta: md, Chunks: chunks, MetaOffset: metaOffset, MetaLength: metaLen, Hash: hex.EncodeToString(sum[:16])}
	f.rowGroupRows = make([]int64, md.NumRowGroups())
	for i := range f.rowGroupRows {
		f.rowGroupRows[i] = md.RowGroup(i).NumRows()
		f.numRows += f.rowGroupRows[i]
	}
	f.identityDir = IdentityDir(id.Size, f.numRows, f.Hash)
	for _, rg := range chunks {
		for _, c := range rg {
			if c.OffsetIndex != nil {
				f.hasPageIndex = true
			}
		}
	}
	// Keep only the page index region of the tail (when the tail covers
	// it): the footer bytes themselves are parsed and no longer needed.
	if lo, hi, ok := f.indexRegion(); ok && lo >= tailOffset && hi <= tailOffset+int64(len(tail)) {
		f.tail = append([]byte(nil), tail[lo-tailOffset:hi-tailOffset]...)
		f.tailOffset = lo
	}
	f.size = int64(len(f.tail)) + 4*metaLen + 512
	f.loadRead = int64(len(tail))
	return f, nil
}

func parseMeta(raw []byte) (md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			md, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return metadata.NewFileMetaData(raw, nil)
}

// Layout computes the chunk layouts of a parsed footer whose data region
// ends at dataEnd (where the footer starts).
func Layout(md *metadata.FileMetaData, dataEnd int64) ([][]Chunk, error) { return layout(md, dataEnd) }

// ParseFooterBytes parses a footer read as [metadata, length, magic].
func ParseFooterBytes(b []byte) (*metadata.FileMetaData, error) {
	if len(b) < 12 || string(b[len(b)-4:]) != "PAR1" {
		return nil, fmt.Errorf("not a Parquet footer")
	}
	n := int64(binary.LittleEndian.Uint32(b[len(b)-8:]))
	if n <= 0 || n > int64(len(b))-8 {
		return nil, fmt.Errorf("footer length %d does not fit %d bytes", n, len(b))
	}
	return parseMeta(b[int64(len(b))-8-n : len(b)-8])
}

// layout checks what the planner relies on — every column chunk lies
// inside the data region, row counts are sane — and records each chunk's
// layout and statistics once.
func layout(md *metadata.FileMetaData, dataEnd int64) (out [][]Chunk, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("malformed row group metadata: %v", r)
		}
	}()
	if md.Schema == nil || md.Schema.NumColumns() == 0 {
		return nil, errors.New("footer has no columns")
	}
	out = make([][]Chunk, md.NumRowGroups())
	for i := 0; i < md.NumRowGroups(); i++ {
		rg := md.RowGroup(i)
		if rg.NumRows() < 0 {
			return nil, fmt.Errorf("row group %d has %d rows", i, rg.NumRows())
		}
		if rg.NumColumns() != md.Schema.NumColumns() {
			return nil, fmt.Errorf("row group %d has %d column chunks, the schema %d", i, rg.NumColumns(), md.Schema.NumColumns())
		}
		out[i] = make([]Chunk, rg.NumColumns())
		for c := 0; c < rg.NumColumns(); c++ {
			cc, err := rg.ColumnChunk(c)
			if err != nil {
				return nil, fmt.Errorf("row group %d column %d: %v", i, c, err)
			}
			start, length := ChunkRange(cc)
			if start < 4 || length < 0 || start+length > dataEnd {
				return nil, fmt.Errorf("row group %d column %s: chunk [%d, %d) lies outside the data region [4, %d)", i, cc.PathInSchema(), start, start+length, dataEnd)
			}
			ch := Chunk{Start: start, Length: length, NumValues: cc.NumValues(), BloomOffset: cc.BloomFilterOffset(),
				ColumnIndex: cc.GetColumnIndexLocation(), OffsetIndex: cc.GetOffsetIndexLocation()}
			ch.HasDictionary = cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < cc.DataPageOffset()
			ch.DataOffset = cc.DataPageOffset()
			ch.DictionaryOnly = ch.HasDictionary && ch.DataOffset > ch.Start && ch.DataOffset < ch.Start+ch.Length && dictionaryOnly(cc)
			ch.Stats = chunkStats(cc, md.Schema.Column(c).ColumnOrder() == parquet.ColumnOrders.TypeDefinedOrder)
			out[i][c] = ch
		}
	}
	return out, nil
}

// chunkStats reads a chunk's statistics; anything unreadable is nil.
func chunkStats(cc *metadata.ColumnChunkMetaData, typeDefined bool) (cs *ChunkStats) {
	defer func() {
		if recover() != nil {
			cs = nil
		}
	}()
	st, err := cc.Statistics()
	if err != nil || st == nil {
		return nil
	}
	cs = &ChunkStats{TypeDefinedOrder: typeDefined}
	if st.HasNullCount() {
		cs.HasNullCount, cs.NullCount = true, st.NullCount()
	}
	if st.HasMinMax() {
		cs.HasMinMax, cs.Min, cs.Max = true, st.EncodeMin(), st.EncodeMax()
	}
	return cs
}

// ChunkRange is the byte range of a column chunk: from its dictionary page
// (when the writer set a plausible offset) or first data page, for
// total_compressed_size bytes.
func ChunkRange(cc *metadata.ColumnChunkMetaData) (start, length int64) {
	start = cc.DataPageOffset()
	if cc.HasDictionaryPage() {
		if d := cc.DictionaryPageOffset(); d > 0 && d < start {
			start = d
		}
	}
	return start, cc.TotalCompressedSize()
}

func readFull(ctx context.Context, src Source, p []byte, off int64) error {
	n, err := src.ReadAt(ctx, p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("short read: %d of %d bytes at %d", n, len(p), off)
	}
	return err
}

// fromTail returns [off, off+n) when the cached tail covers it.
func (f *Footer) fromTail(off, n int64) ([]byte, bool) {
	if off >= f.tailOffset && off+n <= f.tailOffset+int64(len(f.tail)) {
		return f.tail[off-f.tailOffset : off-f.tailOffset+n], true
	}
	return nil, false
}

// readRange reads bytes, from the tail when possible.
func (f *Footer) readRange(ctx context.Context, off, n int64) ([]byte, error) {
	if b, ok := f.fromTail(off, n); ok {
		return b, nil
	}
	if f.open == nil {
		return nil, fmt.Errorf("%s: no source to read [%d, +%d)", f.ID.Path, off, n)
	}
	src, err := f.open(ctx, f.ID)
	if err != nil {
		return nil, err
	}
	if src.Size() != f.ID.Size {
		return nil, perr.New(perr.FailedPrecondition, "%s changed size (%d, was %d)", f.ID.Path, src.Size(), f.ID.Size)
	}
	buf := make([]byte, n)
	if err := readFull(ctx, src, buf, off); err != nil {
		return nil, err
	}
	if f.cache != nil {
		f.cache.recordRead(n)
	}
	return buf, nil
}

// HasPageIndex reports whether any column chunk announces a page index,
// or a side page index is attached (AttachSidePageIndex).
func (f *Footer) HasPageIndex() bool { return f.hasPageIndex || f.side.any.Load() }

// HasNativePageIndex reports whether any column chunk of the file itself
// announces a page index.
func (f *Footer) HasNativePageIndex() bool { return f.hasPageIndex }

// PageIndex returns the page index of row group rg, loading the page index
// region of the whole file on first use (one read, or none when the tail
// already holds it). A file without a page index returns nil, nil. Parse
// failures of single columns are recorded per column, never fatal.
func (f *Footer) PageIndex(ctx context.Context, rg int) (*RowGroupIndex, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hasPageIndex && f.pageIndex == nil && f.pageIndexErr == nil {
		f.pageIndex, f.pageIndexErr = f.loadPageIndex(ctx)
		if f.pageIndexErr != nil && perr.IsContext(f.pageIndexErr) {
			err := f.pageIndexErr
			f.pageIndexErr = nil
			return nil, err
		}
	}
	if f.pageIndexErr != nil {
		return nil, f.pageIndexErr
	}
	index := f.pageIndex
	if f.side.any.Load() {
		index = f.mergedLocked()
	}
	if rg < 0 || rg >= len(index) {
		return nil, nil
	}
	return index[rg], nil
}

// indexRegion is the byte range holding every column and offset index.
func (f *Footer) indexRegion() (lo, hi int64, ok bool) {
	lo, hi = -1, -1
	for i := range f.Chunks {
		for c := range f.Chunks[i] {
			ch := f.Chunks[i][c]
			for _, loc := range []*metadata.IndexLocation{ch.ColumnIndex, ch.OffsetIndex} {
				if loc == nil || loc.Length <= 0 || loc.Offset < 4 || loc.Offset+int64(loc.Length) > f.MetaOffset {
					continue
				}
				if lo < 0 || loc.Offset < lo {
					lo = loc.Offset
				}
				if end := loc.Offset + int64(loc.Length); end > hi {
					hi = end
				}
			}
		}
	}
	return lo, hi, lo >= 0
}

func (f *Footer) loadPageIndex(ctx context.Context) ([]*RowGroupIndex, error) {
	md := f.Meta
	out := make([]*RowGroupIndex, md.NumRowGroups())
	lo, hi, ok := f.indexRegion()
	if !ok {
		return out, nil
	}
	if hi-lo > MaxFooterBytes {
		return nil, fmt.Errorf("%s: page index region of %d bytes is too large", f.ID.Path, hi-lo)
	}
	region, err := f.readRange(ctx, lo, hi-lo)
	if err != nil {
		return nil, fmt.Errorf("read page index of %s: %w", f.ID.Path, err)
	}
	props := parquet.NewReaderProperties(nil)
	for i := 0; i < md.NumRowGroups(); i++ {
		numRows := md.RowGroup(i).NumRows()
		idx := &RowGroupIndex{Columns: make([]ColumnPageIndex, len(f.Chunks[i]))}
		for c := range f.Chunks[i] {
			ch := f.Chunks[i][c]
			descr := md.Schema.Column(c)
			if loc := ch.ColumnIndex; loc != nil {
				if b, ok := slice(region, lo, loc); ok {
					idx.Columns[c].Column, idx.Columns[c].Err = parseColumnIndex(descr, b, props)
				} else {
					idx.Columns[c].Err = fmt.Errorf("column index location outside the file's index region")
				}
			}
			if loc := ch.OffsetIndex; loc != nil {
				if b, ok := slice(region, lo, loc); ok {
					var err error
					idx.Columns[c].Offset, err = parseOffsetIndex(b, props)
					if err != nil {
						idx.Columns[c].Err = errors.Join(idx.Columns[c].Err, err)
					} else {
						idx.Columns[c].Pages, idx.Columns[c].SpansErr = pagesOf(idx.Columns[c].Offset, ch, numRows)
					}
				} else {
					idx.Columns[c].Err = errors.Join(idx.Columns[c].Err, fmt.Errorf("offset index location outside the file's index region"))
				}
			}
		}
		out[i] = idx
	}
	// The parsed indexes replace the raw region.
	grow := (hi - lo) * 2
	if f.tail != nil {
		grow -= int64(len(f.tail))
		f.tail = nil
	}
	f.size += grow
	if f.cache != nil {
		f.cache.grow(f, grow)
	}
	return out, nil
}

func slice(region []byte, lo int64, loc *metadata.IndexLocation) ([]byte, bool) {
	if loc.Length <= 0 || loc.Offset < lo || loc.Offset+int64(loc.Length) > lo+int64(len(region)) {
		return nil, false
	}
	return region[loc.Offset-lo : loc.Offset-lo+int64(loc.Length)], true
}

func parseColumnIndex(descr *schema.Column, b []byte, props *parquet.ReaderProperties) (ci metadata.ColumnIndex, err error) {
	defer func() {
		if r := recover(); r != nil {
			ci, err = nil, fmt.Errorf("malformed column index: %v", r)
		}
	}()
	ci = metadata.NewColumnIndex(descr, b, props, nil)
	if ci == nil {
		return nil, fmt.Errorf("column index of %s not understood", descr.Path())
	}
	return ci, nil
}

func parseOffsetIndex(b []byte, props *parquet.ReaderProperties) (oi metadata.OffsetIndex, err error) {
	defer func() {
		if r := recover(); r != nil {
			oi, err = nil, fmt.Errorf("malformed offset index: %v", r)
		}
	}()
	oi = metadata.NewOffsetIndex(b, props, nil)
	if oi == nil {
		return nil, fmt.Errorf("offset index not understood")
	}
	return oi, nil
}

// sectionSource adapts a Footer's reads to arrow-go's ReaderAtSeeker for
// the bloom filter reader.
type sectionSource struct {
	ctx context.Context
	f   *Footer
	pos int64
}

func (s *sectionSource) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.f.ID.Size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), s.f.ID.Size-off)
	b, err := s.f.readRange(s.ctx, off, n)
	if err != nil {
		return 0, err
	}
	copy(p, b)
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

func (s *sectionSource) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		s.pos = offset
	case io.SeekCurrent:
		s.pos += offset
	case io.SeekEnd:
		s.pos = s.f.ID.Size + offset
	}
	return s.pos, nil
}

var bufferPool = sync.Pool{New: func() any { return memory.NewResizableBuffer(memory.DefaultAllocator) }}

// BloomFilter is a loaded bloom filter of one column chunk.
type BloomFilter = metadata.BloomFilter

// ReadBloomFilter reads the bloom filter of (rg, col); nil, nil when the
// chunk has none.
func (f *Footer) ReadBloomFilter(ctx context.Context, rg, col int) (bf BloomFilter, err error) {
	defer func() {
		if r := recover(); r != nil {
			bf, err = nil, fmt.Errorf("malformed bloom filter: %v", r)
		}
	}()
	rdr := &metadata.BloomFilterReader{Input: &sectionSource{ctx: ctx, f: f}, FileMetadata: f.Meta,
		Props: parquet.NewReaderProperties(nil), BufferPool: &bufferPool}
	rgr, err := rdr.RowGroup(rg)
	if err != nil {
		return nil, err
	}
	return rgr.GetColumnBloomFilter(col)
}
