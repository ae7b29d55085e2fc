package sideindex

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

const vecDim = 16

// vectorFile writes rows with a fixed_size_list<float>[16] column "emb"
// and a list<double> column "emb64" (every 50th row NULL, every 40th one
// element short), in row groups of 1000, around 12 latent centres.
// (arrow-go's Parquet writer cannot write a NULL fixed_size_list.)
func vectorFile(t testing.TB, rows int, seed uint64) *testFile {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "emb", Type: arrow.FixedSizeListOf(vecDim, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "emb64", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	}, nil)
	r := rand.New(rand.NewPCG(seed, 3))
	centres := make([]float64, 12*vecDim)
	for i := range centres {
		centres[i] = r.NormFloat64() * 3
	}
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(as, &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(1000)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	emb := b.Field(1).(*array.FixedSizeListBuilder)
	embV := emb.ValueBuilder().(*array.Float32Builder)
	e64 := b.Field(2).(*array.ListBuilder)
	e64V := e64.ValueBuilder().(*array.Float64Builder)
	// One record per row group: arrow-go's writer mis-slices a
	// fixed_size_list record split into several row groups.
	flush := func() {
		rec := b.NewRecordBatch()
		defer rec.Release()
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rows {
		ids.Append(int64(i))
		c := r.IntN(12)
		v := make([]float64, vecDim)
		for j := range v {
			v[j] = centres[c*vecDim+j] + r.NormFloat64()
		}
		emb.Append(true)
		for _, x := range v {
			embV.Append(float32(x))
		}
		n := vecDim
		if i%40 == 3 {
			n--
		}
		if i%50 == 7 {
			e64.AppendNull()
		} else {
			e64.Append(true)
			e64V.AppendValues(v[:n], nil)
		}
		if i%1000 == 999 || i == rows-1 {
			flush()
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	s := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "emb", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.Float32, ElementRequired: true}},
		iceberg.NestedField{ID: 4, Name: "emb64", Type: &iceberg.ListType{ElementID: 5, Element: iceberg.PrimitiveTypes.Float64, ElementRequired: true}})
	data := buf.Bytes()
	f, err := footer.Load(context.Background(), footer.Identity{Path: "s3://b/t/data/v.parquet", Size: int64(len(data))}, memSource(data))
	if err != nil {
		t.Fatal(err)
	}
	return &testFile{path: "s3://b/t/data/v.parquet", data: data, footer: f, schema: s}
}

// vectorInput is the build input of the vector column named name.
func (f *testFile) vectorInput(t testing.TB, fieldID int, name string, params map[string]string) Input {
	t.Helper()
	field, _ := f.schema.FindFieldByID(fieldID)
	col := -1
	for i := range f.footer.Meta.Schema.NumColumns() {
		if p := f.footer.Meta.Schema.Column(i).Path(); p == name || strings.HasPrefix(p, name+".") {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no leaf under %s", name)
	}
	return Input{File: f.path, Identity: footer.IdentityDir(f.footer.ID.Size, f.footer.NumRows(), f.footer.Hash), Footer: f.footer,
		Source: memSource(f.data), FieldID: fieldID, Type: field.Type, Column: col, Params: params}
}

func openVector(t *testing.T, kind string, in Input) (*vector.Index, []byte) {
	t.Helper()
	k, ok := Lookup(kind)
	if !ok {
		t.Fatalf("kind %s is not registered", kind)
	}
	p, err := k.Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := k.Open(context.Background(), p, wantOf(in, kind))
	if err != nil {
		t.Fatal(err)
	}
	return idx.(VectorIndex).Vectors(), p
}

func TestVectorsAreReadPerFilePositionWithNullAndWrongLengthRowsInvalid(t *testing.T) {
	f := vectorFile(t, 3000, 1)
	m, err := ReadVectors(context.Background(), f.path, f.footer, memSource(f.data), f.vectorInput(t, 2, "emb", nil).Column)
	if err != nil {
		t.Fatal(err)
	}
	m64, err := ReadVectors(context.Background(), f.path, f.footer, memSource(f.data), f.vectorInput(t, 4, "emb64", nil).Column)
	if err != nil {
		t.Fatal(err)
	}
	if m.Dim != vecDim || m64.Dim != vecDim || m.Rows() != 3000 || m64.Rows() != 3000 {
		t.Fatalf("dims %d, %d rows %d, %d", m.Dim, m64.Dim, m.Rows(), m64.Rows())
	}
	for i := range int64(3000) {
		if !m.Valid[i] || m64.Valid[i] != (i%50 != 7 && i%40 != 3) {
			t.Fatalf("row %d: valid %v / %v", i, m.Valid[i], m64.Valid[i])
		}
		if m.Valid[i] && m64.Valid[i] && !slices.Equal(m.Row(i), m64.Row(i)) {
			t.Fatalf("row %d: float %v, double %v", i, m.Row(i), m64.Row(i))
		}
	}
}

func TestIVFPayloadsAreArrowFilesWhoseSearchMatchesBruteForceAndSkipsInvalidRows(t *testing.T) {
	f := vectorFile(t, 6000, 2)
	for _, col := range []struct {
		id   int
		name string
	}{{2, "emb"}, {4, "emb64"}} {
		in := f.vectorInput(t, col.id, col.name, nil)
		mat, err := ReadVectors(context.Background(), f.path, f.footer, in.Source, in.Column)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"ivf", "ivf_pq"} {
			ix, payload := openVector(t, kind, in)
			r, err := ipc.NewFileReader(bytes.NewReader(payload))
			if err != nil {
				t.Fatalf("%s payload is not an Arrow IPC file: %v", kind, err)
			}
			if r.NumRecords() != 1 || r.Schema().Field(3).Name != "positions" {
				t.Fatalf("%s payload: %d records, schema %s", kind, r.NumRecords(), r.Schema())
			}
			r.Close()
			if ix.NList() != vector.CentroidCount(int64(countTrue(mat.Valid))) || (kind == "ivf_pq") != (ix.PQ != nil) {
				t.Fatalf("%s: %d lists, pq %v", kind, ix.NList(), ix.PQ != nil)
			}
			var rec float64
			rng := rand.New(rand.NewPCG(7, 7))
			for range 20 {
				q := vector.Query{Vector: slices.Clone(mat.Row(int64(rng.IntN(5000) + 1))), K: 10, Metric: vector.L2}
				q.Vector[0] += 0.3
				got, _, err := ix.Search(mat, q)
				if err != nil {
					t.Fatal(err)
				}
				want, _, _ := vector.Exact(mat, q)
				for _, h := range got {
					if !mat.Valid[h.Pos] {
						t.Fatalf("%s %s: row %d has a NULL or wrong-length vector and was returned", kind, col.name, h.Pos)
					}
				}
				rec += overlap(got, want)
			}
			if rec /= 20; rec < 0.95 {
				t.Errorf("%s %s: recall@10 %.3f", kind, col.name, rec)
			}
		}
	}
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

func overlap(got, want []vector.Hit) float64 {
	n := 0
	for _, g := range got {
		for _, w := range want {
			if g.Pos == w.Pos {
				n++
				break
			}
		}
	}
	return float64(n) / float64(len(want))
}

func TestIVFPayloadsRefuseAnyHeaderMismatchAndCorruption(t *testing.T) {
	f := vectorFile(t, 2500, 3)
	in := f.vectorInput(t, 2, "emb", map[string]string{"nlist": "8"})
	mat, err := ReadVectors(context.Background(), f.path, f.footer, in.Source, in.Column)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ivf", "ivf_pq"} {
		ix, payload := openVector(t, kind, in)
		k, _ := Lookup(kind)
		for what, change := range map[string]func(h *Header){
			"field id": func(h *Header) { h.FieldID++ },
			"type":     func(h *Header) { h.IcebergType = "list<double>" },
			"identity": func(h *Header) { h.Identity = "1-2-deadbeef" },
			"params":   func(h *Header) { h.Params = map[string]string{"nlist": "16"} },
			"rows":     func(h *Header) { h.Rows++ },
			"kind":     func(h *Header) {},
		} {
			want := wantOf(in, kind)
			change(&want)
			open := k
			if what == "kind" {
				other := map[string]string{"ivf": "ivf_pq", "ivf_pq": "ivf"}[kind]
				open, _ = Lookup(other)
			}
			if _, err := open.Open(context.Background(), payload, want); err == nil {
				t.Errorf("%s: a payload whose %s differs was opened", kind, what)
			}
		}
		q := vector.Query{Vector: mat.Row(10), K: 10, Metric: vector.Cosine}
		ref, _, err := ix.Search(mat, q)
		if err != nil {
			t.Fatal(err)
		}
		// Flip one byte at 200 places spread over the payload, and cut it
		// at 20 lengths.
		opened := 0
		var bad [][]byte
		for i := range 200 {
			p := slices.Clone(payload)
			p[i*len(p)/200] ^= 0x5a
			bad = append(bad, p)
		}
		for i := range 20 {
			bad = append(bad, payload[:i*len(payload)/20])
		}
		for i, p := range bad {
			idx, err := k.Open(context.Background(), p, wantOf(in, kind))
			if err != nil {
				continue
			}
			opened++
			got, _, err := idx.(VectorIndex).Vectors().Search(mat, q)
			if err != nil || !slices.Equal(got, ref) {
				t.Fatalf("%s: corruption %d opened and searched differently: %v", kind, i, err)
			}
		}
		t.Logf("%s: %d of 220 corrupted payloads still opened (bytes outside the covered values)", kind, opened)
	}
}

func TestASmallFileGetsAnIVFPayloadWithoutListsAndADimensionMismatchIsLoud(t *testing.T) {
	f := vectorFile(t, 300, 4)
	in := f.vectorInput(t, 4, "emb64", nil)
	ix, _ := openVector(t, "ivf", in)
	if ix.NList() != 0 {
		t.Fatalf("a 300-row file got %d lists", ix.NList())
	}
	mat, _ := ReadVectors(context.Background(), f.path, f.footer, in.Source, in.Column)
	mask := roaring64.BitmapOf(1, 2, 3, 7, 200)
	got, st, err := ix.Search(mat, vector.Query{Vector: mat.Row(1), K: 10, Metric: vector.Dot, Mask: mask})
	if err != nil || !st.Exact || len(got) != 3 {
		t.Fatalf("got %v %+v %v (row 3 is short, row 7 NULL: 3 rows match)", got, st, err)
	}
	if _, _, err := ix.Search(mat, vector.Query{Vector: make([]float32, vecDim+1), K: 3}); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("err = %v, want a dimension mismatch", err)
	}
	if _, err := (ivfKind{}).Build(context.Background(), f.vectorInput(t, 1, "id", nil)); err == nil {
		t.Fatal("an ivf index was built over an integer column")
	}
	if _, err := (ivfKind{pq: true}).Build(context.Background(), f.vectorInput(t, 2, "emb", map[string]string{"m": "5"})); err == nil {
		t.Fatal("m=5 subspaces of 16 dimensions were accepted")
	}
}
