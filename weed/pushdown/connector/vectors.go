package connector

// Vector queries: the k rows nearest a query vector, nearest first.
//
//	Query{Vector, Limit: k}
//	   │ pushdown: Plan with vector_query and the SELECT columns
//	   ▼
//	catalog ─▶ volumes search each surviving file (mask: predicate, deletes)
//	   │       and read the projected columns of their local top-K (fused)
//	   ▼
//	row_refs (global top-K, in order) + vector_rows (the winners' columns)
//	   │ each ref's row located in its file's columns ─▶ SELECT order
//	   ▼                                               + _distance
//	Result
//
//	ExactVectors / -no-pushdown / plan refused / fused columns incomplete:
//	   read the SELECT columns and the vector column of every matching,
//	   non-deleted row through the planned read (Force; plain when the
//	   catalog cannot plan) ─▶ distances here (vector package) ─▶ top-k
//
// _distance is pgvector's: the Euclidean distance for L2 (<->), 1 − cos for
// cosine (<=>), −q·x for dot (<#>). A row whose vector is NULL, has a NULL
// element or another length than the query's is never returned; a query
// whose length differs from the column's dimension is an error.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
	vectors "github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// MaxVectorK bounds the k (LIMIT) of a vector query.
const MaxVectorK = vectors.MaxK

// DistanceColumn, selected in a vector query, is each row's distance to
// the query vector (SELECT * does not include it).
const DistanceColumn = "_distance"

// VectorQuery orders a query by the distance of Column to Vector.
type VectorQuery struct {
	Column string
	Metric vectors.Metric
	Vector []float32
	Nprobe int // IVF lists probed at least; 0: each index's default
}

// VectorStats describe how a vector query was searched.
type VectorStats struct {
	SearchedBy         string `json:"vector_search"` // "volume" or "connector (exact)"
	VectorsScored      int64  `json:"vectors_scored"`
	VectorsApprox      int64  `json:"vectors_approx,omitempty"`
	VectorFilesByIndex int    `json:"vector_files_by_index"`
	VectorFilesExact   int    `json:"vector_files_exact"`
	Nprobe             int    `json:"nprobe"` // requested (0: each index's default)
	MaxListsProbed     int    `json:"max_lists_probed,omitempty"`
	// Lists and files the volumes skipped: every row provably farther
	// than the k nearest found in the other files.
	ListsPruned int64 `json:"vector_lists_pruned,omitempty"`
	FilesPruned int   `json:"vector_files_pruned,omitempty"`
}

// checkVectorQuery checks what needs no table.
func checkVectorQuery(q Query) error {
	v := q.Vector
	switch {
	case q.Limit < 1 || q.Limit > MaxVectorK:
		return fmt.Errorf("a vector query needs LIMIT k of 1 to %d, got %d", MaxVectorK, q.Limit)
	case len(v.Vector) == 0:
		return fmt.Errorf("the query vector is empty")
	case len(v.Vector) > sideindex.MaxVectorDim:
		return fmt.Errorf("a query vector of %d dimensions exceeds %d", len(v.Vector), sideindex.MaxVectorDim)
	case !v.Metric.Valid():
		return fmt.Errorf("vector metric %d is not L2, cosine or dot", int32(v.Metric))
	case v.Nprobe < 0:
		return fmt.Errorf("nprobe %d is negative", v.Nprobe)
	}
	for i, x := range v.Vector {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("query vector element %d is not a finite number", i)
		}
	}
	return nil
}

// outItem is one SELECT item of a vector query: the distance, or column
// col of the inner (table-only) selection.
type outItem struct {
	distance bool
	col      int
}

// splitSelect separates the distance from the table columns of a vector
// query's SELECT (nil: every table column, no distance).
func splitSelect(q Query) (inner []string, items []outItem) {
	for _, s := range q.Select {
		if s == DistanceColumn {
			items = append(items, outItem{distance: true})
			continue
		}
		items = append(items, outItem{col: len(inner)})
		inner = append(inner, s)
	}
	return inner, items
}

// vectorField resolves the vector column of q in the prepared table.
func vectorField(p *prepared, v *VectorQuery) (iceberg.NestedField, error) {
	name, err := sqlpred.ResolveName(p.schema, v.Column)
	if err != nil {
		return iceberg.NestedField{}, err
	}
	f, ok := p.schema.FindFieldByName(name)
	if !ok {
		return f, fmt.Errorf("ORDER BY %s of %s: %w", v.Metric, p.q.Table, sqlpred.UnknownColumn(v.Column, p.schema))
	}
	if !sideindex.IsVectorType(f.Type) {
		return f, fmt.Errorf("ORDER BY %s %s: column %s is %s, not a vector (a list of float or double)", quoteShort(f.Name), sqlpred.Metric(v.Metric).Operator(), quoteShort(f.Name), f.Type)
	}
	return f, nil
}

func quoteShort(s string) string {
	if len(s) > 48 {
		return fmt.Sprintf("%q…", s[:48])
	}
	return fmt.Sprintf("%q", s)
}

// vectorQuery answers q (q.Vector set) through the volumes, falling back
// to the exact search here when the catalog cannot plan it.
func (c *Connector) vectorQuery(ctx context.Context, q Query) (*Result, error) {
	if err := checkVectorQuery(q); err != nil {
		return nil, err
	}
	if c.opts.NoPushdown {
		return c.exactVectors(ctx, q, "vector search pushdown disabled (-no-pushdown): exact search in the connector")
	}
	// The table's cached metadata serves when the plan confirms it is the
	// version planned (else it is loaded and the query planned again).
	p, items, err := c.prepareVector(ctx, q, !c.opts.ClientResolved)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	p, resp, err, bindErr := c.planCurrent(ctx, p, func() (*prepared, error) {
		np, nitems, err := c.prepareVector(ctx, q, false)
		items = nitems
		return np, err
	})
	if bindErr != nil {
		return nil, bindErr
	}
	planMs := time.Since(t0).Milliseconds()
	if err != nil {
		reason := c.fallbackReason(err)
		if reason == "" || c.opts.NoFallback {
			return nil, err
		}
		return c.exactVectors(ctx, q, reason)
	}
	res, why, err := fusedResult(ctx, p, items, q.Vector.Metric, resp)
	if err != nil {
		return nil, err
	}
	if why != "" {
		if c.opts.NoFallback {
			return nil, fmt.Errorf("the vector search's columns cannot be used (%s) and fallback is off", why)
		}
		return c.exactVectors(ctx, q, why)
	}
	vs := resp.GetStats().GetVector()
	res.Stats.Pushdown, res.Stats.Mode, res.Stats.PlanMs, res.Stats.MetadataCached = true, "vector", planMs, p.fromCache
	res.Stats.Files = len(vs.GetFiles())
	res.Stats.VectorStats = &VectorStats{SearchedBy: "volume", VectorsScored: vs.GetVectorsScored(), VectorsApprox: vs.GetVectorsApprox(),
		VectorFilesByIndex: int(vs.GetFilesByIndex()), VectorFilesExact: int(vs.GetFilesExact()), Nprobe: int(vs.GetNprobe()),
		MaxListsProbed: int(vs.GetMaxListsProbed()), ListsPruned: vs.GetListsPruned(), FilesPruned: int(vs.GetFilesPruned())}
	return res, nil
}

// prepareVector binds a vector query (to the cached metadata when cached):
// its table columns (the vector column alone when only the distance is
// selected), its SELECT items, and the Plan request with the vector_query.
func (c *Connector) prepareVector(ctx context.Context, q Query, cached bool) (*prepared, []outItem, error) {
	inner, items := splitSelect(q)
	iq := q
	iq.Select, iq.Vector, iq.Limit = inner, nil, 0
	if q.Select != nil && len(inner) == 0 {
		iq.Select = []string{q.Vector.Column} // only the distance: the request needs a column
	}
	p, err := c.prepare(ctx, iq, cached)
	if err != nil {
		return nil, nil, err
	}
	field, err := vectorField(p, q.Vector)
	if err != nil {
		return nil, nil, err
	}
	if q.Select == nil {
		items = nil
		for i := range p.selectIDs {
			items = append(items, outItem{col: i})
		}
	}
	p.req.VectorQuery = &pushdown_pb.VectorQuery{Column: &pushdown_pb.ColumnRef{FieldId: int32(field.ID), Path: field.Name}, Vector: q.Vector.Vector,
		Metric: pushdown_pb.VectorMetric(q.Vector.Metric), TopK: int32(q.Limit), Nprobe: int32(q.Vector.Nprobe)}
	return p, items, nil
}

// fusedResult builds the answer from the plan's row_refs and the columns
// the volumes read with them. why, when not empty, says why those columns
// cannot answer the query (the exact search here then does).
func fusedResult(ctx context.Context, p *prepared, items []outItem, m vectors.Metric, resp *pushdown_pb.ParquetPushdownResponse) (*Result, string, error) {
	for _, id := range p.selectIDs {
		f, _ := p.schema.FindFieldByID(id)
		if _, nested := p.parents[id]; nested || isStruct(f.Type) {
			return nil, "nested and struct columns are not read with the vector search", nil
		}
	}
	type fileRows struct {
		rec arrow.RecordBatch
		at  map[int64]int
		col []int // column of the record holding selectIDs[i]
	}
	files := map[string]*fileRows{}
	defer func() {
		for _, f := range files {
			f.rec.Release()
		}
	}()
	for _, vr := range resp.GetVectorRows() {
		rec, err := decodeIPC(vr.GetColumnsIpc())
		if err != nil || rec.NumRows() != int64(len(vr.GetPositions())) {
			if rec != nil {
				rec.Release()
			}
			return nil, fmt.Sprintf("the columns of %s do not decode as its %d rows", quoteShort(vr.GetFile()), len(vr.GetPositions())), nil
		}
		fr := &fileRows{rec: rec, at: map[int64]int{}}
		files[vr.GetFile()] = fr
		for i, pos := range vr.GetPositions() {
			fr.at[pos] = i
		}
		for _, id := range p.selectIDs {
			col := fusedColumn(p, rec.Schema(), id)
			if col < 0 {
				name, _ := p.schema.FindColumnName(id)
				return nil, fmt.Sprintf("%s does not store column %s", quoteShort(vr.GetFile()), quoteShort(name)), nil
			}
			fr.col = append(fr.col, col)
		}
	}
	var rows []winner
	for _, ref := range resp.GetRowRefs() {
		fr := files[ref.GetRef().GetFile()]
		if fr == nil {
			return nil, fmt.Sprintf("no columns came back for %s", quoteShort(ref.GetRef().GetFile())), nil
		}
		i, ok := fr.at[ref.GetRef().GetFilePosition()]
		if !ok {
			return nil, fmt.Sprintf("no columns came back for position %d of %s", ref.GetRef().GetFilePosition(), quoteShort(ref.GetRef().GetFile())), nil
		}
		rows = append(rows, winner{cols: func(c int) arrow.Array { return fr.rec.Column(fr.col[c]) }, row: i, dist: ref.GetScore()})
	}
	base := make([]arrow.Field, len(p.selectIDs))
	for i, id := range p.selectIDs {
		name, _ := p.schema.FindColumnName(id)
		typ := emptySchemaOf(p, id)
		if typ == nil {
			typ = arrow.Null
		}
		base[i] = arrow.Field{Name: name, Type: typ, Nullable: true}
	}
	res, err := gatherRows(ctx, items, base, m, rows)
	return res, "", err
}

// fusedColumn is the column of a file's fused record holding field id
// (by the Parquet field id, else the table's name mapping), -1: none.
func fusedColumn(p *prepared, s *arrow.Schema, id int) int {
	for i, f := range s.Fields() {
		if fid, ok := arrowFieldID(f); ok {
			if fid == id {
				return i
			}
			continue
		}
		if mf := topMapping(p.mapping, f.Name); mf != nil && mf.FieldID != nil && *mf.FieldID == id {
			return i
		}
	}
	return -1
}

// decodeIPC reads the one record of an Arrow IPC stream.
func decodeIPC(b []byte) (rec arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, fmt.Errorf("decode: %v", p)
		}
	}()
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, err
	}
	defer r.Release()
	for r.Next() {
		if rec != nil {
			rec.Release()
			return nil, fmt.Errorf("more than one record")
		}
		rec = r.RecordBatch()
		rec.Retain()
	}
	if err := r.Err(); err != nil {
		if rec != nil {
			rec.Release()
		}
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("no record")
	}
	return rec, nil
}

// winner is one result row: row of the arrays cols(i) (the i-th table
// column of the inner selection), at distance dist (the search's score).
type winner struct {
	cols func(i int) arrow.Array
	row  int
	dist float32
}

// pgDistance is pgvector's distance from a search score (L2 is searched
// squared).
func pgDistance(m vectors.Metric, score float32) float32 {
	if m == vectors.L2 {
		return float32(math.Sqrt(float64(score)))
	}
	return score
}

// gatherRows builds the result of rows, in order: items in SELECT order,
// each table column typed as its values are (base[i] when files differ,
// or there are no rows).
func gatherRows(ctx context.Context, items []outItem, base []arrow.Field, m vectors.Metric, rows []winner) (*Result, error) {
	var fields []arrow.Field
	var cols []arrow.Array
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	for _, it := range items {
		if it.distance {
			b := array.NewFloat32Builder(memory.DefaultAllocator)
			for _, w := range rows {
				b.Append(pgDistance(m, w.dist))
			}
			cols = append(cols, b.NewArray())
			b.Release()
			fields = append(fields, arrow.Field{Name: DistanceColumn, Type: arrow.PrimitiveTypes.Float32})
			continue
		}
		f := base[it.col]
		if len(rows) == 0 {
			cols = append(cols, array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0))
			fields = append(fields, f)
			continue
		}
		parts := make([]arrow.Array, len(rows))
		same := true
		for i, w := range rows {
			parts[i] = array.NewSlice(w.cols(it.col), int64(w.row), int64(w.row+1))
			same = same && arrow.TypeEqual(parts[i].DataType(), parts[0].DataType())
		}
		if same {
			f.Type = parts[0].DataType()
		} else {
			for i, a := range parts {
				if arrow.TypeEqual(a.DataType(), f.Type) {
					continue
				}
				cast, err := compute.CastArray(ctx, a, compute.SafeCastOptions(f.Type))
				if err != nil {
					releaseAll(parts)
					return nil, fmt.Errorf("column %s is %s in one file and %s in another: %w", f.Name, a.DataType(), f.Type, err)
				}
				a.Release()
				parts[i] = cast
			}
		}
		col, err := array.Concatenate(parts, memory.DefaultAllocator)
		releaseAll(parts)
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
		fields = append(fields, f)
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(len(rows)))
	return &Result{Schema: rec.Schema(), Records: []arrow.RecordBatch{rec}}, nil
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// ExactVectors answers a vector query by brute force: the SELECT columns
// and the vector of every matching, non-deleted row read through the
// connector's planned read (plainly with NoPushdown, or when the catalog
// cannot plan), distances computed here with the vector package, the k
// nearest kept.
func (c *Connector) ExactVectors(ctx context.Context, q Query) (*Result, error) {
	if q.Vector == nil {
		return nil, fmt.Errorf("ExactVectors: the query has no vector order")
	}
	if err := checkVectorQuery(q); err != nil {
		return nil, err
	}
	return c.answerWith(q, nil, func(rq Query) (*Result, error) { return c.exactVectors(ctx, rq, "") })
}

func (c *Connector) exactVectors(ctx context.Context, q Query, reason string) (*Result, error) {
	inner, items := splitSelect(q)
	iq := q
	iq.Vector, iq.Limit = nil, 0
	p, err := c.prepare(ctx, Query{Table: q.Table, Snapshot: q.Snapshot, Select: []string{}}, true)
	if err != nil {
		return nil, err
	}
	field, err := vectorField(p, q.Vector)
	if err != nil {
		return nil, err
	}
	if q.Select == nil {
		items = nil
		for i, f := range p.schema.Fields() {
			inner = append(inner, f.Name)
			items = append(items, outItem{col: i})
		}
	}
	vcol := len(inner)
	iq.Select = append(slices.Clone(inner), field.Name)
	// The rows are read through the planned read (the plan prunes by the
	// predicate and masks deletes; the cost model is not asked, every
	// matching row is needed), or plainly with -no-pushdown or when the
	// catalog cannot plan; either way they are ranked as they arrive.
	rc := *c
	rc.opts.Force = true
	top := &exactTopK{ctx: ctx, column: field.Name, vcol: vcol, metric: q.Vector.Metric, lengths: map[int]int64{},
		q: vectors.Query{Vector: q.Vector.Vector, K: int(q.Limit), Metric: q.Vector.Metric}}
	defer top.release()
	iq.out = newOutput(Query{}, nil, top.add)
	res, err := rc.query(ctx, iq)
	if err != nil {
		return nil, err
	}
	dim := len(q.Vector.Vector)
	if d := dominant(top.lengths); d != 0 && d != dim {
		return nil, fmt.Errorf("dimension mismatch: the query vector has %d dimensions, column %s holds vectors of %d", dim, quoteShort(field.Name), d)
	}
	rows := top.winners()
	base := make([]arrow.Field, len(inner))
	for i := range base {
		base[i] = res.Schema.Field(i)
	}
	out, err := gatherRows(ctx, items, base, q.Vector.Metric, rows)
	if err != nil {
		return nil, err
	}
	out.Stats = res.Stats
	if reason != "" {
		out.Stats.FallbackReason = reason
	}
	out.Stats.VectorStats = &VectorStats{SearchedBy: "connector (exact)", VectorsScored: top.scored, Nprobe: q.Vector.Nprobe}
	return out, nil
}

// exactTopK ranks the records of an exact search as they are read,
// keeping only the k nearest rows' table columns (copied out of their
// records): memory O(k × selected columns), whatever the rows matched.
// The order is nearest first, ties in read order (record, then row).
//
//	record ─▶ distances of its vectors ─▶ its k nearest
//	   ∪ kept (≤ k rows) ─▶ k nearest ─▶ copied into the new kept record
type exactTopK struct {
	ctx     context.Context
	column  string // the vector column's name
	vcol    int    // its column in the records; the table columns are before it
	metric  vectors.Metric
	q       vectors.Query
	lengths map[int]int64 // lengths of the valid vectors seen
	scored  int64
	records int               // records seen
	kept    arrow.RecordBatch // the kept rows' table columns, nearest first
	keys    []candidate       // kept row i: its record and row, distance
}

// add ranks rec (the caller keeps and releases it).
func (t *exactTopK) add(rec arrow.RecordBatch) error {
	ri := t.records
	t.records++
	mat, err := recordVectors(rec.Column(t.vcol), len(t.q.Vector), t.lengths)
	if err != nil {
		return fmt.Errorf("column %s: %w", quoteShort(t.column), err)
	}
	hits, st, err := vectors.Exact(mat, t.q)
	if err != nil {
		return err
	}
	t.scored += st.Scored
	if len(hits) == 0 {
		return nil
	}
	// cs: the kept rows and rec's hits, by their keys.
	type source struct {
		key      candidate
		fromKept bool
		at       int
	}
	cs := make([]source, 0, len(t.keys)+len(hits))
	for i, k := range t.keys {
		cs = append(cs, source{key: k, fromKept: true, at: i})
	}
	for _, h := range hits {
		cs = append(cs, source{key: candidate{rec: ri, row: int(h.Pos), dist: h.Dist}, at: int(h.Pos)})
	}
	slices.SortFunc(cs, func(a, b source) int { return compareCandidates(a.key, b.key) })
	cs = cs[:min(t.q.K, len(cs))]
	if !slices.ContainsFunc(cs, func(s source) bool { return !s.fromKept }) {
		return nil // none of rec's rows is among the k nearest
	}
	items := make([]outItem, t.vcol)
	base := make([]arrow.Field, t.vcol)
	for i := range items {
		items[i], base[i] = outItem{col: i}, rec.Schema().Field(i)
	}
	rows := make([]winner, len(cs))
	keys := make([]candidate, len(cs))
	for i, s := range cs {
		cols := rec.Column
		if s.fromKept {
			cols = t.kept.Column
		}
		rows[i], keys[i] = winner{cols: cols, row: s.at, dist: s.key.dist}, s.key
	}
	out, err := gatherRows(t.ctx, items, base, t.metric, rows)
	if err != nil {
		return err
	}
	t.release()
	t.kept, t.keys = out.Records[0], keys
	return nil
}

// winners are the kept rows, nearest first, as columns of the kept record.
func (t *exactTopK) winners() []winner {
	var rows []winner
	for i, k := range t.keys {
		rows = append(rows, winner{cols: t.kept.Column, row: i, dist: k.dist})
	}
	return rows
}

func (t *exactTopK) release() {
	if t.kept != nil {
		t.kept.Release()
		t.kept = nil
	}
}

// dominant is the most common vector length (the shorter on a tie; 0:
// none).
func dominant(lengths map[int]int64) int {
	best, dim := int64(0), 0
	for l, n := range lengths {
		if n > best || (n == best && l < dim) {
			dim, best = l, n
		}
	}
	return dim
}

// recordVectors is a record's vector column as a matrix of dimension dim
// (a row NULL, with a NULL element or of another length is invalid),
// counting the lengths of the valid vectors.
func recordVectors(a arrow.Array, dim int, lengths map[int]int64) (*vectors.Matrix, error) {
	l, ok := a.(array.ListLike)
	if !ok {
		return nil, fmt.Errorf("it is %s, not a list", a.DataType())
	}
	var get func(i int) float32
	var valid func(i int) bool
	switch x := l.ListValues().(type) {
	case *array.Float32:
		get, valid = x.Value, x.IsValid
	case *array.Float64:
		get, valid = func(i int) float32 { return float32(x.Value(i)) }, x.IsValid
	default:
		return nil, fmt.Errorf("its elements are %s, not float or double", l.ListValues().DataType())
	}
	n := l.Len()
	m := &vectors.Matrix{Dim: dim, Data: make([]float32, n*dim), Valid: make([]bool, n)}
rows:
	for r := range n {
		if l.IsNull(r) {
			continue
		}
		s, e := l.ValueOffsets(r)
		for j := s; j < e; j++ {
			if !valid(int(j)) {
				continue rows
			}
		}
		if e > s {
			lengths[int(e-s)]++
		}
		if int(e-s) != dim {
			continue
		}
		row := m.Data[r*dim : (r+1)*dim]
		for j := range row {
			row[j] = get(int(s) + j)
		}
		m.Valid[r] = true
	}
	return m, nil
}

// candidate is a row kept by the exact search: row of record rec.
type candidate struct {
	rec, row int
	dist     float32
}

// compareCandidates orders candidates nearest first, ties in read order.
func compareCandidates(a, b candidate) int {
	return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.rec, b.rec), cmp.Compare(a.row, b.row))
}
