package volume

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/arrowmem"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pagedecode"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// Limits of AggregateRows besides ScanRows' (row groups, row ranges,
// deleted positions): grouping columns and aggregates per call, and the
// groups one call may hold.
const (
	MaxAggregateGroupBy    = 32
	MaxAggregates          = 256
	MaxAggregateRowsGroups = 1 << 20
)

// AggregateRows computes partial aggregates of one file's planned rows
// next to the data: the caller merges them with other files' and receives
// a row per group instead of the rows.
//
//	bounds ─▶ caller may read the file ─▶ predicate bound (as ScanRows;
//	none: every planned row) ─▶ identity re-check ─▶ per row group:
//	   planned rows − deleted positions ─▶ (not exact) predicate.Eval
//	   (IEEE) == TRUE, evaluateOnRows as ScanRows ─▶ decode the grouping
//	   and argument columns (string columns as dictionaries: grouped by
//	   dictionary code) ─▶ take the matching rows ─▶ sqlstmt.Partials
//	─▶ one Arrow IPC record of partial states, a row per group
//
// Memory: one row group's grouping and argument columns decoded at a
// time; the groups bounded by max_groups (at most 1,048,576) and the
// answer by -pushdown.volume.maxAnswerMB.
func (s *Service) AggregateRows(ctx context.Context, req *pushdown_pb.AggregateRowsRequest) (resp *pushdown_pb.AggregateRowsResponse, err error) {
	if err := checkAggregateRequest(req); err != nil {
		return nil, err
	}
	caller, err := s.callerOf(ctx, "AggregateRows")
	if err != nil {
		return nil, err
	}
	if _, err := caller.MayRead(ctx, req.GetPath()); err != nil {
		return nil, perr.New(perr.KindOf(err), "AggregateRows: %w", err)
	}
	fail := func(err error) error {
		if perr.IsContext(err) || perr.KindOf(err) == perr.ResourceExhausted {
			return err
		}
		return perr.New(perr.KindOf(err), "AggregateRows: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fail(perr.New(perr.Corrupt, "decode: %v", p))
		}
	}()
	schema, nm, err := schemaOf(req.GetSchemaJson(), req.GetNameMappingJson())
	if err != nil {
		return nil, err
	}
	if schema == nil {
		return nil, perr.New(perr.InvalidArgument, "AggregateRows: schema_json is empty: the field ids need the table schema")
	}
	var vf *vectorFilter
	if len(req.GetPredicate()) > 0 {
		if vf, err = bindRowFilter("AggregateRows", req.GetPredicateKind(), req.GetPredicate(), schema, req.GetSchemaJson()); err != nil {
			return nil, err
		}
	}
	hash, err := s.footers.Identify(ctx, req.GetPath(), req.GetSizeBytes(), req.GetRecordCount())
	if err != nil {
		return nil, fail(err)
	}
	identity := footer.IdentityDir(req.GetSizeBytes(), req.GetRecordCount(), hash)
	if want := req.GetIdentity(); want != "" && want != identity {
		return nil, fail(perr.New(perr.FailedPrecondition, "the file's identity is %s, the request names %s: the file changed", identity, perr.Quote(want)))
	}
	ft, _, err := s.footers.Get(ctx, footer.Identity{Path: req.GetPath(), Size: req.GetSizeBytes()})
	if err != nil {
		return nil, fail(err)
	}
	cm := nm.columns(ft)
	if !cm.Mapped {
		return nil, fail(perr.New(perr.FailedPrecondition, "the file's columns carry no field ids and no name mapping maps them"))
	}
	if vf != nil {
		for _, id := range vf.ids {
			if len(cm.Leaves(id)) == 0 {
				name, _ := schema.FindColumnName(id)
				return nil, fail(perr.New(perr.FailedPrecondition, "the predicate's column %s is absent from the file; the volume evaluates predicates on stored columns only", perr.Quote(name)))
			}
		}
	}
	// the columns read: grouping columns, then each aggregate's argument
	var ids []int
	aggs := make([]sqlstmt.PartialAgg, len(req.GetAggregates()))
	for _, id := range req.GetGroupFieldIds() {
		ids = append(ids, int(id))
	}
	for i, a := range req.GetAggregates() {
		aggs[i] = sqlstmt.PartialAgg{Func: aggregateFuncs[a.GetFunc()], HasArg: a.GetFunc() != pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS}
		if aggs[i].HasArg {
			ids = append(ids, int(a.GetFieldId()))
		}
	}
	leaves := make([]int, len(ids))
	for i, id := range ids {
		if leaves[i], err = storedLeaf(schema, cm, id); err != nil {
			return nil, fail(err)
		}
	}
	maxGroups := MaxAggregateRowsGroups
	if m := req.GetMaxGroups(); m > 0 && m < int64(maxGroups) {
		maxGroups = int(m)
	}
	partials, err := sqlstmt.NewPartials(len(req.GetGroupFieldIds()), aggs, maxGroups)
	if err != nil {
		return nil, fail(err)
	}
	fh, err := s.Reader.Open(ctx, req.GetPath())
	if err != nil {
		return nil, fail(classifyOpen(err))
	}
	src := s.cachedChunks(sourceOf(fh), req.GetPath(), ft.IdentityDir(), ft)
	rdr, err := sideindex.OpenParquet(ctx, req.GetPath(), ft, src)
	if err != nil {
		return nil, fail(perr.New(perr.Corrupt, "%v", err))
	}
	props := pqarrow.ArrowReadProperties{Parallel: false, BatchSize: 1 << 16}
	for _, leaf := range leaves {
		if k := ft.Meta.Schema.Column(leaf).LogicalType(); k != nil && k.String() == "String" {
			props.SetReadDict(leaf, true) // grouped by dictionary code
		}
	}
	fr, err := pqarrow.NewFileReader(rdr, props, arrowmem.Pooled) // buffers recycled row group after row group
	if err != nil {
		return nil, fail(perr.New(perr.Corrupt, "%v", err))
	}
	fileSchema, err := fr.Schema()
	if err != nil {
		return nil, fail(perr.New(perr.Corrupt, "%v", err))
	}
	var fields []arrow.Field
	for _, leaf := range leaves {
		idx := fileSchema.FieldIndices(ft.Meta.Schema.ColumnRoot(leaf).Name())
		if len(idx) == 0 {
			return nil, fail(perr.New(perr.Corrupt, "column %d has no Arrow field", leaf))
		}
		fields = append(fields, fileSchema.Field(idx[0]))
	}
	readSchema := arrow.NewSchema(fields, nil)
	exact := map[int32]bool{}
	for _, rg := range req.GetExactRowGroups() {
		exact[rg] = true
	}
	firsts := make([]int64, ft.Meta.NumRowGroups()+1)
	for rg := range ft.Meta.NumRowGroups() {
		firsts[rg+1] = firsts[rg] + ft.Meta.RowGroup(rg).NumRows()
	}
	resp = &pushdown_pb.AggregateRowsResponse{}
	var pe *predicateEvaluator // opened on the first row group the predicate is evaluated on
	for _, g := range req.GetRowGroups() {
		rg := int(g.GetRowGroup())
		if rg >= ft.Meta.NumRowGroups() {
			return nil, fail(perr.New(perr.InvalidArgument, "row group %d: the file has %d", rg, ft.Meta.NumRowGroups()))
		}
		n := firsts[rg+1] - firsts[rg]
		matched, err := scanCandidates(&pushdown_pb.ScanRowGroup{RowGroup: g.GetRowGroup(), RowRanges: g.GetRowRanges(), DeletedPositions: g.GetDeletedPositions()}, firsts[rg], n)
		if err != nil {
			return nil, fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
		}
		if (vf == nil || exact[g.GetRowGroup()]) && int64(matched.GetCardinality()) == n {
			// every row of the row group qualifies: MIN/MAX/COUNT from its statistics when exact
			if states := statisticsStates(ft, rg, n, req, leaves, readSchema); states != nil {
				err := partials.Merge(readSchema, states)
				states.Release()
				if err != nil {
					return nil, fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
				}
				resp.RowGroupsFromStatistics++
				resp.RowsAggregated += n
				continue
			}
		}
		if vf != nil && !exact[g.GetRowGroup()] && int64(matched.GetCardinality()) == n {
			// COUNT(*) on one dictionary-encoded column: its rows by code
			if k, ok := countOnDictionary(ctx, src, ft, cm, schema, vf, req, rg, n); ok {
				states := statisticsStates(ft, rg, k, req, leaves, readSchema)
				err := partials.Merge(readSchema, states)
				states.Release()
				if err != nil {
					return nil, fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
				}
				resp.RowsEvaluated += n
				resp.RowsAggregated += k
				resp.RowGroupsFromDictionaries++
				continue
			}
		}
		if vf != nil && !exact[g.GetRowGroup()] && !matched.IsEmpty() {
			resp.RowsEvaluated += int64(matched.GetCardinality())
			if pe == nil {
				if pe, err = s.newPredicateEvaluator(ctx, req.GetPath(), ft, cm, schema, vf); err != nil {
					return nil, fail(err)
				}
			}
			kept := roaring64.New()
			if err := pe.rowGroup(ctx, rg, firsts[rg], n, matched, kept); err != nil {
				return nil, fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
			}
			matched = kept
		}
		if matched.IsEmpty() {
			continue
		}
		if err := aggregateRowGroup(ctx, fr, src, ft, rg, firsts[rg], n, leaves, readSchema, matched, partials); err != nil {
			return nil, fail(perr.New(perr.KindOf(err), "row group %d: %w", rg, err))
		}
		resp.RowsAggregated += int64(matched.GetCardinality())
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	rec, err := partials.Record(readSchema, memory.DefaultAllocator)
	if err != nil {
		return nil, fail(err)
	}
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, fail(perr.New(perr.Internal, "encode the partial states: %v", err))
	}
	if err := w.Close(); err != nil {
		return nil, fail(perr.New(perr.Internal, "encode the partial states: %v", err))
	}
	if budget := s.answerBudget("AggregateRows"); int64(buf.Len()) > budget.limit {
		return nil, budget.exhausted("", int64(buf.Len()))
	}
	resp.PartialsIpc, resp.Groups = buf.Bytes(), rec.NumRows()
	return resp, nil
}

var aggregateFuncs = map[pushdown_pb.AggregateFunc]sqlstmt.Func{
	pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS: sqlstmt.Count,
	pushdown_pb.AggregateFunc_AGGREGATE_COUNT:      sqlstmt.Count,
	pushdown_pb.AggregateFunc_AGGREGATE_SUM:        sqlstmt.Sum,
	pushdown_pb.AggregateFunc_AGGREGATE_MIN:        sqlstmt.Min,
	pushdown_pb.AggregateFunc_AGGREGATE_MAX:        sqlstmt.Max,
	pushdown_pb.AggregateFunc_AGGREGATE_AVG:        sqlstmt.Avg,
}

// countOnDictionary counts the rows of row group rg (n rows, every one a
// candidate) the predicate keeps when the request aggregates COUNT(*)
// alone, without GROUP BY, and the predicate reads one top-level string
// or binary column whose chunk is wholly dictionary-encoded: from the
// rows of each dictionary code (pagedecode.CountDictionary), the
// predicate evaluated once a value (colfilter.CountByValue). ok is false
// when that does not apply or the chunk cannot be counted so.
func countOnDictionary(ctx context.Context, src footer.Source, ft *footer.Footer, cm *plan.ColumnMap, schema *iceberg.Schema, vf *vectorFilter,
	req *pushdown_pb.AggregateRowsRequest, rg int, n int64) (int64, bool) {
	if len(req.GetGroupFieldIds()) > 0 || len(vf.ids) != 1 || rg >= len(ft.Chunks) {
		return 0, false
	}
	for _, a := range req.GetAggregates() {
		if a.GetFunc() != pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS {
			return 0, false
		}
	}
	leaf, err := storedLeaf(schema, cm, vf.ids[0])
	if err != nil || leaf >= len(ft.Chunks[rg]) || !ft.Chunks[rg][leaf].DictionaryOnly {
		return 0, false
	}
	f, _ := schema.FindFieldByID(vf.ids[0])
	var dt arrow.DataType
	switch f.Type.(type) {
	case iceberg.StringType:
		dt = arrow.BinaryTypes.String
	case iceberg.BinaryType:
		dt = arrow.BinaryTypes.Binary
	default:
		return 0, false
	}
	cc, chunk, ok := chunkBytes(ctx, src, ft, rg, leaf)
	if !ok {
		return 0, false
	}
	counts, err := pagedecode.CountDictionary(ft.Meta.Schema.Column(leaf), cc.Compression(), chunk, n)
	if err != nil {
		return 0, false
	}
	k, err := colfilter.CountByValue(vf.e, f.Type, dt, counts.Values, counts.Counts, counts.Nulls)
	if err != nil {
		return 0, false
	}
	return k, true
}

// dictionaryColumn is leaf's column of row group rg (n rows) as the
// dictionary array of type t pqarrow would read, decoded straight from its
// index runs (pagedecode.DictionaryArray), when t is a dictionary and the
// chunk is wholly dictionary-encoded; ok is false otherwise, or when the
// chunk cannot be decoded so (pqarrow then reads it, and says what is
// wrong with it).
func dictionaryColumn(ctx context.Context, src footer.Source, ft *footer.Footer, rg, leaf int, n int64, t arrow.DataType) (arrow.Array, bool) {
	dt, isDict := t.(*arrow.DictionaryType)
	if !isDict || rg >= len(ft.Chunks) || leaf >= len(ft.Chunks[rg]) || !ft.Chunks[rg][leaf].DictionaryOnly {
		return nil, false
	}
	cc, chunk, ok := chunkBytes(ctx, src, ft, rg, leaf)
	if !ok {
		return nil, false
	}
	a, err := pagedecode.DictionaryArray(ft.Meta.Schema.Column(leaf), cc.Compression(), chunk, n, dt, arrowmem.Pooled)
	if err != nil {
		return nil, false
	}
	return a, true
}

// chunkBytes is leaf's chunk of row group rg and its bytes (from its
// dictionary page on) read from src; ok is false when they cannot be read.
func chunkBytes(ctx context.Context, src footer.Source, ft *footer.Footer, rg, leaf int) (*metadata.ColumnChunkMetaData, []byte, bool) {
	cc, err := ft.Meta.RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		return nil, nil, false
	}
	start, length := footer.ChunkRange(cc)
	chunk := make([]byte, length)
	if got, err := src.ReadAt(ctx, chunk, start); err != nil || int64(got) != length {
		return nil, nil, false
	}
	return cc, chunk, true
}

// storedLeaf is the file's column of a top-level primitive field it
// stores (what the field reads as where the file lacks it is the
// caller's to decide).
func storedLeaf(schema *iceberg.Schema, cm *plan.ColumnMap, id int) (int, error) {
	if !slices.ContainsFunc(schema.Fields(), func(f iceberg.NestedField) bool { return f.ID == id }) {
		return 0, perr.New(perr.FailedPrecondition, "field %d is not a top-level column of the schema", id)
	}
	f, _ := schema.FindFieldByID(id)
	if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
		return 0, perr.New(perr.FailedPrecondition, "column %s is not of a primitive type", perr.Quote(f.Name))
	}
	ls := cm.Leaves(id)
	if len(ls) != 1 {
		return 0, perr.New(perr.FailedPrecondition, "column %s is absent from the file; the volume aggregates stored columns only", perr.Quote(f.Name))
	}
	return ls[0], nil
}

// aggregateRowGroup decodes the leaves of row group rg (file rows from
// first, n of them) and folds the rows of matched (file positions) into
// partials.
func aggregateRowGroup(ctx context.Context, fr *pqarrow.FileReader, src footer.Source, ft *footer.Footer, rg int, first, n int64, leaves []int,
	readSchema *arrow.Schema, matched *roaring64.Bitmap, partials *sqlstmt.Partials) error {
	// string columns read as dictionaries whose chunk is wholly
	// dictionary-encoded: straight from their index runs
	direct := map[int]arrow.Array{}
	defer func() {
		for _, a := range direct {
			a.Release()
		}
	}()
	for i, leaf := range leaves {
		if _, done := direct[leaf]; done {
			continue
		}
		if a, ok := dictionaryColumn(ctx, src, ft, rg, leaf, n, readSchema.Field(i).Type); ok {
			direct[leaf] = a
		}
	}
	var rest []int
	for _, leaf := range leaves {
		if _, done := direct[leaf]; !done && !slices.Contains(rest, leaf) {
			rest = append(rest, leaf)
		}
	}
	slices.Sort(rest)
	g := &decodedRowGroup{schema: arrow.NewSchema(nil, nil)}
	if len(rest) > 0 {
		tbl, err := fr.ReadRowGroups(ctx, rest, []int{rg})
		if err != nil {
			if perr.IsContext(err) {
				return err
			}
			return perr.Wrap(perr.Unavailable, err)
		}
		defer tbl.Release()
		if g, err = newDecodedRowGroup(tbl); err != nil {
			return err
		}
		defer func() {
			for _, c := range g.cols {
				c.Release()
			}
		}()
	}
	cols := make([]arrow.Array, len(leaves))
	for i, leaf := range leaves {
		if a, ok := direct[leaf]; ok {
			cols[i] = a
			continue
		}
		idx := g.schema.FieldIndices(ft.Meta.Schema.ColumnRoot(leaf).Name())
		if len(idx) == 0 {
			return perr.New(perr.Corrupt, "the column of leaf %d was not decoded", leaf)
		}
		cols[i] = g.cols[idx[0]]
		if int64(cols[i].Len()) != n {
			return perr.New(perr.Corrupt, "leaf %d decoded %d rows of %d", leaf, cols[i].Len(), n)
		}
	}
	var err error
	if int64(matched.GetCardinality()) == n {
		rec := array.NewRecordBatch(readSchema, cols, n)
		defer rec.Release()
		return partials.Add(rec)
	}
	idx := array.NewInt64Builder(memory.DefaultAllocator)
	it := matched.Iterator()
	for it.HasNext() {
		idx.Append(int64(it.Next()) - first)
	}
	ia := idx.NewInt64Array()
	idx.Release()
	defer ia.Release()
	taken := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range taken {
			if a != nil {
				a.Release()
			}
		}
	}()
	for i, c := range cols {
		if taken[i], err = compute.TakeArray(ctx, c, ia); err != nil {
			return perr.New(perr.Internal, "take: %v", err)
		}
	}
	rec := array.NewRecordBatch(readSchema, taken, int64(ia.Len()))
	defer rec.Release()
	return partials.Add(rec)
}

// statisticsStates are the partial states of a row group every row of
// which qualifies, from its footer statistics alone, when they say the
// answer exactly: no GROUP BY; only COUNT(*), COUNT, MIN and MAX; every
// argument an integer-backed column (integers, dates, times, timestamps:
// Parquet's statistics of these are the exact extremes, never truncated;
// floats are read, their statistics leave NaN out) of signed order, with
// its null count, and its min/max unless every value is NULL. nil: read.
func statisticsStates(ft *footer.Footer, rg int, n int64, req *pushdown_pb.AggregateRowsRequest, leaves []int, readSchema *arrow.Schema) arrow.RecordBatch {
	if len(req.GetGroupFieldIds()) > 0 || rg >= len(ft.Chunks) {
		return nil
	}
	var fields []arrow.Field
	var cols []arrow.Array
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	arg := 0 // the argument's index in leaves
	for i, a := range req.GetAggregates() {
		count := array.NewInt64Builder(memory.DefaultAllocator)
		if a.GetFunc() == pushdown_pb.AggregateFunc_AGGREGATE_COUNT_ROWS {
			count.Append(n)
			fields, cols = append(fields, arrow.Field{Name: fmt.Sprintf("n%d", i), Type: arrow.PrimitiveTypes.Int64}), append(cols, count.NewArray())
			count.Release()
			continue
		}
		at := len(req.GetGroupFieldIds()) + arg
		arg++
		leaf := leaves[at]
		typ := readSchema.Field(at).Type
		var st *footer.ChunkStats
		if leaf < len(ft.Chunks[rg]) {
			st = ft.Chunks[rg][leaf].Stats
		}
		phys := ft.Meta.Schema.Column(leaf).PhysicalType()
		if st == nil || !st.HasNullCount || st.NullCount < 0 || st.NullCount > n || !statisticsExact(typ) || (phys != parquet.Types.Int32 && phys != parquet.Types.Int64) {
			count.Release()
			release()
			return nil
		}
		values := n - st.NullCount
		count.Append(values)
		fields, cols = append(fields, arrow.Field{Name: fmt.Sprintf("n%d", i), Type: arrow.PrimitiveTypes.Int64}), append(cols, count.NewArray())
		count.Release()
		switch a.GetFunc() {
		case pushdown_pb.AggregateFunc_AGGREGATE_COUNT:
			continue
		case pushdown_pb.AggregateFunc_AGGREGATE_MIN, pushdown_pb.AggregateFunc_AGGREGATE_MAX:
		default:
			release()
			return nil // SUM and AVG need the values
		}
		b := array.NewBuilder(memory.DefaultAllocator, typ)
		if values == 0 {
			b.AppendNull()
		} else {
			raw := st.Max
			if a.GetFunc() == pushdown_pb.AggregateFunc_AGGREGATE_MIN {
				raw = st.Min
			}
			v, ok := plainInt(raw, phys)
			if !st.HasMinMax || !st.TypeDefinedOrder || !ok || sqlstmt.AppendInt(b, v) != nil {
				b.Release()
				release()
				return nil
			}
		}
		fields, cols = append(fields, arrow.Field{Name: fmt.Sprintf("v%d", i), Type: typ, Nullable: true}), append(cols, b.NewArray())
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	release()
	return rec
}

// statisticsExact: a column of Arrow type t reads from an INT32/INT64
// column of signed order whose statistics are its exact extremes.
func statisticsExact(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.DATE32, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64:
		return true
	}
	return false
}

// plainInt decodes a plain-encoded INT32 or INT64 statistic.
func plainInt(raw []byte, phys parquet.Type) (int64, bool) {
	switch {
	case phys == parquet.Types.Int32 && len(raw) == 4:
		return int64(int32(binary.LittleEndian.Uint32(raw))), true
	case phys == parquet.Types.Int64 && len(raw) == 8:
		return int64(binary.LittleEndian.Uint64(raw)), true
	}
	return 0, false
}

// checkAggregateRequest bounds an AggregateRows request before anything is
// looked up.
func checkAggregateRequest(req *pushdown_pb.AggregateRowsRequest) error {
	if err := checkFileRowGroups("AggregateRows", req.GetPath(), req.GetSizeBytes(), req.GetRecordCount(), req.GetRowGroups()); err != nil {
		return err
	}
	switch {
	case len(req.GetExactRowGroups()) > len(req.GetRowGroups()):
		return perr.New(perr.InvalidArgument, "AggregateRows: %d exact row groups of %d", len(req.GetExactRowGroups()), len(req.GetRowGroups()))
	case len(req.GetGroupFieldIds()) > MaxAggregateGroupBy:
		return perr.New(perr.ResourceExhausted, "AggregateRows: %d grouping columns exceed %d", len(req.GetGroupFieldIds()), MaxAggregateGroupBy)
	case len(req.GetAggregates()) == 0:
		return perr.New(perr.InvalidArgument, "AggregateRows: no aggregates")
	case len(req.GetAggregates()) > MaxAggregates:
		return perr.New(perr.ResourceExhausted, "AggregateRows: %d aggregates exceed %d", len(req.GetAggregates()), MaxAggregates)
	case req.GetMaxGroups() < 0:
		return perr.New(perr.InvalidArgument, "AggregateRows: max_groups %d is negative", req.GetMaxGroups())
	}
	for i, a := range req.GetAggregates() {
		if _, ok := aggregateFuncs[a.GetFunc()]; !ok {
			return perr.New(perr.InvalidArgument, "AggregateRows: aggregates[%d] has no function", i)
		}
	}
	return nil
}
