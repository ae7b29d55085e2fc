package volume

// Sparse decode on the volume: a ScanRows row group whose candidates are
// few against its rows decodes the predicate's columns at the candidates
// only, and the projection at the matching rows only — from the pages
// holding them (the footer's page index, else the chunk's page headers),
// the values between them skipped (pagedecode):
//
//	candidates ≤ rows/sparseShare, every predicate column flat with a
//	plain Arrow image
//	   ─▶ per predicate column: pages holding a candidate ─▶ pagedecode.Runs
//	   ─▶ colfilter on the candidates' values ─▶ matching rows
//	   ─▶ per projected column: the predicate's values taken at the matches,
//	      or its pages holding a match decoded there, or (a list, a
//	      converted type) the whole column decoded and taken
//	   ─▶ columns aligned with the matching rows, sliced into batches
//
// Anything else decodes whole (scanRowGroup's other path).

import (
	"context"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/arrowmem"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pagedecode"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// sparseShare: a row group decodes sparsely when its candidates are at
// most 1/sparseShare of its rows.
const sparseShare = 8

// scanFile is what a ScanRows call keeps of its file: the Arrow reader,
// the file's bytes, and which top-level columns decode sparsely.
type scanFile struct {
	fr *pqarrow.FileReader
	// frDict reads the flat string and binary columns as Arrow
	// dictionaries (predReader; made on first use).
	frDict *pqarrow.FileReader
	src    footer.Source
	ft     *footer.Footer
	arrow  *arrow.Schema   // the file's Arrow schema (what a whole decode gives)
	plain  map[string]bool // root column name → flat, its Arrow type the plain image of its values
}

func newScanFile(fr *pqarrow.FileReader, src footer.Source, ft *footer.Footer) *scanFile {
	sf := &scanFile{fr: fr, src: src, ft: ft}
	if len(ft.Chunks) != ft.Meta.NumRowGroups() {
		return sf // no chunk layout: nothing decodes sparsely
	}
	var err error
	if sf.arrow, err = fr.Schema(); err != nil {
		return sf // nothing decodes sparsely
	}
	sf.plain = plainColumns(ft, sf.arrow)
	return sf
}

type plainColumnsTag struct{}

// plainColumns are the root columns of the file that decode sparsely:
// flat, and read (as the file's Arrow schema, fileArrow, types them) as
// the plain Arrow image of their values — worked out once a footer.
func plainColumns(ft *footer.Footer, fileArrow *arrow.Schema) map[string]bool {
	return ft.SmallMemo(plainColumnsTag{}, func() any {
		plain := map[string]bool{}
		inferred, err := pqarrow.FromParquet(ft.Meta.Schema, &pqarrow.ArrowReadProperties{}, nil)
		if err != nil {
			return plain
		}
		sch := ft.Meta.Schema
		leaves := map[string]int{}
		for leaf := range sch.NumColumns() {
			leaves[sch.ColumnRoot(leaf).Name()]++
		}
		for leaf := range sch.NumColumns() {
			col := sch.Column(leaf)
			name := sch.ColumnRoot(leaf).Name()
			if leaves[name] != 1 || col.MaxRepetitionLevel() > 0 || col.ColumnPath().String() != name {
				continue
			}
			a, b := fileArrow.FieldIndices(name), inferred.FieldIndices(name)
			if len(a) == 1 && len(b) == 1 && arrow.TypeEqual(fileArrow.Field(a[0]).Type, inferred.Field(b[0]).Type) {
				plain[name] = true
			}
		}
		return plain
	}).(map[string]bool)
}

// predReader is the reader of a row group's predicate columns (leaves):
// when each flat string or binary one among them is wholly
// dictionary-encoded in row group rg (encoding stats), one that decodes
// them as Arrow dictionaries — the predicate is evaluated on the
// dictionary's values once, the rows are indices, no string is built per
// row (a third of a scattered equality's CPU on the volume) — else the
// plain reader (a chunk with plain pages read as a dictionary would hash
// every value into a new one).
func (sf *scanFile) predReader(rg int, leaves []int) *pqarrow.FileReader {
	if rg >= len(sf.ft.Chunks) || sf.arrow == nil {
		return sf.fr
	}
	var dict []int
	for _, l := range leaves {
		if !sf.dictEligible(l) {
			continue
		}
		if l >= len(sf.ft.Chunks[rg]) || !sf.ft.Chunks[rg][l].DictionaryOnly {
			return sf.fr
		}
		dict = append(dict, l)
	}
	if len(dict) == 0 {
		return sf.fr
	}
	if sf.frDict == nil {
		props := pqarrow.ArrowReadProperties{Parallel: false, BatchSize: 1 << 16}
		for l := 0; l < sf.ft.Meta.Schema.NumColumns(); l++ {
			if sf.dictEligible(l) {
				props.SetReadDict(l, true)
			}
		}
		fr, err := pqarrow.NewFileReader(sf.fr.ParquetReader(), props, arrowmem.Pooled)
		if err != nil {
			return sf.fr
		}
		sf.frDict = fr
	}
	return sf.frDict
}

// rowGroupReader reads leaf columns of row groups as an Arrow table, as
// pqarrow.FileReader does.
type rowGroupReader interface {
	ReadRowGroups(ctx context.Context, indices, rowGroups []int) (arrow.Table, error)
}

// predicateReader is the reader of row group rg's predicate columns
// (leaves): those predReader reads as dictionaries decoded straight from
// their index runs (pagedecode.DictionaryArray, no arrow-go dictionary
// builder), the others (and any such chunk that cannot be decoded so) by
// predReader's reader.
func (sf *scanFile) predicateReader(rg int, leaves []int) rowGroupReader {
	fr := sf.predReader(rg, leaves)
	if fr == sf.fr {
		return fr
	}
	return &dictRunsReader{sf: sf, fr: fr}
}

// dictRunsReader is predicateReader's reader of dictionary columns.
type dictRunsReader struct {
	sf *scanFile
	fr *pqarrow.FileReader
}

func (d *dictRunsReader) ReadRowGroups(ctx context.Context, leaves, rowGroups []int) (arrow.Table, error) {
	if len(rowGroups) != 1 {
		return d.fr.ReadRowGroups(ctx, leaves, rowGroups)
	}
	rg, sf := rowGroups[0], d.sf
	n := sf.ft.Meta.RowGroup(rg).NumRows()
	direct := map[int]arrow.Array{}
	defer func() {
		for _, a := range direct {
			a.Release()
		}
	}()
	var rest []int
	for _, l := range leaves {
		idx := sf.arrow.FieldIndices(sf.ft.Meta.Schema.ColumnRoot(l).Name())
		if sf.dictEligible(l) && len(idx) == 1 {
			dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: sf.arrow.Field(idx[0]).Type}
			if cc, chunk, ok := chunkBytes(ctx, sf.src, sf.ft, rg, l); ok {
				if a, err := pagedecode.DictionaryArray(sf.ft.Meta.Schema.Column(l), cc.Compression(), chunk, n, dt, arrowmem.Pooled); err == nil {
					direct[l] = a
					continue
				}
			}
		}
		rest = append(rest, l)
	}
	if len(direct) == 0 {
		return d.fr.ReadRowGroups(ctx, leaves, rowGroups)
	}
	var others arrow.Table
	if len(rest) > 0 {
		t, err := d.fr.ReadRowGroups(ctx, rest, rowGroups)
		if err != nil {
			return nil, err
		}
		defer t.Release()
		others = t
	}
	fields := make([]arrow.Field, 0, len(leaves))
	cols := make([]arrow.Column, 0, len(leaves))
	defer func() {
		for i := range cols {
			cols[i].Release()
		}
	}()
	for _, l := range leaves {
		name := sf.ft.Meta.Schema.ColumnRoot(l).Name()
		if a, ok := direct[l]; ok {
			f := sf.arrow.Field(sf.arrow.FieldIndices(name)[0])
			f.Type = a.DataType()
			chunked := arrow.NewChunked(f.Type, []arrow.Array{a})
			fields, cols = append(fields, f), append(cols, *arrow.NewColumn(f, chunked))
			chunked.Release()
			continue
		}
		idx := others.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return nil, perr.New(perr.Corrupt, "row group %d: column %s was not decoded", rg, perr.Quote(name))
		}
		c := others.Column(idx[0])
		c.Retain()
		fields, cols = append(fields, others.Schema().Field(idx[0])), append(cols, *c)
	}
	return array.NewTable(arrow.NewSchema(fields, nil), cols, n), nil
}

// dictEligible reports whether leaf is a top-level, non-repeated
// BYTE_ARRAY column read as Arrow strings or binary.
func (sf *scanFile) dictEligible(leaf int) bool {
	sch := sf.ft.Meta.Schema
	if leaf < 0 || leaf >= sch.NumColumns() {
		return false
	}
	c := sch.Column(leaf)
	if c.PhysicalType() != parquet.Types.ByteArray || c.MaxRepetitionLevel() != 0 || sch.ColumnRoot(leaf).Type() != schema.Primitive {
		return false
	}
	idx := sf.arrow.FieldIndices(sch.ColumnRoot(leaf).Name())
	if len(idx) != 1 {
		return false
	}
	id := sf.arrow.Field(idx[0]).Type.ID()
	return id == arrow.STRING || id == arrow.BINARY
}

// plainOf is a, a dictionary unpacked into its values (of typ); a
// itself otherwise. a is released when replaced.
func plainOf(ctx context.Context, a arrow.Array, typ arrow.DataType) (arrow.Array, error) {
	if a.DataType().ID() != arrow.DICTIONARY {
		return a, nil
	}
	out, err := compute.CastArray(ctx, a, compute.SafeCastOptions(typ))
	a.Release()
	if err != nil {
		return nil, perr.New(perr.Internal, "unpack a dictionary: %v", err)
	}
	return out, nil
}

// sparseOK reports whether leaf decodes sparsely.
func (sf *scanFile) sparseOK(leaf int) bool {
	return sf.plain[sf.ft.Meta.Schema.ColumnRoot(leaf).Name()]
}

// chunkPagesHolder remembers, with the footer, the pages of one chunk
// listed from its headers (done: listed, or found unlistable).
type chunkPagesHolder struct {
	mu    sync.Mutex
	done  bool
	pages []footer.Page
}

type scanPagesTag struct{}

// pagesOf lists the data pages of leaf's chunk in row group rg (n rows):
// from the footer's page index, else from the chunk's page headers (the
// chunk read once and remembered with the footer); nil when neither lists
// them.
func (sf *scanFile) pagesOf(ctx context.Context, rg, leaf int, n int64) []footer.Page {
	if idx, err := sf.ft.PageIndex(ctx, rg); err == nil && idx != nil && leaf < len(idx.Columns) && idx.Columns[leaf].Pages != nil {
		return idx.Columns[leaf].Pages
	}
	h := sf.ft.ChunkMemo(rg, leaf, scanPagesTag{}, func() any { return &chunkPagesHolder{} }).(*chunkPagesHolder)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return h.pages
	}
	ch := sf.ft.Chunks[rg][leaf]
	if ch.Length <= 0 || ch.Length > 1<<30 {
		h.done = true
		return nil
	}
	b := make([]byte, ch.Length)
	if _, err := sf.src.ReadAt(ctx, b, ch.Start); err != nil {
		return nil // not remembered: a read may succeed next time
	}
	h.pages, _ = sideindex.FlatChunkPages(ch, b, n)
	h.done = true
	return h.pages
}

// selection chooses the pages of leaf's chunk in row group rg holding a
// row of rows; ok is false when the pages are not listed. Every page may
// be chosen: since pagedecode reads runs a few rows apart as one window,
// decoding the wanted values from all the pages costs less than decoding
// the chunk whole and taking them (BENCH=scan, -filterAt volume, 3 runs:
// `status AND tenant_id` 60–69 → 48–54 ms, the scattered LIKE 50–53 →
// 38–42; it was more when each run cost a Skip and a ReadBatch, and
// selections over half the chunk decoded whole).
func (sf *scanFile) selection(ctx context.Context, rg, leaf int, rows []int64) (pagedecode.Selection, bool) {
	ch := sf.ft.Chunks[rg][leaf]
	sel, ok := pagedecode.Select(sf.pagesOf(ctx, rg, leaf, sf.ft.Meta.RowGroup(rg).NumRows()), ch.Start, rows)
	if !ok {
		return pagedecode.Selection{}, false
	}
	return sel, true
}

// sparseColumn decodes leaf (flat, sparseOK) of row group rg at rows
// (row-group-local, ascending): an array aligned with rows; nil, nil
// when the pages holding them are not worth it (selection).
func (sf *scanFile) sparseColumn(ctx context.Context, rg, leaf int, rows []int64) (arrow.Array, error) {
	sel, ok := sf.selection(ctx, rg, leaf, rows)
	if !ok {
		return nil, nil
	}
	return sf.decodeSelection(ctx, rg, leaf, sel, len(rows))
}

// decodeSelection decodes the rows sel chose (n of them) of leaf in row
// group rg from the pages it chose.
func (sf *scanFile) decodeSelection(ctx context.Context, rg, leaf int, sel pagedecode.Selection, n int) (arrow.Array, error) {
	buf := make([]byte, 0, sel.Bytes)
	for _, pg := range append([]footer.Page{sel.Dict}, sel.Pages...) {
		if pg.Length == 0 {
			continue
		}
		at := len(buf)
		buf = buf[:at+int(pg.Length)]
		if _, err := sf.src.ReadAt(ctx, buf[at:], pg.Offset); err != nil {
			if perr.IsContext(err) {
				return nil, err
			}
			return nil, perr.Wrap(perr.Unavailable, err)
		}
	}
	descr := sf.ft.Meta.Schema.Column(leaf)
	cc, err := sf.ft.Meta.RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		return nil, perr.New(perr.Corrupt, "row group %d column %d: %v", rg, leaf, err)
	}
	typ := sf.arrow.Field(sf.arrow.FieldIndices(sf.ft.Meta.Schema.ColumnRoot(leaf).Name())[0]).Type
	if sf.dictEligible(leaf) && sf.ft.Chunks[rg][leaf].DictionaryOnly && sel.Dict.Length <= maxDictSelectionBytes {
		return sf.decodeDictSelection(ctx, rg, descr, cc.Compression(), buf, sel, typ, n)
	}
	cr, err := pagedecode.PagesReader(descr, cc.Compression(), buf, sel.NRows, arrowmem.Pooled)
	if err != nil {
		return nil, perr.New(perr.Corrupt, "row group %d column %s: %v", rg, perr.Quote(descr.Path()), err)
	}
	arr, err := pagedecode.Runs(cr, typ, descr.TypeLength(), sel.Runs, sel.NRows, descr.MaxDefinitionLevel())
	if err != nil {
		return nil, perr.New(perr.Corrupt, "row group %d column %s: %v", rg, perr.Quote(descr.Path()), err)
	}
	if arr == nil || arr.Len() != n {
		if arr != nil {
			arr.Release()
		}
		return nil, perr.New(perr.Corrupt, "row group %d column %s: the sparse decoder gave no values for %d rows", rg, perr.Quote(descr.Path()), n)
	}
	return arr, nil
}

// maxDictSelectionBytes: a chosen-pages decode reads the pages' rows as
// dictionary indices (decodeDictSelection) only when the chunk's
// dictionary region is at most this long. Arrow's dictionary builder
// hashes every dictionary value into its memo table: cheap for a
// tenant or status column's few values, more than resolving the wanted
// rows' strings for a log message column's thousands.
const maxDictSelectionBytes = 64 << 10

// decodeDictSelection decodes the rows sel chose (n of them) of a wholly
// dictionary-encoded string or binary chunk (dictEligible) from the
// pages it chose, buf: the pages' rows as dictionary indices (each page's
// values only indexed, never resolved to a string), the chosen rows
// taken, their values unpacked into a plain array of typ. Resolving every
// value of the pages to a string, as the plain sparse decoder does, was
// a quarter of the volume's CPU on a scattered equality.
func (sf *scanFile) decodeDictSelection(ctx context.Context, rg int, descr *schema.Column, codec compress.Compression, buf []byte, sel pagedecode.Selection, typ arrow.DataType, n int) (arrow.Array, error) {
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: typ}
	all, ok, err := pagedecode.Records(descr, codec, buf, sel.NRows, dt, arrowmem.Pooled)
	if err != nil || !ok {
		return nil, perr.New(perr.Corrupt, "row group %d column %s: the dictionary decoder: %v", rg, perr.Quote(descr.Path()), err)
	}
	at := make([]int64, 0, n)
	for _, r := range sel.Runs {
		for p := r.Start; p < r.End; p++ {
			at = append(at, p)
		}
	}
	if len(at) != n {
		all.Release()
		return nil, perr.New(perr.Corrupt, "row group %d column %s: %d rows chosen for %d", rg, perr.Quote(descr.Path()), len(at), n)
	}
	taken, err := takeAt(ctx, all, at)
	all.Release()
	if err != nil {
		return nil, err
	}
	return plainOf(ctx, taken, typ)
}

// scanSparse is scanRowGroup's sparse path: it evaluates the predicate at
// the candidates rows (row-group-local, ascending) of row group rg (file
// rows from first) and adds the matching file positions to matched; when
// project is set, the projected columns (leaves cols) of the matching
// rows come back aligned with them (at most limit of them when limit >
// 0). ok is false when a predicate column does not decode sparsely (the
// caller decodes whole).
func scanSparse(ctx context.Context, sf *scanFile, cm *plan.ColumnMap, rg int, first int64, leaves []int, types map[int]iceberg.Type,
	vf *vectorFilter, rows []int64, cols []int, project bool, matched *roaring64.Bitmap) (aligned *decodedRowGroup, ok bool, err error) {
	sels := make([]pagedecode.Selection, len(leaves))
	for i, l := range leaves {
		var worth bool
		if !sf.sparseOK(l) {
			return nil, false, nil
		}
		if sels[i], worth = sf.selection(ctx, rg, l, rows); !worth {
			return nil, false, nil
		}
	}
	decoded := map[int]arrow.Array{} // predicate leaf → values at the candidates
	defer func() {
		for _, a := range decoded {
			a.Release()
		}
	}()
	for i, l := range leaves {
		a, err := sf.decodeSelection(ctx, rg, l, sels[i], len(rows))
		if err != nil {
			return nil, true, err
		}
		decoded[l] = a
	}
	byField := map[int]*chunkedColumn{}
	for _, id := range vf.ids {
		if ls := cm.Leaves(id); len(ls) > 0 {
			byField[id] = newChunkedColumn([]arrow.Array{decoded[ls[0]]})
		}
	}
	kept := roaring64.New() // candidate ordinals
	if err := selectCandidates(vf, byField, types, int64(len(rows)), 0, nil, kept); err != nil {
		return nil, true, err
	}
	ords := make([]int64, 0, kept.GetCardinality())
	hits := make([]int64, 0, kept.GetCardinality())
	it := kept.Iterator()
	for it.HasNext() {
		k := int64(it.Next())
		ords = append(ords, k)
		hits = append(hits, rows[k])
		matched.Add(uint64(first + rows[k]))
	}
	if !project || len(hits) == 0 || len(cols) == 0 {
		return nil, true, nil
	}
	// the projection, aligned with hits
	g, err := projectSparse(ctx, sf, rg, cols, hits, func(name string, ls []int) (arrow.Array, []int64) {
		if len(ls) == 1 && decoded[ls[0]] != nil {
			return decoded[ls[0]], ords
		}
		return nil, nil
	})
	return g, true, err
}

// projectSparse decodes the projected columns (leaves cols) of row group
// rg at hits (row-group-local, ascending), aligned with them: a column
// have holds decoded (its array and each hit's index in it) is taken from
// it, a sparseOK one is decoded at the hits from the pages holding them,
// any other (a list, a converted type) decoded whole and taken.
func projectSparse(ctx context.Context, sf *scanFile, rg int, cols []int, hits []int64,
	have func(name string, leaves []int) (arrow.Array, []int64)) (g *decodedRowGroup, err error) {
	roots, want := rootsOf(sf.ft.Meta.Schema, cols)
	g = &decodedRowGroup{}
	defer func() {
		if err != nil {
			for _, a := range g.cols {
				a.Release()
			}
		}
	}()
	fields := make([]arrow.Field, 0, len(roots))
	for _, name := range roots {
		idx := sf.arrow.FieldIndices(name)
		if len(idx) != 1 {
			return nil, perr.New(perr.Corrupt, "row group %d: column %s has no Arrow field", rg, perr.Quote(name))
		}
		ls := want[name]
		var a arrow.Array
		if from, at := have(name, ls); from != nil {
			if a, err = takeAt(ctx, from, at); err == nil {
				a, err = plainOf(ctx, a, sf.arrow.Field(idx[0]).Type) // the predicate's dictionary: the hits' values
			}
		} else if len(ls) == 1 && sf.sparseOK(ls[0]) {
			a, err = sf.sparseColumn(ctx, rg, ls[0], hits)
		}
		if a == nil && err == nil {
			a, err = wholeTaken(ctx, sf.fr, rg, ls, name, hits)
		}
		if err != nil {
			return nil, err
		}
		// without the field's metadata (its Parquet field id): readers
		// match the columns by name, and a batch of a few rows is mostly
		// its schema
		f := sf.arrow.Field(idx[0])
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
		g.cols = append(g.cols, a)
	}
	g.schema = arrow.NewSchema(fields, nil)
	return g, nil
}

// rootsOf groups leaves by their top-level column: the roots in leaf
// order and each root's leaves.
func rootsOf(sch *schema.Schema, leaves []int) ([]string, map[string][]int) {
	var order []string
	m := map[string][]int{}
	for _, l := range leaves {
		name := sch.ColumnRoot(l).Name()
		if _, ok := m[name]; !ok {
			order = append(order, name)
		}
		m[name] = append(m[name], l)
	}
	return order, m
}

// takeAt is a's values at idx.
func takeAt(ctx context.Context, a arrow.Array, idx []int64) (arrow.Array, error) {
	if len(idx) == a.Len() {
		a.Retain()
		return a, nil
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(idx, nil)
	ia := b.NewInt64Array()
	b.Release()
	defer ia.Release()
	out, err := compute.TakeArray(ctx, a, ia)
	if err != nil {
		return nil, perr.New(perr.Internal, "take: %v", err)
	}
	return out, nil
}

// wholeTaken decodes the leaves of one root column of row group rg whole
// and takes its values at rows.
func wholeTaken(ctx context.Context, fr *pqarrow.FileReader, rg int, leaves []int, name string, rows []int64) (arrow.Array, error) {
	t, err := fr.ReadRowGroups(ctx, leaves, []int{rg})
	if err != nil {
		if perr.IsContext(err) {
			return nil, err
		}
		return nil, perr.Wrap(perr.Unavailable, err)
	}
	defer t.Release()
	idx := t.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil, perr.New(perr.Corrupt, "row group %d: column %s was not decoded", rg, perr.Quote(name))
	}
	whole, err := oneChunk(t.Column(idx[0]).Data().Chunks())
	if err != nil {
		return nil, err
	}
	defer whole.Release()
	return takeAt(ctx, whole, rows)
}
