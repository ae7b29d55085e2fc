package connector

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pagedecode"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	_ "github.com/lakeweed/seaweedfs/weed/pushdown/pqcodec" // zstd pages decoded with klauspost's fast copies
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// fileLayout is what decoding one file needs to know.
type fileLayout struct {
	path    string
	size    int64
	md      *metadata.FileMetaData
	arrow   *arrow.Schema // the file's Arrow schema (stored ARROW:schema when present)
	columns *plan.ColumnMap
	chunks  [][]footer.Chunk
	// topOf[leaf] is the top-level field index of a leaf column.
	topOf []int
	// leavesOf[top] are the leaf columns of a top-level field.
	leavesOf [][]int
	// consts are fields read as the file's identity-partition values
	// (constants.go): the file does not store them by field id, so any
	// column the name mapping finds for them is not read. defaults are the
	// query's initial-defaults overlaid with consts.
	consts   map[int]fieldDefault
	defaults map[int]fieldDefault
	// mapping is the name mapping columns was built with; meta the cached
	// footer entry the layout came from (nil: not cached).
	mapping iceberg.NameMapping
	meta    *fileMeta
	// bare is md without its key-value metadata (the stored ARROW:schema),
	// and bareOK[top] tells whether pqarrow infers top's Arrow type from
	// the Parquet schema alone (bareMeta).
	bare   *metadata.FileMetaData
	bareOK []bool
	// inferred is the Arrow schema pqarrow infers from the Parquet schema
	// alone (nil when it cannot): what pages decode as before a cast to
	// the file's type (decodePages); manifest is pqarrow's manifest of it
	// (each field's levels: a list's planned pages decode with them).
	inferred *arrow.Schema
	manifest *pqarrow.SchemaManifest
}

func newFileLayout(path string, size int64, md *metadata.FileMetaData, nm iceberg.NameMapping) (*fileLayout, error) {
	as, err := pqarrow.FromParquet(md.Schema, &pqarrow.ArrowReadProperties{}, md.KeyValueMetadata())
	if err != nil {
		return nil, fmt.Errorf("%s: Arrow schema: %w", path, err)
	}
	fl := &fileLayout{path: path, size: size, md: md, arrow: as, columns: plan.NewColumnMap(md.Schema, nm), mapping: nm}
	// the Parquet schema alone (no stored Arrow schema): its manifest and
	// the Arrow schema it gives, as pqarrow.FromParquet makes it
	if m, err := pqarrow.NewSchemaManifest(md.Schema, nil, &pqarrow.ArrowReadProperties{}); err == nil && md.FileMetaData != nil && len(m.Fields) == as.NumFields() {
		fields := make([]arrow.Field, len(m.Fields))
		for i, f := range m.Fields {
			fields[i] = *f.Field
		}
		inferred := arrow.NewSchema(fields, nil)
		fl.inferred, fl.manifest = inferred, m
		fl.bareOK = make([]bool, as.NumFields())
		for i := range fl.bareOK {
			fl.bareOK[i] = arrow.TypeEqual(inferred.Field(i).Type, as.Field(i).Type)
		}
		bare, inner := *md, *md.FileMetaData
		inner.KeyValueMetadata = nil
		bare.FileMetaData = &inner
		fl.bare = &bare
	}
	root := md.Schema.Root()
	fl.leavesOf = make([][]int, root.NumFields())
	fl.topOf = make([]int, md.Schema.NumColumns())
	for c := 0; c < md.Schema.NumColumns(); c++ {
		top := md.Schema.ColumnRoot(c)
		idx := root.FieldIndexByName(top.Name())
		fl.topOf[c] = idx
		if idx >= 0 {
			fl.leavesOf[idx] = append(fl.leavesOf[idx], c)
		}
	}
	return fl, nil
}

// topFieldOf returns the top-level field index holding Iceberg field id.
func (fl *fileLayout) topFieldOf(id int) (int, bool) {
	if _, ok := fl.consts[id]; ok {
		return -1, false
	}
	leaves := fl.columns.Leaves(id)
	if len(leaves) == 0 {
		return -1, false
	}
	return fl.topOf[leaves[0]], true
}

// rowGroupRead is what to decode of one row group.
type rowGroupRead struct {
	rg      int
	numRows int64
	rows    plan.RowSet         // nil: every row
	pages   map[int][]pageRange // per leaf column: the planned pages (page-aware mode)
	dict    map[int]byteRange   // per leaf column: the dictionary region
	// firstRow is the file position of the row group's first row; deleted
	// holds the deleted file positions inside it (nil: none).
	firstRow int64
	deleted  *roaring64.Bitmap
	// late are top-level fields read after the predicate (late.go).
	late []int
	// exact: the planned rows (less the deleted) are exactly the matching
	// ones (RowGroupRef.rows_exact): the predicate is not evaluated.
	exact bool
}

type pageRange struct {
	byteRange
	firstRow, rowCount int64
	// a list's page (decode_lists.go): its first levels end row
	// firstRow-1; its last row continues into the next page
	startsInside, endsInside bool
}

// pageRangeOf is the pageRange of a page of a page index (of a flat
// column: a list's pages say endsInside too, which pg does not).
func pageRangeOf(pg footer.Page) pageRange {
	return pageRange{byteRange: byteRange{Off: pg.Offset, Len: pg.Length}, firstRow: pg.FirstRow, rowCount: pg.EndRow - pg.FirstRow, startsInside: pg.StartsInsideRow}
}

// column is a decoded top-level field of one row group: arr holds values
// for the rows listed in rows (nil rows: the rows from first on, position
// = row - first).
type column struct {
	arr   arrow.Array
	rows  []int64
	first int64
}

func (c *column) index(row int64) int {
	if c.rows == nil {
		return int(row - c.first)
	}
	i := sort.Search(len(c.rows), func(i int) bool { return c.rows[i] >= row })
	if i < len(c.rows) && c.rows[i] == row {
		return i
	}
	return -1
}

// pageAwareOK reports whether a top-level field can be decoded from its
// planned pages: one leaf, non-repeated or the element column of a flat
// list, with planned pages in this row group, of a shape and type the page
// decoders build (pagesDecodable). The planner plans a
// repeated column's pages only from a page_index side index, which says
// which pages start or end inside a row (not every writer starts them at
// rows); planned pages of a list the decoder does not understand read the
// chunk whole.
func (fl *fileLayout) pageAwareOK(top int, r *rowGroupRead) bool {
	if r.rows == nil || len(fl.leavesOf[top]) != 1 {
		return false
	}
	leaf := fl.leavesOf[top][0]
	pages, ok := r.pages[leaf]
	if !ok || !fl.pagesDecodable(top, r.rg) {
		return false
	}
	switch fl.md.Schema.Column(leaf).MaxRepetitionLevel() {
	case 0:
		return true
	case 1:
		return listPagesUnderstood(pages, fl.chunks[r.rg][leaf], r.numRows)
	}
	return false
}

// pagesLocate says every one of tops decodes from r's planned pages.
func (fl *fileLayout) pagesLocate(tops []int, r *rowGroupRead, pageAware bool) bool {
	for _, top := range tops {
		if !pageAware || !fl.pageAwareOK(top, r) {
			return false
		}
	}
	return true
}

// needRanges returns the byte ranges decoding tops of r requires.
func (fl *fileLayout) needRanges(tops []int, r *rowGroupRead, pageAware bool) []byteRange {
	var out []byteRange
	for _, top := range tops {
		if pageAware && fl.pageAwareOK(top, r) {
			leaf := fl.leavesOf[top][0]
			if d, ok := r.dict[leaf]; ok {
				out = append(out, d)
			}
			for _, p := range r.pages[leaf] {
				out = append(out, p.byteRange)
			}
			continue
		}
		for _, leaf := range fl.leavesOf[top] {
			ch := fl.chunks[r.rg][leaf]
			out = append(out, byteRange{Off: ch.Start, Len: ch.Length})
		}
	}
	return out
}

// decodeWhole decodes top-level fields of a row group from whole chunks.
func decodeWhole(ctx context.Context, fl *fileLayout, sf *sparseFile, rg int, tops []int) (map[int]*column, error) {
	out := map[int]*column{}
	var rest []int
	for _, top := range tops {
		if a, ok := dictionaryFromRuns(fl, sf, rg, top); ok {
			out[top] = &column{arr: a}
			continue
		}
		rest = append(rest, top)
	}
	tops = rest
	fr, leaves, err := wholeChunkReader(fl, sf, rg, tops, false)
	if err != nil || len(leaves) == 0 {
		return out, err
	}
	tbl, err := fr.ReadRowGroups(ctx, leaves, []int{rg})
	if err != nil {
		return nil, fmt.Errorf("%s row group %d: %w", fl.path, rg, err)
	}
	defer tbl.Release()
	for i := 0; i < int(tbl.NumCols()); i++ {
		arr, err := concat(tbl.Column(i).Data().Chunks())
		if err != nil {
			return nil, err
		}
		out[fl.topNamed(tbl.Schema().Field(i).Name)] = &column{arr: arr}
	}
	return out, nil
}

// dictionaryFromRuns is top's whole chunk of row group rg decoded as the
// Arrow dictionary pqarrow reads it as (readsAsDict), straight from its
// index runs (pagedecode.DictionaryArray); ok is false when it is not
// read as a dictionary or cannot be decoded so (pqarrow then reads it,
// and says what is wrong with it).
func dictionaryFromRuns(fl *fileLayout, sf *sparseFile, rg, top int) (arrow.Array, bool) {
	if !fl.readsAsDict(rg, top) {
		return nil, false
	}
	leaf := fl.leavesOf[top][0]
	cc, chunk, held := fl.wholeChunk(sf, rg, leaf)
	if !held {
		return nil, false
	}
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: fl.arrow.Field(top).Type}
	a, err := pagedecode.DictionaryArray(fl.md.Schema.Column(leaf), cc.Compression(), chunk, fl.md.RowGroup(rg).NumRows(), dt, decodeMem)
	if err != nil {
		return nil, false
	}
	return a, true
}

// wholeChunk is leaf's chunk of row group rg and its bytes in sf, from
// its dictionary page on; held is false when sf does not hold them all.
func (fl *fileLayout) wholeChunk(sf *sparseFile, rg, leaf int) (cc *metadata.ColumnChunkMetaData, chunk []byte, held bool) {
	cc, err := fl.md.RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		return nil, nil, false
	}
	start, length := footer.ChunkRange(cc)
	chunk, held = sf.bytesAt(start, length)
	return cc, chunk, held
}

// wholeChunkReader is arrow-go's reader of tops' whole chunks of row group
// rg in sf (string columns as dictionaries where readsAsDict), and their
// leaves; stream: a chunk's bytes are taken from sf as its pages are read,
// not at once.
func wholeChunkReader(fl *fileLayout, sf *sparseFile, rg int, tops []int, stream bool) (*pqarrow.FileReader, []int, error) {
	var leaves []int
	for _, top := range tops {
		leaves = append(leaves, fl.leavesOf[top]...)
	}
	if len(leaves) == 0 {
		return nil, nil, nil
	}
	rp := readProps()
	if stream {
		rp.BufferSize = streamBufferBytes
	}
	rdr, err := file.NewParquetReader(sf, file.WithMetadata(fl.bareMeta(tops)), file.WithReadProps(rp))
	if err != nil {
		return nil, nil, err
	}
	props := pqarrow.ArrowReadProperties{BatchSize: 1 << 16, Parallel: len(leaves) > 1}
	for _, top := range tops {
		if fl.readsAsDict(rg, top) {
			props.SetReadDict(fl.leavesOf[top][0], true)
		}
	}
	fr, err := pqarrow.NewFileReader(rdr, props, decodeMem)
	if err != nil {
		return nil, nil, err
	}
	return fr, leaves, nil
}

// bareMeta is the footer to decode tops with: fl.md, or fl.bare when
// pqarrow infers each of tops' Arrow types without the stored Arrow
// schema — then arrow-go does not parse that schema again for every row
// group it decodes (3% of a warm point lookup's CPU).
func (fl *fileLayout) bareMeta(tops []int) *metadata.FileMetaData {
	if fl.bare == nil {
		return fl.md
	}
	for _, top := range tops {
		if top < 0 || top >= len(fl.bareOK) || !fl.bareOK[top] {
			return fl.md
		}
	}
	return fl.bare
}

// topNamed is the index of the top-level field named name.
func (fl *fileLayout) topNamed(name string) int {
	return fl.md.Schema.Root().FieldIndexByName(name)
}

// streamBufferBytes is a streamed chunk's read buffer (a larger page
// grows it).
const streamBufferBytes = 32 << 10

// chunkStream decodes top-level fields of one row group from whole chunks
// a window of rows at a time, reading (decompressing) pages only as far as
// the windows reach: a LIMIT stops decoding where it is met.
type chunkStream struct {
	fl      *fileLayout
	rg      int
	readers []*pqarrow.ColumnReader
	tops    []int // the top-level field each reader decodes
	at      int64 // the next row to decode
	numRows int64
}

func newChunkStream(ctx context.Context, fl *fileLayout, sf *sparseFile, rg int, tops []int) (*chunkStream, error) {
	s := &chunkStream{fl: fl, rg: rg, numRows: fl.md.RowGroup(rg).NumRows()}
	fr, leaves, err := wholeChunkReader(fl, sf, rg, tops, true)
	if err != nil || len(leaves) == 0 {
		return s, err
	}
	readers, sch, err := fr.GetFieldReaders(ctx, leaves, []int{rg})
	if err != nil {
		return nil, fmt.Errorf("%s row group %d: %w", fl.path, rg, err)
	}
	s.readers = readers
	for i := range readers {
		s.tops = append(s.tops, fl.topNamed(sch.Field(i).Name))
	}
	return s, nil
}

// next decodes the next window of at most n rows: the columns, whose
// first row is the window's.
func (s *chunkStream) next(n int64) (map[int]*column, error) {
	first := s.at
	n = min(n, s.numRows-first)
	out := map[int]*column{}
	for i, rdr := range s.readers {
		ch, err := rdr.NextBatch(n)
		if err != nil {
			releaseColumns(out)
			return nil, fmt.Errorf("%s row group %d rows from %d: %w", s.fl.path, s.rg, first, err)
		}
		arr, err := concat(ch.Chunks())
		ch.Release()
		if err != nil {
			releaseColumns(out)
			return nil, err
		}
		out[s.tops[i]] = &column{arr: arr, first: first}
		if int64(arr.Len()) != n {
			releaseColumns(out)
			return nil, fmt.Errorf("%s row group %d: column %s decodes %d of %d rows from row %d", s.fl.path, s.rg, s.fl.arrow.Field(s.tops[i]).Name, arr.Len(), n, first)
		}
	}
	s.at += n
	return out, nil
}

func (s *chunkStream) release() {
	for _, rdr := range s.readers {
		rdr.Release()
	}
}

func releaseColumns(cols map[int]*column) {
	for _, col := range cols {
		col.arr.Release()
	}
}

// dictEligible reports whether a top-level field is decoded as an Arrow
// dictionary (its indices, values once): one non-repeated string or
// binary leaf. The filter evaluates a dictionary's values once; the
// projection takes the matching rows' values.
func (fl *fileLayout) dictEligible(top int) bool {
	if !fl.lateEligible(top) || fl.md.Schema.Column(fl.leavesOf[top][0]).PhysicalType() != parquet.Types.ByteArray {
		return false
	}
	switch fl.arrow.Field(top).Type.ID() {
	case arrow.STRING, arrow.BINARY:
		return true
	}
	return false
}

// readsAsDict reports whether top decodes as an Arrow dictionary in row
// group rg: dictEligible, and every data page of its chunk is
// dictionary-encoded (encoding stats say so). A chunk whose writer fell
// back to PLAIN pages (a column of mostly distinct values) decodes as
// plain strings: read as a dictionary, arrow-go would hash every value
// into a new dictionary (a third of the 1% ts query's CPU, for its
// message column).
func (fl *fileLayout) readsAsDict(rg, top int) bool {
	return fl.dictEligible(top) && fl.chunks[rg][fl.leavesOf[top][0]].DictionaryOnly
}

func concat(chunks []arrow.Array) (arrow.Array, error) {
	if len(chunks) == 1 {
		chunks[0].Retain()
		return chunks[0], nil
	}
	return array.Concatenate(chunks, decodeMem)
}

// decodePages decodes one single-leaf top-level field from its planned
// pages only, with the page decoders of pagedecode (arrow-go's page and
// record readers over the pages' bytes, no file built around them): a
// flat column or a struct of one leaf (decodeFlatPages), a list of one
// (decodeListPages). pageAwareOK plans pages only for the fields they
// build (pagesDecodable); any other reads its chunks whole.
func decodePages(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, top int) (*column, error) {
	leaf := fl.leavesOf[top][0]
	if fl.md.Schema.Column(leaf).MaxRepetitionLevel() > 0 {
		return decodeListPages(ctx, fl, sf, r, top)
	}
	col, ok, err := decodeFlatPages(ctx, fl, sf, r, top)
	if !ok && err == nil {
		err = fmt.Errorf("%s row group %d column %s: no page decoder builds its pages", fl.path, r.rg, fl.md.Schema.Column(leaf).Path())
	}
	return col, err
}

// pagesDecodable reports whether decodePages builds top of row group rg
// from pages: a flat leaf of a type pagedecode.Records builds (as a
// dictionary where readsAsDict), a struct of one such leaf, a list or
// large list of one. The decoders take the same rules (flatPagesType,
// oneLeafField), so a field called decodable is decoded.
func (fl *fileLayout) pagesDecodable(top, rg int) bool {
	if fl.md.Schema.Root().Field(top).Type() == schema.Primitive {
		_, _, ok := fl.flatPagesType(rg, top)
		return ok
	}
	_, ok := fl.oneLeafField(top, pagedecode.StructRecordsBuilds)
	if !ok {
		_, ok = fl.oneLeafField(top, pagedecode.ListRecordsBuilds)
	}
	return ok
}

// flatPagesType is the Arrow type a flat leaf's pages decode to in row
// group rg: the type pqarrow infers from the Parquet schema, a dictionary
// of it where readsAsDict; ok is false when pagedecode.Records does not
// build it.
func (fl *fileLayout) flatPagesType(rg, top int) (typ arrow.DataType, dict, ok bool) {
	if fl.inferred == nil {
		return nil, false, false
	}
	typ = fl.inferred.Field(top).Type
	if dict = fl.readsAsDict(rg, top); dict {
		typ = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: typ}
	}
	return typ, dict, pagedecode.RecordsType(fl.md.Schema.Column(fl.leavesOf[top][0]), typ)
}

// oneLeafField is pqarrow's manifest field of top, a field of one leaf,
// when builds (pagedecode.StructRecordsBuilds or ListRecordsBuilds) says
// its page decoder builds it.
func (fl *fileLayout) oneLeafField(top int, builds func(pqarrow.SchemaField, *schema.Column) bool) (pqarrow.SchemaField, bool) {
	if fl.manifest == nil || top >= len(fl.manifest.Fields) || len(fl.leavesOf[top]) != 1 {
		return pqarrow.SchemaField{}, false
	}
	f := fl.manifest.Fields[top]
	return f, builds(f, fl.md.Schema.Column(fl.leavesOf[top][0]))
}

// decodeFlatPages decodes a top-level, non-repeated leaf from its planned
// pages with pagedecode.Records (no file built around them): as the type
// pqarrow infers from the Parquet schema (a dictionary where readsAsDict),
// then cast to the file's type as decodePages does. ok is false when
// Records does not build the column's type (nothing was read).
func decodeFlatPages(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, top int) (col *column, ok bool, err error) {
	leaf := fl.leavesOf[top][0]
	if fl.md.Schema.Root().Field(top).Type() != schema.Primitive {
		return decodeStructPages(ctx, fl, sf, r, top)
	}
	descr := fl.md.Schema.Column(leaf)
	typ, dict, ok := fl.flatPagesType(r.rg, top)
	if !ok {
		return nil, false, nil
	}
	pp, err := fl.plannedPages(sf, r, leaf)
	if err != nil {
		return nil, true, err
	}
	rows := pp.rows
	arr, _, err := pagedecode.Records(descr, pp.codec, pp.bytes, int64(len(rows)), typ, decodeMem)
	if err != nil {
		return nil, true, fmt.Errorf("%s row group %d column %s: decode pages: %w", fl.path, r.rg, descr.Path(), err)
	}
	if arr, err = asFileType(ctx, fl, top, arr, dict); err != nil {
		return nil, true, err
	}
	return &column{arr: arr, rows: rows}, true, nil
}

// decodeStructPages decodes a top-level struct whose one child is a
// leaf from its planned pages with pagedecode.StructRecords; ok is false
// for any other shape (nothing was read).
func decodeStructPages(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, top int) (col *column, ok bool, err error) {
	st, ok := fl.oneLeafField(top, pagedecode.StructRecordsBuilds)
	if !ok {
		return nil, false, nil
	}
	leaf := fl.leavesOf[top][0]
	pp, err := fl.plannedPages(sf, r, leaf)
	if err != nil {
		return nil, true, err
	}
	rows := pp.rows
	descr := fl.md.Schema.Column(leaf)
	arr, ok, err := pagedecode.StructRecords(st, descr, pp.codec, pp.bytes, int64(len(rows)), decodeMem)
	if err != nil {
		return nil, true, fmt.Errorf("%s row group %d column %s: decode pages: %w", fl.path, r.rg, descr.Path(), err)
	}
	if !ok {
		return nil, false, nil
	}
	if arr, err = asFileType(ctx, fl, top, arr, false); err != nil {
		return nil, true, err
	}
	return &column{arr: arr, rows: rows}, true, nil
}

// leafPages are one leaf's planned pages of a row group as the page
// decoders take them: their bytes (the dictionary region first), the
// chunk's codec and the pages' row-group-local rows.
type leafPages struct {
	bytes []byte
	codec compress.Compression
	rows  []int64
}

// plannedPages are leaf's planned pages of r, from sf.
func (fl *fileLayout) plannedPages(sf *sparseFile, r *rowGroupRead, leaf int) (leafPages, error) {
	buf, err := pageBytes(sf, r, leaf)
	if err != nil {
		return leafPages{}, err
	}
	cc, err := fl.md.RowGroup(r.rg).ColumnChunk(leaf)
	if err != nil {
		return leafPages{}, fmt.Errorf("%s row group %d: page decoder: %w", fl.path, r.rg, err)
	}
	return leafPages{bytes: buf, codec: cc.Compression(), rows: pagesRows(r.pages[leaf])}, nil
}

// pagesRows are the row-group-local rows of pages, in order.
func pagesRows(pages []pageRange) []int64 {
	n := int64(0)
	for _, p := range pages {
		n += p.rowCount
	}
	rows := make([]int64, 0, n)
	for _, p := range pages {
		for i := int64(0); i < p.rowCount; i++ {
			rows = append(rows, p.firstRow+i)
		}
	}
	return rows
}

// asFileType is arr (decoded pages of top, typed as pqarrow infers from
// the Parquet schema; a dictionary of its values where dict) cast to the
// file's Arrow type of top (a zone, a large string, list element names of
// the stored schema); arr is released when replaced.
func asFileType(ctx context.Context, fl *fileLayout, top int, arr arrow.Array, dict bool) (arrow.Array, error) {
	want := fl.arrow.Field(top).Type
	if arrow.TypeEqual(arr.DataType(), want) || dict && isDictionaryOf(arr.DataType(), want) {
		return arr, nil
	}
	cast, err := compute.CastArray(ctx, arr, compute.SafeCastOptions(want))
	arr.Release()
	if err != nil {
		return nil, fmt.Errorf("%s column %s: pages decode as %s, the file's type is %s: %w", fl.path, fl.arrow.Field(top).Name, arr.DataType(), want, err)
	}
	return cast, nil
}

// isDictionaryOf reports whether t is a dictionary of values of type want.
func isDictionaryOf(t, want arrow.DataType) bool {
	d, ok := t.(*arrow.DictionaryType)
	return ok && arrow.TypeEqual(d.ValueType, want)
}

// cloneNode copies a schema subtree (nodes link to their parents, so the
// file's own schema must not be re-parented).
func cloneNode(n schema.Node) (schema.Node, error) {
	switch x := n.(type) {
	case *schema.PrimitiveNode:
		return schema.NewPrimitiveNodeLogical(x.Name(), x.RepetitionType(), x.LogicalType(), x.PhysicalType(), x.TypeLength(), x.FieldID())
	case *schema.GroupNode:
		var kids schema.FieldList
		for i := 0; i < x.NumFields(); i++ {
			k, err := cloneNode(x.Field(i))
			if err != nil {
				return nil, err
			}
			kids = append(kids, k)
		}
		if lt := x.LogicalType(); lt != nil && lt.IsValid() && !lt.IsNone() {
			return schema.NewGroupNodeLogical(x.Name(), x.RepetitionType(), kids, lt, x.FieldID())
		}
		return schema.NewGroupNodeConverted(x.Name(), x.RepetitionType(), kids, x.ConvertedType(), x.FieldID())
	}
	return nil, fmt.Errorf("unknown schema node %T", n)
}

// parentIDs maps each nested field id to its enclosing struct's field id.
func parentIDs(s *iceberg.Schema) map[int]int {
	out := map[int]int{}
	var walk func(parent int, t iceberg.Type)
	walk = func(parent int, t iceberg.Type) {
		if st, ok := t.(*iceberg.StructType); ok {
			for _, f := range st.FieldList {
				if parent > 0 {
					out[f.ID] = parent
				}
				walk(f.ID, f.Type)
			}
		}
	}
	st := s.AsStruct()
	walk(0, &st)
	return out
}

func containsID(n schema.Node, id int) bool {
	if n.FieldID() == int32(id) {
		return true
	}
	if g, ok := n.(*schema.GroupNode); ok {
		for j := 0; j < g.NumFields(); j++ {
			if containsID(g.Field(j), id) {
				return true
			}
		}
	}
	return false
}

// decodeTops decodes tops of r: planned pages where the plan gave them
// (page-aware mode), whole chunks otherwise.
func decodeTops(ctx context.Context, fl *fileLayout, sf *sparseFile, r *rowGroupRead, tops []int, pageAware bool, cols map[int]*column) error {
	if pageAware {
		// few rows of the pages: only those (decode_sparse.go)
		var err error
		if tops, err = decodeSparseTops(ctx, fl, sf, r, tops, cols); err != nil {
			return err
		}
	}
	var whole, paged []int
	for _, top := range tops {
		if pageAware && fl.pageAwareOK(top, r) && !fl.pagesTileChunk(top, r) {
			paged = append(paged, top)
		} else {
			whole = append(whole, top)
		}
	}
	// the paged columns one job each, the whole chunks one job (its
	// columns decode in parallel too): a row group's columns use every core
	pagedCols := make([]*column, len(paged))
	errs := make([]error, len(paged)+1)
	var wcols map[int]*column
	parallel(len(paged)+1, func(i int) {
		if i == len(paged) {
			wcols, errs[i] = decodeWhole(ctx, fl, sf, r.rg, whole)
			return
		}
		pagedCols[i], errs[i] = decodePages(ctx, fl, sf, r, paged[i])
	})
	for i, top := range paged {
		if pagedCols[i] != nil {
			cols[top] = pagedCols[i]
		}
	}
	for top, col := range wcols {
		cols[top] = col
	}
	return errors.Join(errs...)
}

// parallel runs run(0..n-1) on up to GOMAXPROCS goroutines, this one among
// them, and returns when every run has (safe.ForEach, an index a pull).
func parallel(n int, run func(i int)) {
	safe.ForEach(n, runtime.GOMAXPROCS(0), 1, func(i, _ int) { run(i) })
}

// pagesTileChunk reports whether the planned pages of top (one leaf) and
// its dictionary region are the whole column chunk, back to back: then the
// chunk decodes whole, in one pass, from the same bytes.
func (fl *fileLayout) pagesTileChunk(top int, r *rowGroupRead) bool {
	leaf := fl.leavesOf[top][0]
	ch := fl.chunks[r.rg][leaf]
	at := ch.Start
	if d, ok := r.dict[leaf]; ok {
		if d.Off != at {
			return false
		}
		at += d.Len
	}
	for _, p := range r.pages[leaf] {
		if p.Off != at {
			return false
		}
		at += p.Len
	}
	return at == ch.Start+ch.Length
}

// Late materialization, page-aware mode, in a row group the plan did not
// narrow to row ranges (an unclustered column: bloom filters keep the row
// group, page statistics cannot locate the row):
//
//	round 1: predicate columns (whole chunks) + offset indexes of the others
//	         (unless the footer cache holds them parsed)
//	         ── predicate ──▶ matching rows
//	round 2: for each other column, the pages holding a matching row (and
//	         its dictionary region), or the whole chunk when that is not
//	         smaller by half; nothing when no row matched
//
// An offset index that is missing, malformed or inconsistent with its chunk
// makes that column read whole: it costs bytes, never rows.

// lateEligible reports whether a top-level field could be read page by
// page: one non-repeated leaf.
func (fl *fileLayout) lateEligible(top int) bool {
	leaves := fl.leavesOf[top]
	return len(leaves) == 1 && fl.md.Schema.Column(leaves[0]).MaxRepetitionLevel() == 0
}

// offsetIndexRanges are the offset indexes of tops' leaves in row group rg
// that are not parsed in the footer cache yet.
func (fl *fileLayout) offsetIndexRanges(rg int, tops []int) []byteRange {
	var out []byteRange
	for _, top := range tops {
		for _, leaf := range fl.leavesOf[top] {
			if fl.meta != nil {
				if _, ok := fl.meta.offsetIndexes.Load([2]int{rg, leaf}); ok {
					continue
				}
			}
			if loc := fl.chunks[rg][leaf].OffsetIndex; validIndexLocation(loc, fl.size) {
				out = append(out, byteRange{Off: loc.Offset, Len: int64(loc.Length)})
			}
		}
	}
	return out
}

func validIndexLocation(loc *metadata.IndexLocation, size int64) bool {
	return loc != nil && loc.Length > 0 && loc.Offset >= 0 && loc.Offset+int64(loc.Length) <= size
}

// offsetIndex is leaf's parsed offset index in row group rg: from the
// footer cache, or parsed from sf (and cached); nil when unusable.
func (fl *fileLayout) offsetIndex(sf *sparseFile, rg, leaf int) metadata.OffsetIndex {
	key := [2]int{rg, leaf}
	if fl.meta != nil {
		if oi, ok := fl.meta.offsetIndexes.Load(key); ok {
			idx, _ := oi.(metadata.OffsetIndex)
			return idx
		}
	}
	loc := fl.chunks[rg][leaf].OffsetIndex
	if !validIndexLocation(loc, fl.size) {
		return nil
	}
	b := make([]byte, loc.Length)
	if _, err := sf.ReadAt(b, loc.Offset); err != nil {
		return nil // not fetched: read whole, not cached
	}
	oi, err := footer.ParseOffsetIndex(b)
	if err != nil {
		oi = nil
	}
	if fl.meta != nil {
		fl.meta.offsetIndexes.Store(key, oi)
	}
	return oi
}

// latePages selects the pages of top's leaf in row group r.rg that hold a
// row of rows, with the chunk's dictionary region; ok is false when the
// offset index is unusable (and no earlier read listed the pages from
// their headers) or the selection is not at most half the chunk.
func (fl *fileLayout) latePages(sf *sparseFile, r *rowGroupRead, top int, rows plan.RowSet) (pages []pageRange, dict byteRange, ok bool) {
	leaf := fl.leavesOf[top][0]
	ch := fl.chunks[r.rg][leaf]
	oi := fl.offsetIndex(sf, r.rg, leaf)
	if oi == nil {
		// no offset index: the pages an earlier read found by their
		// headers (headerPagesOf), if any
		if all, ok := fl.metaHeaderPages([2]int{r.rg, leaf}); ok && all != nil {
			return pagesWithRows(all, ch, rows)
		}
		return nil, byteRange{}, false
	}
	all, err := footer.PagesOf(oi, ch, r.numRows)
	if err != nil {
		return nil, byteRange{}, false
	}
	return pagesWithRows(all, ch, rows)
}

// pagesWithRows selects the pages of all (a chunk's, in row order) that
// hold a row of rows, with the chunk's dictionary region (the bytes before
// its first page); ok is false when none does or the selection is not at
// most half the chunk.
func pagesWithRows(all []footer.Page, ch footer.Chunk, rows plan.RowSet) (pages []pageRange, dict byteRange, ok bool) {
	if len(all) == 0 {
		return nil, byteRange{}, false
	}
	if first := all[0].Offset; first > ch.Start {
		dict = byteRange{Off: ch.Start, Len: first - ch.Start}
	}
	total := dict.Len
	k := 0
	for _, pg := range all {
		for k < len(rows) && rows[k].End <= pg.FirstRow {
			k++
		}
		if k < len(rows) && rows[k].Start < pg.EndRow {
			pages = append(pages, pageRangeOf(pg))
			total += pg.Length
		}
	}
	if len(pages) == 0 || 2*total > ch.Length {
		return nil, byteRange{}, false
	}
	return pages, dict, true
}

// lateRead is round 2 of late materialization: what to decode of r's late
// columns for the matching rows keep, and the byte ranges that takes.
type lateRead struct {
	sel         *rowGroupRead
	wholeChunks []byteRange // late columns read whole
	pageRanges  []byteRange // dictionaries and pages of the others
}

func (fl *fileLayout) lateRead(sf *sparseFile, r *rowGroupRead, keep []int64) lateRead {
	lr := lateRead{sel: &rowGroupRead{rg: r.rg, numRows: r.numRows, pages: map[int][]pageRange{}, dict: map[int]byteRange{}}}
	lr.sel.rows = rangesOf(keep)
	for _, top := range r.late {
		if pages, dict, ok := fl.latePages(sf, r, top, lr.sel.rows); ok {
			leaf := fl.leavesOf[top][0]
			lr.sel.pages[leaf] = pages
			if dict.Len > 0 {
				lr.sel.dict[leaf] = dict
				lr.pageRanges = append(lr.pageRanges, dict)
			}
			for _, pg := range pages {
				lr.pageRanges = append(lr.pageRanges, pg.byteRange)
			}
			continue
		}
		for _, leaf := range fl.leavesOf[top] {
			ch := fl.chunks[r.rg][leaf]
			lr.wholeChunks = append(lr.wholeChunks, byteRange{Off: ch.Start, Len: ch.Length})
		}
	}
	return lr
}

// rangesOf is the row set of ascending rows, as runs.
func rangesOf(rows []int64) plan.RowSet {
	runs := 0
	for i, k := range rows {
		if i == 0 || rows[i-1]+1 != k {
			runs++
		}
	}
	out := make(plan.RowSet, 0, runs)
	for _, k := range rows {
		if n := len(out); n > 0 && out[n-1].End == k {
			out[n-1].End = k + 1
			continue
		}
		out = append(out, plan.RowRange{Start: k, End: k + 1})
	}
	return out
}

// readProps are the page decoders' reader properties. Buffered streams:
// arrow-go's unbuffered stream copies each column chunk, already in
// memory here, into a fresh buffer of its size.
func readProps() *parquet.ReaderProperties {
	p := parquet.NewReaderProperties(decodeMem)
	p.BufferedStreamEnabled = true
	return p
}

// decodedCountKey keys the query's count of rows decoded (Stats.RowsDecoded)
// in its context.
type decodedCountKey struct{}

// countDecoded adds n rows decoded to the query's count.
func countDecoded(ctx context.Context, n int64) {
	if c, _ := ctx.Value(decodedCountKey{}).(*atomic.Int64); c != nil {
		c.Add(n)
	}
}
