package volume

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r *bytes.Reader
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingReaderAt) Seek(off int64, whence int) (int64, error) { return c.r.Seek(off, whence) }

// source is the file as the volume reads it (footer.Source).
type source struct{ *countingReaderAt }

func (s source) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	return s.countingReaderAt.ReadAt(p, off)
}
func (s source) Size() int64 { return s.r.Size() }

// openCounted opens data as the volume does (Arrow reader, loaded footer,
// column map) over a reader counting the bytes read.
func openCounted(t *testing.T, data []byte) (*countingReaderAt, *pqarrow.FileReader, *footer.Footer, *plan.ColumnMap) {
	t.Helper()
	src := &countingReaderAt{r: bytes.NewReader(data)}
	pf, err := file.NewParquetReader(src)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := footer.Load(context.Background(), footer.Identity{Path: "f.parquet", Size: int64(len(data))}, source{src})
	if err != nil {
		t.Fatal(err)
	}
	return src, fr, ft, plan.NewColumnMap(pf.MetaData().Schema, nil)
}

// Many matches (more than 1/8 of the rows): the row group decodes whole,
// each column once.
func TestAScannedRowGroupDecodesEachColumnOnceAndProjectsExactlyTheMatchingRows(t *testing.T) {
	const rows = 5000
	data, sc := demoRowGroup(t, rows)
	for _, q := range []struct {
		name    string
		e       predicate.Expr
		project []int // field ids
		match   func(id int64, tenant, status, msg string) bool
	}{
		{"a LIKE on a projected column", &predicate.Leaf{FieldID: 4, Op: predicate.OpLike, Lits: []value.Value{value.OfString("%timeout%")}},
			[]int{1, 2, 3, 4}, func(_ int64, _, _, m string) bool { return strings.Contains(m, "timeout") }},
		{"an equality on a column not projected", &predicate.Leaf{FieldID: 3, Op: predicate.OpEq, Lits: []value.Value{value.OfString("ok")}},
			[]int{1, 4}, func(_ int64, _, st, _ string) bool { return st == "ok" }},
		{"an AND over two projected columns", predicate.And{Kids: []predicate.Expr{
			&predicate.Leaf{FieldID: 3, Op: predicate.OpEq, Lits: []value.Value{value.OfString("ok")}},
			&predicate.Leaf{FieldID: 4, Op: predicate.OpLike, Lits: []value.Value{value.OfString("%e%")}}}},
			[]int{3, 4, 1}, func(_ int64, _, st, m string) bool { return st == "ok" && strings.Contains(m, "e") }},
	} {
		t.Run(q.name, func(t *testing.T) {
			src, fr, ft, cm := openCounted(t, data)
			vf := &vectorFilter{e: q.e, ids: predicate.FieldIDs(q.e)}
			leaves, types, err := rowFilterColumns(vf, sc, cm)
			if err != nil {
				t.Fatal(err)
			}
			cols := cm.Projection(ft.Meta, q.project)
			// what each column chunk costs to read once
			want := map[int]bool{}
			for _, l := range append(append([]int{}, leaves...), cols...) {
				want[l] = true
			}
			var once int64
			for l := range want {
				cc, _ := ft.Meta.RowGroup(0).ColumnChunk(l)
				once += cc.TotalCompressedSize()
			}
			before := src.n.Load()
			matched, memo := roaring64.New(), map[int]*decodedRowGroup{}
			sf := newScanFile(fr, source{src}, ft)
			if _, err := scanRowGroup(context.Background(), sf, cm, 0, 0, rows, leaves, types, vf, nil, cols, true, matched, memo); err != nil {
				t.Fatal(err)
			}
			if got := src.n.Load() - before; got != once {
				t.Errorf("read %d bytes; each column chunk once is %d", got, once)
			}
			// the oracle: the whole file decoded, the rule applied row by row
			col := wholeFile(t, fr)
			ids, tenants, statuses, msgs := col("id").(*array.Int64), col("tenant_id").(*array.String), col("status").(*array.String), col("message").(*array.String)
			var wantRows []uint64
			for i := range rows {
				if q.match(ids.Value(i), tenants.Value(i), statuses.Value(i), msgs.Value(i)) {
					wantRows = append(wantRows, uint64(i))
				}
			}
			if len(wantRows) == 0 {
				t.Fatal("the test's predicate matches no row")
			}
			if got := matched.ToArray(); !equalU64(got, wantRows) {
				t.Fatalf("matched %d rows, the oracle %d", len(got), len(wantRows))
			}
			g := memo[0]
			if g == nil {
				t.Fatal("no projection was decoded")
			}
			var names []string
			for _, f := range g.schema.Fields() {
				names = append(names, f.Name)
			}
			wantNames := map[int]string{1: "id", 2: "tenant_id", 3: "status", 4: "message"}
			if len(names) != len(q.project) {
				t.Fatalf("projected %v, asked for fields %v", names, q.project)
			}
			for c, name := range names {
				full := col(name)
				if g.cols[c].Len() != rows || !array.Equal(g.cols[c], full) {
					t.Errorf("column %s differs from the whole file's", name)
				}
				found := false
				for _, id := range q.project {
					found = found || wantNames[id] == name
				}
				if !found {
					t.Errorf("column %s was not asked for", name)
				}
			}
		})
	}
}

// wholeFile is the oracle: the whole file decoded by pqarrow, its columns
// by name (released when the test ends).
func wholeFile(t *testing.T, fr *pqarrow.FileReader) func(name string) arrow.Array {
	t.Helper()
	all, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(all.Release)
	return func(name string) arrow.Array { return all.Column(all.Schema().FieldIndices(name)[0]).Data().Chunk(0) }
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Few candidates decode the predicate's columns at them, from the pages
// holding them; few matches (among few or many candidates) decode the
// projection at them.
func TestFewCandidatesDecodeOnlyThePagesHoldingThemAndMatchAWholeDecode(t *testing.T) {
	const rows = 20000
	for _, c := range []struct{ pageIndex, fewCandidates bool }{{false, true}, {true, true}, {false, false}} {
		pageIndex, fewCandidates := c.pageIndex, c.fewCandidates
		name := map[bool]string{false: "pages listed from their headers", true: "pages listed by the page index"}[pageIndex] +
			map[bool]string{false: ", every row a candidate, few matching", true: ", few candidates"}[fewCandidates]
		t.Run(name, func(t *testing.T) {
			// id and message unique a row: plain (a dictionary would be most of
			// their chunks, read for any row)
			data, sc := demoRowGroupWith(t, rows, parquet.WithDataPageSize(4<<10), parquet.WithPageIndexEnabled(pageIndex), parquet.WithDictionaryFor("message", false), parquet.WithDictionaryFor("id", false))
			src, fr, ft, cm := openCounted(t, data)
			var e predicate.Expr = predicate.Or{Kids: []predicate.Expr{
				&predicate.Leaf{FieldID: 4, Op: predicate.OpLike, Lits: []value.Value{value.OfString("%retry%")}},
				&predicate.Leaf{FieldID: 3, Op: predicate.OpEq, Lits: []value.Value{value.OfString("error")}}}}
			vf := &vectorFilter{e: e, ids: predicate.FieldIDs(e)}
			leaves, types, err := rowFilterColumns(vf, sc, cm)
			if err != nil {
				t.Fatal(err)
			}
			cols := cm.Projection(ft.Meta, []int{1, 2, 4})
			// candidates in three places: the first rows, a run in the
			// middle, the last row (well under 1/8 of the rows)
			mask := roaring64.New()
			for r := uint64(0); r < 300; r += 3 {
				mask.Add(r)
			}
			mask.AddRange(10000, 10400)
			mask.Add(rows - 1)
			if !fewCandidates {
				// every row a candidate; the predicate, narrowed to the
				// same few rows by an id range, keeps few
				mask.AddRange(0, rows)
				e = predicate.And{Kids: []predicate.Expr{e, predicate.Or{Kids: []predicate.Expr{
					&predicate.Leaf{FieldID: 1, Op: predicate.OpLt, Lits: []value.Value{value.OfInt(300)}},
					predicate.And{Kids: []predicate.Expr{
						&predicate.Leaf{FieldID: 1, Op: predicate.OpGtEq, Lits: []value.Value{value.OfInt(10000)}},
						&predicate.Leaf{FieldID: 1, Op: predicate.OpLt, Lits: []value.Value{value.OfInt(10400)}}}}}}}}
				vf = &vectorFilter{e: e, ids: predicate.FieldIDs(e)}
				if leaves, types, err = rowFilterColumns(vf, sc, cm); err != nil {
					t.Fatal(err)
				}
			}
			col := wholeFile(t, fr)
			statuses, msgs := col("status").(*array.String), col("message").(*array.String)
			var want []int64
			ids := col("id").(*array.Int64)
			it := mask.Iterator()
			for it.HasNext() {
				r := int64(it.Next())
				if !fewCandidates && !(ids.Value(int(r)) < 300 || (ids.Value(int(r)) >= 10000 && ids.Value(int(r)) < 10400)) {
					continue
				}
				if strings.Contains(msgs.Value(int(r)), "retry") || statuses.Value(int(r)) == "error" {
					want = append(want, r)
				}
			}
			sf := newScanFile(fr, source{src}, ft)
			var chunks int64
			for l := range ft.Meta.Schema.NumColumns() {
				chunks += ft.Chunks[0][l].Length
			}
			for round := range 2 { // the second finds the pages listed
				before := src.n.Load()
				matched, memo := roaring64.New(), map[int]*decodedRowGroup{}
				g, err := scanRowGroup(context.Background(), sf, cm, 0, 0, rows, leaves, types, vf, mask, cols, true, matched, memo)
				if err != nil {
					t.Fatal(err)
				}
				read := src.n.Load() - before
				if g == nil || len(memo) != 0 {
					t.Fatalf("round %d: the row group decoded whole", round)
				}
				got := matched.ToArray()
				if len(got) != len(want) {
					t.Fatalf("round %d: %d rows matched, the oracle %d", round, len(got), len(want))
				}
				for i, r := range want {
					if got[i] != uint64(r) {
						t.Fatalf("round %d: match %d is row %d, the oracle's %d", round, i, got[i], r)
					}
				}
				if len(g.cols) != 3 {
					t.Fatalf("round %d: %d columns projected, want 3", round, len(g.cols))
				}
				for c, f := range g.schema.Fields() {
					full := col(f.Name)
					if g.cols[c].Len() != len(want) {
						t.Fatalf("round %d: column %s has %d values for %d rows", round, f.Name, g.cols[c].Len(), len(want))
					}
					for i, r := range want {
						if !array.SliceEqual(g.cols[c], int64(i), int64(i+1), full, r, r+1) {
							t.Fatalf("round %d: column %s at row %d differs from the whole file's", round, f.Name, r)
						}
					}
				}
				if round == 1 && fewCandidates && 4*read > chunks {
					t.Errorf("read %d bytes of %d in the row group's chunks: not only the pages holding candidates", read, chunks)
				}
			}
		})
	}
}

// With continuation a call's batches are pieces of one Arrow IPC stream:
// the schema once, then one record batch message a batch (a batch whose
// columns carry other metadata is typed as the stream is); a batch typed
// otherwise starts a stream of its own. Without it each batch is a whole
// stream. Read piece by piece, every batch decodes to its rows.
func TestBatchesOfOneCallArePiecesOfOneArrowStreamWithTheSchemaOnce(t *testing.T) {
	batch := func(md arrow.Metadata, typ arrow.DataType, vs ...int64) arrow.RecordBatch {
		b := array.NewBuilder(memory.DefaultAllocator, typ)
		defer b.Release()
		for _, v := range vs {
			switch b := b.(type) {
			case *array.Int64Builder:
				b.Append(v)
			case *array.Int32Builder:
				b.Append(int32(v))
			}
		}
		a := b.NewArray()
		defer a.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: typ, Nullable: true, Metadata: md}}, nil), []arrow.Array{a}, int64(len(vs)))
	}
	withID := arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})
	recs := []arrow.RecordBatch{batch(withID, arrow.PrimitiveTypes.Int64, 1, 2), batch(arrow.Metadata{}, arrow.PrimitiveTypes.Int64, 3),
		batch(withID, arrow.PrimitiveTypes.Int64, 4, 5, 6), batch(withID, arrow.PrimitiveTypes.Int32, 7)}
	bs := &batchStream{continuation: true}
	var pieces [][]byte
	var continues []bool
	for _, rec := range recs {
		b, c, err := bs.encode(rec)
		if err != nil {
			t.Fatal(err)
		}
		pieces, continues = append(pieces, b), append(continues, c)
		rec.Release()
	}
	if !slices.Equal(continues, []bool{false, true, true, false}) {
		t.Fatalf("continues %v: want the first and the int32 batch to start a stream", continues)
	}
	if len(pieces[2]) >= len(pieces[0]) {
		t.Fatalf("a continuing batch of 3 rows takes %d bytes, the first (schema and 2 rows) %d: want the schema sent once", len(pieces[2]), len(pieces[0]))
	}
	var feed bytes.Reader
	var rd *ipc.Reader
	var got []int64
	for i, piece := range pieces {
		feed.Reset(piece)
		if !continues[i] {
			var err error
			if rd, err = ipc.NewReader(&feed); err != nil {
				t.Fatal(err)
			}
		}
		if !rd.Next() {
			t.Fatalf("piece %d: no record: %v", i, rd.Err())
		}
		if feed.Len() != 0 {
			t.Fatalf("piece %d: %d bytes left past its record", i, feed.Len())
		}
		switch col := rd.RecordBatch().Column(0).(type) {
		case *array.Int64:
			got = append(got, col.Int64Values()...)
		case *array.Int32:
			for _, v := range col.Int32Values() {
				got = append(got, int64(v))
			}
		}
	}
	if !slices.Equal(got, []int64{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("decoded %v", got)
	}
	whole, c, err := (&batchStream{}).encode(batch(withID, arrow.PrimitiveTypes.Int64, 9))
	if err != nil || c {
		t.Fatalf("without continuation: continues %v, %v", c, err)
	}
	rd, err = ipc.NewReader(bytes.NewReader(whole))
	if err != nil || !rd.Next() || rd.RecordBatch().NumRows() != 1 || rd.Next() || rd.Err() != nil {
		t.Fatalf("without continuation the batch is not a whole stream of one record: %v", err)
	}
}

// A predicate on string columns whose chunks are wholly
// dictionary-encoded is evaluated on Arrow dictionaries (the values once,
// the rows as indices); a chunk with plain pages is read plain. Either
// way the matching rows are the oracle's and the projection, taken from
// the predicate's columns at few matches or whole at many, is plain
// strings equal to the whole file's.
func TestStringPredicatesOnWhollyDictionaryEncodedChunksAreEvaluatedOnTheirDictionaries(t *testing.T) {
	const rows = 5000
	for _, f := range []struct {
		name  string
		props []parquet.WriterProperty
		dict  bool
	}{
		{"dictionary pages", nil, true},
		{"plain pages", []parquet.WriterProperty{parquet.WithDictionaryFor("tenant_id", false), parquet.WithDictionaryFor("status", false)}, false},
	} {
		data, sc := demoRowGroupWith(t, rows, f.props...)
		for _, q := range []struct {
			name string
			e    predicate.Expr
			few  bool // hits few enough for the projection at them only
		}{
			{"few matches", &predicate.Leaf{FieldID: 2, Op: predicate.OpEq, Lits: []value.Value{value.OfString("tenant-007")}}, true},
			{"many matches", &predicate.Leaf{FieldID: 3, Op: predicate.OpIn, Lits: []value.Value{value.OfString("ok"), value.OfString("warn")}}, false},
		} {
			t.Run(f.name+"/"+q.name, func(t *testing.T) {
				src, fr, ft, cm := openCounted(t, data)
				vf := &vectorFilter{e: q.e, ids: predicate.FieldIDs(q.e)}
				leaves, types, err := rowFilterColumns(vf, sc, cm)
				if err != nil {
					t.Fatal(err)
				}
				sf := newScanFile(fr, source{src}, ft)
				if got := sf.predReader(0, leaves) != sf.fr; got != f.dict {
					t.Fatalf("read as dictionaries %v, want %v", got, f.dict)
				}
				cols := cm.Projection(ft.Meta, []int{1, 2, 3})
				matched, memo := roaring64.New(), map[int]*decodedRowGroup{}
				aligned, err := scanRowGroup(context.Background(), sf, cm, 0, 0, rows, leaves, types, vf, nil, cols, true, matched, memo)
				if err != nil {
					t.Fatal(err)
				}
				col := wholeFile(t, fr)
				tenants, statuses := col("tenant_id").(*array.String), col("status").(*array.String)
				var want []uint64
				for i := range rows {
					if tenants.Value(i) == "tenant-007" && q.few || !q.few && (statuses.Value(i) == "ok" || statuses.Value(i) == "warn") {
						want = append(want, uint64(i))
					}
				}
				if got := matched.ToArray(); len(want) == 0 || !equalU64(got, want) {
					t.Fatalf("matched %d rows, the oracle %d", len(got), len(want))
				}
				g, at := aligned, want // the projection aligned with the matches
				if !q.few {
					g, at = memo[0], nil // the whole row group's columns
				}
				if g == nil || (aligned == nil) != !q.few {
					t.Fatalf("projection aligned %v, whole %v; want aligned %v", aligned != nil, memo[0] != nil, q.few)
				}
				for c, fld := range g.schema.Fields() {
					if fld.Type.ID() == arrow.DICTIONARY || g.cols[c].DataType().ID() == arrow.DICTIONARY {
						t.Fatalf("column %s projected as %s", fld.Name, g.cols[c].DataType())
					}
					full := col(fld.Name)
					for i := 0; i < g.cols[c].Len(); i++ {
						row := i
						if at != nil {
							row = int(at[i])
						}
						if got, want := g.cols[c].ValueStr(i), full.ValueStr(row); got != want {
							t.Fatalf("column %s row %d: %s, want %s", fld.Name, row, got, want)
						}
					}
				}
			})
		}
	}
}

// A batch's rows taken from a decoded row group are exactly the oracle's
// rows at those positions, whichever way they are cut out: a run of
// consecutive rows (one zero-copy slice), a run with a gap, rows out of
// order and a few single rows (take, slices of one row).
func TestABatchProjectedFromADecodedRowGroupHoldsExactlyItsRowsInTheirOrder(t *testing.T) {
	const rows = 3000
	data, _ := demoRowGroup(t, rows)
	_, fr, ft, cm := openCounted(t, data)
	all, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer all.Release()
	g, err := newDecodedRowGroup(all)
	if err != nil {
		t.Fatal(err)
	}
	run := func(from, to int64) []int64 {
		var out []int64
		for p := from; p < to; p++ {
			out = append(out, p)
		}
		return out
	}
	s := &Service{}
	for _, c := range []struct {
		name      string
		positions []int64
	}{
		{"a run from the first row", run(0, 1200)},
		{"a run in the middle", run(700, 2999)},
		{"a run to the last row", run(2990, rows)},
		{"a run with one row missing", append(run(10, 500), run(501, 900)...)},
		{"a descending run", []int64{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
		{"a run of repeated rows", []int64{4, 4, 5, 6, 7, 8}},
		{"a few single rows", []int64{3, 1000, 2999}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, _, err := s.projectRecord(context.Background(), "f.parquet", "id", ft, cm, []int32{1, 2, 3, 4}, c.positions, map[int]*decodedRowGroup{0: g})
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			if rec.NumRows() != int64(len(c.positions)) {
				t.Fatalf("%d rows, want %d", rec.NumRows(), len(c.positions))
			}
			for col := range int(rec.NumCols()) {
				for i, p := range c.positions {
					got, want := rec.Column(col).ValueStr(i), g.cols[col].ValueStr(int(p))
					if got != want {
						t.Fatalf("column %s, row %d (position %d): %q, want %q", rec.Schema().Field(col).Name, i, p, got, want)
					}
				}
			}
		})
	}
}
