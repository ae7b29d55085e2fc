package volume

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// vectorFilter is the predicate of a filtered SearchVectors call, decoded
// and bound once: the files with filter set search only the candidates it
// matches, evaluated exactly as a reader evaluates a bound predicate
// (predicate.Eval under IEEE semantics, TRUE keeps the row; vectorized by
// colfilter).
//
//	candidates ─▶ row groups holding one ─▶ decode the predicate's columns (pqarrow)
//	      ─▶ windows of ≤ 4,096 candidates ─▶ colfilter (vectorized, agrees with
//	         predicate.Eval, IEEE) == TRUE ─▶ mask ─▶ masked search
type vectorFilter struct {
	e   predicate.Expr
	ids []int
	key string // digest of the predicate, for the cache
	// stopAfter: the evaluation of a row group stops once it has kept
	// this many rows (a ScanRows LIMIT; 0: never)
	stopAfter int64
}

// newVectorFilter decodes the request's predicate when a file asks for it.
// A predicate with parts the volume cannot evaluate exactly (residuals) or
// on a nested field is refused: a row it kept might not match.
func newVectorFilter(req *pushdown_pb.SearchVectorsRequest, schema *iceberg.Schema) (*vectorFilter, error) {
	if !slices.ContainsFunc(req.GetFiles(), (*pushdown_pb.VectorSearchFile).GetFilter) {
		return nil, nil
	}
	if len(req.GetPredicate()) == 0 {
		return nil, perr.New(perr.InvalidArgument, "SearchVectors: a file asks for the predicate to be evaluated but the request has none")
	}
	return bindRowFilter("SearchVectors", req.GetPredicateKind(), req.GetPredicate(), schema, req.GetSchemaJson())
}

// bindRowFilter decodes and binds a request's predicate for evaluation on
// rows here. A predicate with parts the volume cannot evaluate exactly
// (residuals) or on a nested field is refused (FAILED_PRECONDITION): a
// row it kept might not match.
func bindRowFilter(method string, kind pushdown_pb.PredicateKind, pred []byte, schema *iceberg.Schema, schemaJSON []byte) (*vectorFilter, error) {
	e, err := decodePredicate(kind, pred, schema, schemaJSON)
	if err != nil {
		return nil, perr.New(perr.KindOf(err), "%s: %w", method, err)
	}
	if r := predicate.Residuals(e); len(r) > 0 {
		return nil, perr.New(perr.FailedPrecondition, "%s: the predicate has a part the volume cannot evaluate exactly (%s)", method, perr.Quote(r[0]))
	}
	ids := predicate.FieldIDs(e)
	for _, id := range ids {
		if !slices.ContainsFunc(schema.Fields(), func(f iceberg.NestedField) bool { return f.ID == id }) {
			name, _ := schema.FindColumnName(id)
			return nil, perr.New(perr.FailedPrecondition, "%s: the predicate's column %s is nested; the volume evaluates predicates on top-level columns only", method, perr.Quote(name))
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00", kind)
	h.Write(pred)
	return &vectorFilter{e: e, ids: ids, key: hex.EncodeToString(h.Sum(nil))}, nil
}

// filterMask returns the candidates (nil: every row) of one file that
// match the predicate, from the cache when this predicate was evaluated
// on these candidates of this file before.
func (s *Service) filterMask(ctx context.Context, f *pushdown_pb.VectorSearchFile, identity string, ft *footer.Footer, cm *plan.ColumnMap,
	schema *iceberg.Schema, vf *vectorFilter, mask *roaring64.Bitmap) (*roaring64.Bitmap, bool, error) {
	h := sha256.New()
	if f.GetHasCandidates() {
		h.Write([]byte{1})
		h.Write(f.GetCandidates())
	}
	key := fmt.Sprintf("%s\x00%s\x00filter\x00%s\x00%x", f.GetPath(), identity, vf.key, h.Sum(nil))
	cache := s.vectorCache()
	if m, ok := cache.Get(key); ok {
		return m.(cachedValue).v.(*roaring64.Bitmap), true, nil
	}
	loaded := freshness.Now()
	out, err := s.evaluateOnRows(ctx, f.GetPath(), ft, cm, schema, vf, mask)
	if err != nil {
		return nil, false, err
	}
	out.RunOptimize()
	cache.Add(key, f.GetPath(), loaded, cachedValue{out, int64(out.GetSizeInBytes()) + int64(len(key))}, int64(out.GetSizeInBytes())+int64(len(key)))
	return out, false, nil
}

// evaluateOnRows decodes the predicate's columns of the row groups holding
// candidates and keeps the candidates the predicate is TRUE on.
func (s *Service) evaluateOnRows(ctx context.Context, path string, ft *footer.Footer, cm *plan.ColumnMap, schema *iceberg.Schema,
	vf *vectorFilter, mask *roaring64.Bitmap) (*roaring64.Bitmap, error) {
	out := roaring64.New()
	if mask != nil && mask.IsEmpty() {
		return out, nil
	}
	pe, err := s.newPredicateEvaluator(ctx, path, ft, cm, schema, vf)
	if err != nil {
		return nil, err
	}
	first := int64(0)
	for rg := range ft.Meta.NumRowGroups() {
		n := ft.Meta.RowGroup(rg).NumRows()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := pe.rowGroup(ctx, rg, first, n, mask, out); err != nil {
			return nil, err
		}
		first += n
	}
	return out, nil
}

// predicateEvaluator evaluates a predicate on one file row group by row
// group (AggregateRows, evaluateOnRows): the file's reader opened once,
// string columns on their dictionaries where a chunk is wholly
// dictionary-encoded (scanFile.predReader), as ScanRows does.
type predicateEvaluator struct {
	sf     *scanFile
	cm     *plan.ColumnMap
	vf     *vectorFilter
	leaves []int
	types  map[int]iceberg.Type
}

func (s *Service) newPredicateEvaluator(ctx context.Context, path string, ft *footer.Footer, cm *plan.ColumnMap, schema *iceberg.Schema, vf *vectorFilter) (*predicateEvaluator, error) {
	leaves, types, err := rowFilterColumns(vf, schema, cm)
	if err != nil {
		return nil, err
	}
	fr, src, err := s.openArrowReader(ctx, path, ft)
	if err != nil {
		return nil, err
	}
	return &predicateEvaluator{sf: newScanFile(fr, src, ft), cm: cm, vf: vf, leaves: leaves, types: types}, nil
}

// rowGroup adds to out the positions of mask (file positions; nil: every
// row) in row group rg of n rows from first whose rows match.
func (pe *predicateEvaluator) rowGroup(ctx context.Context, rg int, first, n int64, mask, out *roaring64.Bitmap) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = perr.New(perr.Corrupt, "decode the predicate's columns: %v", p)
		}
	}()
	rows, any := candidateRows(mask, first, n)
	if !any {
		return nil
	}
	return evaluateRowGroup(ctx, pe.sf.predicateReader(rg, pe.leaves), pe.sf.ft, pe.cm, rg, n, first, pe.leaves, pe.vf, pe.types, rows, out, nil)
}

// rowFilterColumns is what evaluating vf on a file needs: the file's
// leaves (ascending) of the predicate's columns and the columns' Iceberg
// types.
func rowFilterColumns(vf *vectorFilter, schema *iceberg.Schema, cm *plan.ColumnMap) (leaves []int, types map[int]iceberg.Type, err error) {
	if !cm.Mapped && len(vf.ids) > 0 {
		return nil, nil, perr.New(perr.FailedPrecondition, "the file's columns carry no field ids and no name mapping maps them, so the predicate cannot be evaluated on it")
	}
	types = map[int]iceberg.Type{}
	for _, id := range vf.ids {
		field, _ := schema.FindFieldByID(id)
		types[id] = field.Type
		if len(cm.Leaves(id)) == 0 && field.InitialDefault != nil {
			return nil, nil, perr.New(perr.FailedPrecondition, "the predicate's column %s is absent from the file and has an initial-default; the volume does not evaluate defaults", perr.Quote(field.Name))
		}
		leaves = append(leaves, cm.Leaves(id)...)
	}
	slices.Sort(leaves)
	return slices.Compact(leaves), types, nil
}

// openArrowReader opens a data file with arrow-go's Arrow reader over the
// volume's reader (through the chunk cache), reusing its parsed footer.
// The file's bytes are src.
func (s *Service) openArrowReader(ctx context.Context, path string, ft *footer.Footer) (fr *pqarrow.FileReader, src footer.Source, err error) {
	fh, err := s.Reader.Open(ctx, path)
	if err != nil {
		return nil, nil, classifyOpen(err)
	}
	src = s.cachedChunks(sourceOf(fh), path, ft.IdentityDir(), ft)
	rdr, err := sideindex.OpenParquet(ctx, path, ft, src)
	if err != nil {
		return nil, nil, perr.New(perr.Corrupt, "%v", err)
	}
	fr, err = pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{Parallel: false, BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, perr.New(perr.Corrupt, "%v", err)
	}
	return fr, src, nil
}

// candidateRows are mask's positions in the row group of n rows from
// file position lo, row-group-local and ascending (nil: every row; mask
// nil means every row of the file); any is false when it holds none.
func candidateRows(mask *roaring64.Bitmap, lo, n int64) (rows []int64, any bool) {
	if n == 0 {
		return nil, false
	}
	hi := lo + n
	if mask == nil || coversRange(mask, uint64(lo), uint64(hi)) {
		return nil, true
	}
	it := mask.Iterator()
	it.AdvanceIfNeeded(uint64(lo))
	for it.HasNext() {
		p := it.PeekNext()
		if p >= uint64(hi) {
			break
		}
		rows = append(rows, int64(p)-lo)
		it.Next()
	}
	return rows, len(rows) > 0
}

// evaluateRowGroup evaluates the predicate on rows (row-group-local; nil:
// every row) of row group rg and adds the file positions it keeps to out.
// keep non-nil receives the decoded predicate columns (the caller
// releases them) instead of their being released here.
func evaluateRowGroup(ctx context.Context, fr rowGroupReader, ft *footer.Footer, cm *plan.ColumnMap, rg int, n, first int64, leaves []int,
	vf *vectorFilter, types map[int]iceberg.Type, rows []int64, out *roaring64.Bitmap, keep *arrow.Table) error {
	cols := map[int]*chunkedColumn{}
	if len(leaves) > 0 {
		tbl, err := fr.ReadRowGroups(ctx, leaves, []int{rg})
		if err != nil {
			if perr.IsContext(err) {
				return err
			}
			return perr.Wrap(perr.Unavailable, err)
		}
		if keep != nil {
			*keep = tbl
		} else {
			defer tbl.Release()
		}
		for _, id := range vf.ids {
			ls := cm.Leaves(id)
			if len(ls) == 0 {
				continue // absent from the file: NULL
			}
			idx := tbl.Schema().FieldIndices(ft.Meta.Schema.ColumnRoot(ls[0]).Name())
			if len(idx) == 0 {
				return perr.New(perr.Corrupt, "row group %d: the column of field %d was not decoded", rg, id)
			}
			cols[id] = newChunkedColumn(tbl.Column(idx[0]).Data().Chunks())
		}
	}
	return selectCandidates(vf, cols, types, n, first, rows, out)
}

// evalWindowRows is how many candidates colfilter evaluates at a time: a
// LIMIT stops after the window that reached it, and a window's scratch
// (positions, three-valued results) stays in cache.
const evalWindowRows = 4096

// selectCandidates evaluates the predicate with colfilter on the
// candidates rows (row-group-local, ascending; nil: all n) of a row
// group's decoded columns, in windows that each lie within one chunk of
// every column, and adds the file positions (first + row) it keeps to
// out — at most vf.stopAfter of them when that is set. A value that does
// not convert fails it (FAILED_PRECONDITION, naming the field).
func selectCandidates(vf *vectorFilter, cols map[int]*chunkedColumn, types map[int]iceberg.Type, n, first int64, rows []int64, out *roaring64.Bitmap) error {
	total := n
	cand := func(i int) int64 { return int64(i) }
	if rows != nil {
		total = int64(len(rows))
		cand = func(i int) int64 { return rows[i] }
	}
	if keep, ok := denseRows(vf, cols, types, n, rows); ok {
		for _, r := range keep {
			out.Add(uint64(first + r))
		}
		colfilter.RowScratch.Put(keep)
		return nil
	}
	f := &colfilter.Filter{Expr: vf.e, Scratch: true}
	var kept int64
	for start := 0; start < int(total); {
		if vf.stopAfter > 0 && kept >= vf.stopAfter {
			return nil
		}
		end := min(start+evalWindowRows, int(total))
		// the window ends where a column's chunk does
		r0 := cand(start)
		for _, c := range cols {
			_, _, ce := c.chunkOf(r0)
			end = start + sort.Search(end-start, func(k int) bool { return cand(start+k) >= ce })
		}
		m := end - start
		b := &colfilter.Batch{N: m}
		b.Vector = func(id int) *colfilter.Vector {
			v := &colfilter.Vector{Type: types[id], IsNull: true, ErrAt: func(_ int, err error) error {
				return perr.New(perr.FailedPrecondition, "field %d: %v", id, err)
			}}
			c, ok := cols[id]
			if !ok {
				return v // absent from the file: NULL
			}
			a, cs, _ := c.chunkOf(r0)
			v.Arr, v.Pos = a, colfilter.PosScratch.Get(m)
			for k := range m {
				v.Pos[k] = int32(cand(start+k) - cs)
			}
			return v
		}
		sel, err := f.SelectRows(b)
		if err != nil {
			return err
		}
		for _, k := range sel {
			if vf.stopAfter > 0 && kept >= vf.stopAfter {
				break
			}
			out.Add(uint64(first + cand(start+int(k))))
			kept++
		}
		colfilter.PosScratch.Put(sel)
		start = end
	}
	return nil
}

// denseRows is colfilter's in-place test for the commonest shape — one
// leaf or an And of leaves, every row of the row group a candidate, each
// column in one chunk, no LIMIT to stop at: the rows (colfilter's
// RowScratch) where the predicate is TRUE. ok is false otherwise, or when
// no kernel applies (the windows then evaluate, with their errors).
func denseRows(vf *vectorFilter, cols map[int]*chunkedColumn, types map[int]iceberg.Type, n int64, rows []int64) (keep []int64, ok bool) {
	leaves := colfilter.LeavesOf(vf.e)
	if rows != nil || vf.stopAfter > 0 || leaves == nil {
		return nil, false
	}
	arrs := make([]arrow.Array, len(leaves))
	typs := make([]iceberg.Type, len(leaves))
	for i, l := range leaves {
		c, found := cols[l.FieldID]
		if !found || len(c.chunks) != 1 || int64(c.chunks[0].Len()) != n {
			return nil, false
		}
		arrs[i], typs[i] = c.chunks[0], types[l.FieldID]
	}
	return colfilter.LeavesRowsOf(leaves, typs, arrs)
}

// coversRange reports whether mask holds every position of [lo, hi).
func coversRange(mask *roaring64.Bitmap, lo, hi uint64) bool {
	below := uint64(0)
	if lo > 0 {
		below = mask.Rank(lo - 1)
	}
	return mask.Rank(hi-1)-below == hi-lo
}

// chunkedColumn finds row i of a chunked column (rows asked in increasing
// order are found in constant time).
type chunkedColumn struct {
	chunks []arrow.Array
	starts []int64
	cur    int
}

func newChunkedColumn(chunks []arrow.Array) *chunkedColumn {
	c := &chunkedColumn{chunks: chunks, starts: make([]int64, len(chunks)+1)}
	for i, a := range chunks {
		c.starts[i+1] = c.starts[i] + int64(a.Len())
	}
	return c
}

// chunkOf is the chunk holding row i, its first row and the row after
// its last (nil when i is past the column).
func (c *chunkedColumn) chunkOf(i int64) (a arrow.Array, start, end int64) {
	if c.cur >= len(c.chunks) || i < c.starts[c.cur] {
		c.cur = 0
	}
	for c.cur < len(c.chunks) && i >= c.starts[c.cur+1] {
		c.cur++
	}
	if c.cur >= len(c.chunks) {
		return nil, c.starts[len(c.chunks)], math.MaxInt64
	}
	return c.chunks[c.cur], c.starts[c.cur], c.starts[c.cur+1]
}
