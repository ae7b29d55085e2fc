package sideindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// payloadCase is one kind's payload of data file A and its forgeries:
// payloads that pass every check Open makes for A's header (another
// file's payload, or another build of A's, restamped with A's header and
// fresh checksums), which only the registry's Commit tells apart.
type payloadCase struct {
	kind   Kind
	file   *testFile
	want   Header
	good   []byte
	forged map[string][]byte
	leaves []*predicate.Leaf // leaves on the indexed field (scalar kinds)
	mat    *vector.Matrix    // the file's vectors (vector kinds)
}

var (
	payloadCasesOnce sync.Once
	payloadCasesMemo []payloadCase
)

// payloadCases builds one case per kind (built once per test binary).
func payloadCases(t testing.TB) []payloadCase {
	t.Helper()
	payloadCasesOnce.Do(func() { payloadCasesMemo = buildPayloadCases(t) })
	if len(payloadCasesMemo) != len(Kinds()) {
		t.Fatalf("payload cases of %d kinds, %d are registered", len(payloadCasesMemo), len(Kinds()))
	}
	return payloadCasesMemo
}

func buildPayloadCases(t testing.TB) []payloadCase {
	ctx := context.Background()
	_, s := schemasOf(testCols())
	a := loadFile(t, "s3://b/t/data/part-00000.parquet", writeFile(t, testCols(), layouts[0], 1200, 5), s)
	b := loadFile(t, "s3://b/t/data/part-00001.parquet", writeFile(t, testCols(), layouts[0], 1200, 6), s)
	_, ls := schemasOf(listCols())
	la := loadFile(t, "s3://b/t/data/part-00000.parquet", writeFile(t, listCols(), layouts[0], 1200, 5), ls)
	lb := loadFile(t, "s3://b/t/data/part-00001.parquet", writeFile(t, listCols(), layouts[0], 1200, 6), ls)
	// page_index: keys ascending in A, descending in B (pages of other ranges)
	ordered := func(desc bool) []testCol {
		return []testCol{{"k", arrow.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any {
			if desc {
				g = 1199 - g
			}
			return g * 3
		}}}
	}
	_, os := schemasOf(ordered(false))
	oa := loadFile(t, "s3://b/t/data/part-00000.parquet", writeFile(t, ordered(false), layouts[0], 1200, 5), os)
	ob := loadFile(t, "s3://b/t/data/part-00001.parquet", writeFile(t, ordered(true), layouts[0], 1200, 5), os)
	va, vb := vectorFile(t, 2500, 3), vectorFile(t, 2500, 4)
	vb.path = "s3://b/t/data/v-other.parquet"
	build := func(k Kind, in Input) []byte {
		p, err := k.Build(ctx, in)
		if err != nil {
			t.Fatalf("%s: build: %v", k.Name(), err)
		}
		return p
	}
	restamp := func(k Kind, p []byte, want Header) []byte {
		f, err := Restamp(ctx, k.Name(), p, want)
		if err != nil {
			t.Fatalf("%s: restamp: %v", k.Name(), err)
		}
		return f
	}
	var out []payloadCase
	for _, k := range Kinds() {
		c := payloadCase{kind: k, forged: map[string][]byte{}}
		var ina, inb Input
		switch k.Name() {
		case "ivf", "ivf_pq":
			params := map[string]string{"nlist": "8"}
			ina, inb = va.vectorInput(t, 2, "emb", params), vb.vectorInput(t, 2, "emb", params)
			c.file = va
			m, err := ReadVectors(ctx, va.path, va.footer, ina.Source, ina.Column)
			if err != nil {
				t.Fatal(err)
			}
			c.mat = m
			// Another build of the same file (other seed: other lists of
			// the same count and dimension) under the committed header:
			// the finding of a payload swapped while its vectors and
			// packed lists were cached.
			other := va.vectorInput(t, 2, "emb", map[string]string{"nlist": "8", "seed": "2"})
			c.want = wantOf(ina, k.Name())
			c.forged["another build of the file"] = restamp(k, build(k, other), c.want)
		case "label_list":
			field, _ := ls.FindFieldByName("tags")
			ina, inb = la.input(t, field.ID, nil), lb.input(t, field.ID, nil)
			c.file = la
		case "page_index":
			ina, inb = oa.input(t, 1, nil), ob.input(t, 1, nil)
			c.file = oa
		case "ngram":
			field, _ := s.FindFieldByName("str")
			ina, inb = a.input(t, field.ID, nil), b.input(t, field.ID, nil)
			c.file = a
		default:
			field, _ := s.FindFieldByName("i64")
			ina, inb = a.input(t, field.ID, nil), b.input(t, field.ID, nil)
			c.file = a
		}
		c.want = wantOf(ina, k.Name())
		c.good = build(k, ina)
		c.forged["another file's"] = restamp(k, build(k, inb), c.want)
		if c.mat == nil {
			field, _ := c.file.schema.FindFieldByID(ina.FieldID)
			r := rand.New(rand.NewPCG(7, uint64(ina.FieldID)))
			for len(c.leaves) < 24 {
				if l := randomLeaf(r, c.file.schema, field, c.file.df.Cols[field.ID]); l != nil {
					c.leaves = append(c.leaves, l)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// answers evaluates every leaf (scalar kinds) or searches three queries
// (vector kinds); errors are part of the answer.
func (c payloadCase) answers(t testing.TB, idx Index) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	if vi, ok := idx.(VectorIndex); ok {
		ix := vi.Vectors()
		for _, row := range []int64{1, 700, 2222} {
			// one list probed: which rows the lists hold decides the answer
			hits, _, err := ix.Search(c.mat, vector.Query{Vector: c.mat.Row(row), K: 10, Metric: vector.L2, NProbe: 1})
			out = append(out, fmtAnswer(hits, err))
		}
		return out
	}
	for _, l := range c.leaves {
		a, err := idx.Eval(ctx, l)
		if err != nil || a.Unknown {
			out = append(out, fmtAnswer(nil, err))
			continue
		}
		out = append(out, fmtAnswer(a.Positions.ToArray(), nil))
	}
	return out
}

func fmtAnswer(v any, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	return fmt.Sprint(v)
}

// A forged payload — another file's, or another build's, under the
// committed header with every checksum recomputed — opens (Open checks
// nothing the forger cannot recompute) and, when it is another file's,
// answers differently for some query; only the committed size and SHA-256
// refuse it. For every kind.
func TestOnlyTheCommittedHashRefusesAForgedPayloadOfEveryKind(t *testing.T) {
	ctx := context.Background()
	for _, c := range payloadCases(t) {
		commit := CommitOf(c.good)
		good, err := OpenCommitted(ctx, c.kind, c.good, c.want, commit)
		if err != nil {
			t.Fatalf("%s: the committed payload does not open: %v", c.kind.Name(), err)
		}
		ref := c.answers(t, good)
		for what, forged := range c.forged {
			idx, err := c.kind.Open(ctx, forged, c.want)
			if err != nil {
				t.Fatalf("%s: %s payload, restamped, does not open (the forgery is not one): %v", c.kind.Name(), what, err)
			}
			differs := false
			for i, a := range c.answers(t, idx) {
				differs = differs || a != ref[i]
			}
			if !differs && what == "another file's" { // (another build of the same vectors may well agree)
				t.Errorf("%s: %s payload answers every query as the committed one: it forges nothing", c.kind.Name(), what)
			}
			if _, err := OpenCommitted(ctx, c.kind, forged, c.want, commit); !errors.Is(err, ErrNotCommitted) {
				t.Errorf("%s: %s payload under the committed hash: %v, want ErrNotCommitted", c.kind.Name(), what, err)
			}
		}
		flipped := bytes.Clone(c.good)
		flipped[len(flipped)/3] ^= 1
		if _, err := OpenCommitted(ctx, c.kind, flipped, c.want, commit); !errors.Is(err, ErrNotCommitted) {
			t.Errorf("%s: one flipped byte: %v, want ErrNotCommitted", c.kind.Name(), err)
		}
		if _, err := OpenCommitted(ctx, c.kind, c.good[:len(c.good)-1], c.want, commit); !errors.Is(err, ErrNotCommitted) {
			t.Errorf("%s: one byte short: %v, want ErrNotCommitted", c.kind.Name(), err)
		}
		for what, bad := range map[string]Commit{"no commit": {}, "no size": {SHA256: commit.SHA256},
			"a short hash": {Bytes: commit.Bytes, SHA256: commit.SHA256[:62]}, "not hex": {Bytes: commit.Bytes, SHA256: "x" + commit.SHA256[1:]}} {
			if _, err := OpenCommitted(ctx, c.kind, c.good, c.want, bad); !errors.Is(err, ErrNoCommit) {
				t.Errorf("%s: %s: %v, want ErrNoCommit", c.kind.Name(), what, err)
			}
		}
	}
}

// Lists packed for one payload of a file and searched with another
// payload's lists (same count, other lengths) are refused, never indexed
// out of range (the crash of a payload swapped while packed lists were
// cached).
func TestPackedListsOfAnotherPayloadAreRefusedNotIndexedOutOfRange(t *testing.T) {
	ctx := context.Background()
	for _, c := range payloadCases(t) {
		if c.mat == nil {
			continue
		}
		good, err := c.kind.Open(ctx, c.good, c.want)
		if err != nil {
			t.Fatal(err)
		}
		forged, err := c.kind.Open(ctx, c.forged["another build of the file"], c.want)
		if err != nil {
			t.Fatal(err)
		}
		gix, fix := good.(VectorIndex).Vectors(), forged.(VectorIndex).Vectors()
		pack := gix.Pack
		if gix.PQ != nil {
			pack = gix.PackRadii
		}
		pk, err := pack(c.mat)
		if err != nil {
			t.Fatal(err)
		}
		if fix.NList() != gix.NList() || fix.Dim != gix.Dim {
			t.Fatalf("%s: the other build has %d lists of %d dimensions, the committed one %d of %d: not the finding's shape", c.kind.Name(), fix.NList(), fix.Dim, gix.NList(), gix.Dim)
		}
		if pk.Fits(gix) != nil {
			t.Fatalf("%s: lists packed for an index do not fit it: %v", c.kind.Name(), pk.Fits(gix))
		}
		q := vector.Query{Vector: c.mat.Row(5), K: 10, Metric: vector.L2}
		if _, _, err := fix.SearchPacked(c.mat, pk, q); (err == nil) != (gix.PQ != nil) {
			// ivf_pq packs only radii, which fit any index of as many lists
			t.Fatalf("%s: a search with another payload's packed lists: %v", c.kind.Name(), err)
		}
		if lo := fix.LowerBound(pk, q); gix.PQ == nil && lo > -1e300 {
			t.Fatalf("%s: a lower bound from another payload's packed lists: %v", c.kind.Name(), lo)
		}
	}
}

// payloadCaseOf is the case of kind name.
func payloadCaseOf(t testing.TB, name string) payloadCase {
	for _, c := range payloadCases(t) {
		if c.kind.Name() == name {
			return c
		}
	}
	t.Fatalf("no payload case of kind %s", name)
	return payloadCase{}
}

// fuzzPayload fuzzes Open and the evaluation path of kind name on
// payloads of data file A, from a corpus of its committed payload, the
// forgeries, a truncation and a flipped byte: nothing panics, an opened
// index answers only positions inside the file (vector kinds: valid rows,
// searched without packed lists, with their own and with the committed
// payload's), and the committed bytes answer as they always do.
func fuzzPayload(f *testing.F, name string) {
	c := payloadCaseOf(f, name)
	f.Add(c.good)
	for _, p := range c.forged {
		f.Add(p)
	}
	f.Add(c.good[:len(c.good)/2])
	flipped := bytes.Clone(c.good)
	flipped[len(flipped)/2] ^= 0x20
	f.Add(flipped)
	ctx := context.Background()
	good, err := c.kind.Open(ctx, c.good, c.want)
	if err != nil {
		f.Fatal(err)
	}
	ref := c.answers(f, good)
	var goodPk *vector.Packed
	if vi, ok := good.(VectorIndex); ok {
		pack := vi.Vectors().Pack
		if vi.Vectors().PQ != nil {
			pack = vi.Vectors().PackRadii
		}
		if goodPk, err = pack(c.mat); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		idx, err := c.kind.Open(ctx, payload, c.want)
		if err != nil {
			return
		}
		if vi, ok := idx.(VectorIndex); ok {
			checkVectorSearches(t, c, vi.Vectors(), goodPk)
		} else {
			checkEvaluations(t, c, idx)
		}
		if bytes.Equal(payload, c.good) {
			for i, a := range c.answers(t, idx) {
				if a != ref[i] {
					t.Fatalf("the committed payload answered query %d with %s, before %s", i, a, ref[i])
				}
			}
		}
	})
}

// checkEvaluations evaluates every leaf and reads every row group an
// index serves the planner: positions stay inside the file.
func checkEvaluations(t *testing.T, c payloadCase, idx Index) {
	for _, l := range c.leaves {
		a, err := idx.Eval(context.Background(), l)
		if err == nil && !a.Unknown && a.Positions != nil && !a.Positions.IsEmpty() && a.Positions.Maximum() >= uint64(c.want.Rows) {
			t.Fatalf("%s answered position %d of a %d-row file", l, a.Positions.Maximum(), c.want.Rows)
		}
	}
	if src, ok := idx.(PageIndexSource); ok {
		for rg := -1; rg <= src.RowGroups(); rg++ {
			_, _ = src.RowGroupIndex(rg)
			_, _ = src.SidePageIndex(rg)
		}
	}
	if b, ok := idx.(*bloomIndex); ok {
		for rg := -1; rg <= len(b.groups); rg++ {
			if bf, err := b.RowGroupBloom(rg); err == nil {
				bf.CheckHash(0x9e3779b97f4a7c15)
			}
		}
	}
}

// checkVectorSearches searches ix without packed lists, with its own and
// with pk (another payload's), masked and under a bound: errors are fine,
// every hit is a valid row of the file.
func checkVectorSearches(t *testing.T, c payloadCase, ix *vector.Index, pk *vector.Packed) {
	var own *vector.Packed
	if ix.PQ != nil {
		own, _ = ix.PackRadii(c.mat)
	} else {
		own, _ = ix.Pack(c.mat)
	}
	mask := roaring64.New()
	mask.AddRange(100, 1900)
	bound := vector.NewBound(10)
	bound.Add([]vector.Hit{{Pos: 1, Dist: 40}})
	for _, packed := range []*vector.Packed{nil, own, pk} {
		for _, q := range []vector.Query{
			{Vector: c.mat.Row(3), K: 10, Metric: vector.L2},
			{Vector: c.mat.Row(9), K: 5, Metric: vector.Dot, NProbe: 1, Mask: mask},
			{Vector: c.mat.Row(11), K: 10, Metric: vector.Cosine, Bound: bound},
			{Vector: c.mat.Row(12), K: 10, Metric: vector.L2, Bound: bound, Centroids: ix.CentroidDistances(vector.Query{Vector: c.mat.Row(12)})},
		} {
			_ = ix.LowerBound(packed, q)
			hits, _, err := ix.SearchPacked(c.mat, packed, q)
			if err != nil {
				continue
			}
			for _, h := range hits {
				if h.Pos < 0 || h.Pos >= c.mat.Rows() || !c.mat.Valid[h.Pos] {
					t.Fatalf("a search returned row %d of a %d-row file", h.Pos, c.mat.Rows())
				}
			}
		}
	}
}

func FuzzBtreePayload(f *testing.F)     { fuzzPayload(f, "btree") }
func FuzzBloomPayload(f *testing.F)     { fuzzPayload(f, "bloom") }
func FuzzBitmapPayload(f *testing.F)    { fuzzPayload(f, "bitmap") }
func FuzzNgramPayload(f *testing.F)     { fuzzPayload(f, "ngram") }
func FuzzLabelListPayload(f *testing.F) { fuzzPayload(f, "label_list") }
func FuzzPageIndexPayload(f *testing.F) { fuzzPayload(f, "page_index") }
func FuzzIVFPayload(f *testing.F)       { fuzzPayload(f, "ivf") }
func FuzzIVFPQPayload(f *testing.F)     { fuzzPayload(f, "ivf_pq") }
