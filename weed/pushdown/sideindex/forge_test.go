package sideindex

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	payloadCasesMu   sync.Mutex
	payloadCasesMemo = map[string]payloadCase{}
)

// payloadCases builds one case per kind (each built once per test binary).
func payloadCases(t testing.TB) []payloadCase {
	t.Helper()
	var out []payloadCase
	for _, k := range Kinds() {
		out = append(out, payloadCaseOf(t, k.Name()))
	}
	return out
}

// payloadCaseOf is the case of kind name, built on first use (a fuzz
// worker builds only its kind's files and payloads).
func payloadCaseOf(t testing.TB, name string) payloadCase {
	t.Helper()
	payloadCasesMu.Lock()
	defer payloadCasesMu.Unlock()
	if c, ok := payloadCasesMemo[name]; ok {
		return c
	}
	k, ok := Lookup(name)
	if !ok {
		t.Fatalf("no kind %s", name)
	}
	c := buildPayloadCase(t, k)
	payloadCasesMemo[name] = c
	return c
}

// casePair writes data files A and B of cols (B from another seed, or
// other rows) under one schema.
func casePair(t testing.TB, cols, colsB []testCol) (a, b *testFile) {
	_, s := schemasOf(cols)
	a = loadFile(t, "s3://b/t/data/part-00000.parquet", writeFile(t, cols, layouts[0], caseRows, 5), s)
	b = loadFile(t, "s3://b/t/data/part-00001.parquet", writeFile(t, colsB, layouts[0], caseRows, 6), s)
	return a, b
}

// caseRows are the rows of the scalar kinds' files (small: a fuzz worker
// minimizes inputs of the payloads' size).
const caseRows = 800

// ordered is one int64 column "k": ascending keys, or descending ones.
func ordered(desc bool) []testCol {
	return []testCol{{"k", arrow.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int64, func(r *rand.Rand, g int64) any {
		if desc {
			g = caseRows - 1 - g
		}
		return g * 3
	}}}
}

func buildPayloadCase(t testing.TB, k Kind) payloadCase {
	ctx := context.Background()
	build := func(in Input) []byte {
		p, err := k.Build(ctx, in)
		if err != nil {
			t.Fatalf("%s: build: %v", k.Name(), err)
		}
		return p
	}
	restamp := func(p []byte, want Header) []byte {
		f, err := Restamp(ctx, k.Name(), p, want)
		if err != nil {
			t.Fatalf("%s: restamp: %v", k.Name(), err)
		}
		return f
	}
	c := payloadCase{kind: k, forged: map[string][]byte{}}
	var ina, inb Input
	switch k.Name() {
	case "ivf", "ivf_pq":
		va, vb := vectorFile(t, 2500, 3), vectorFile(t, 2500, 4)
		vb.path = "s3://b/t/data/v-other.parquet"
		params := map[string]string{"nlist": "8"}
		ina, inb = va.vectorInput(t, 2, "emb", params), vb.vectorInput(t, 2, "emb", params)
		c.file = va
		m, err := ReadVectors(ctx, va.path, va.footer, ina.Source, ina.Column)
		if err != nil {
			t.Fatal(err)
		}
		c.mat = m
		// Another build of the same file (other seed: other lists of the
		// same count and dimension) under the committed header: the
		// finding of a payload swapped while its vectors and packed lists
		// were cached.
		other := va.vectorInput(t, 2, "emb", map[string]string{"nlist": "8", "seed": "2"})
		c.forged["another build of the file"] = restamp(build(other), wantOf(ina, k.Name()))
	case "label_list":
		a, b := casePair(t, listCols(), listCols())
		field, _ := a.schema.FindFieldByName("tags")
		ina, inb, c.file = a.input(t, field.ID, nil), b.input(t, field.ID, nil), a
	case "page_index":
		// keys ascending in A, descending in B: pages of other ranges
		a, b := casePair(t, ordered(false), ordered(true))
		ina, inb, c.file = a.input(t, 1, nil), b.input(t, 1, nil), a
	default:
		a, b := casePair(t, testCols(), testCols())
		column := "i64"
		if k.Name() == "ngram" {
			column = "str"
		}
		field, _ := a.schema.FindFieldByName(column)
		ina, inb, c.file = a.input(t, field.ID, nil), b.input(t, field.ID, nil), a
	}
	c.want = wantOf(ina, k.Name())
	c.good = build(ina)
	c.forged["another file's"] = restamp(build(inb), c.want)
	if c.mat == nil {
		field, _ := c.file.schema.FindFieldByID(ina.FieldID)
		r := rand.New(rand.NewPCG(7, uint64(ina.FieldID)))
		for len(c.leaves) < 24 {
			if l := randomLeaf(r, c.file.schema, field, c.file.df.Cols[field.ID]); l != nil {
				c.leaves = append(c.leaves, l)
			}
		}
	}
	return c
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

// checkEvaluations evaluates the first fuzzLeaves leaves and reads every
// row group an index serves the planner: positions stay inside the file.
func checkEvaluations(t *testing.T, c payloadCase, idx Index) {
	for _, l := range c.leaves[:fuzzLeaves] {
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

// fuzzLeaves are the leaves a fuzz input is evaluated with (the cost of an
// exec bounds how fast a worker minimizes).
const fuzzLeaves = 8

func FuzzBtreePayload(f *testing.F)     { fuzzPayload(f, "btree") }
func FuzzBloomPayload(f *testing.F)     { fuzzPayload(f, "bloom") }
func FuzzBitmapPayload(f *testing.F)    { fuzzPayload(f, "bitmap") }
func FuzzNgramPayload(f *testing.F)     { fuzzPayload(f, "ngram") }
func FuzzLabelListPayload(f *testing.F) { fuzzPayload(f, "label_list") }
func FuzzPageIndexPayload(f *testing.F) { fuzzPayload(f, "page_index") }
func FuzzIVFPayload(f *testing.F)       { fuzzVectorPayload(f, "ivf") }
func FuzzIVFPQPayload(f *testing.F)     { fuzzVectorPayload(f, "ivf_pq") }

// fuzzVectorPayload fuzzes the ivf and ivf_pq readers and searches with
// self-consistent payloads: an index (the committed one, or a forgery's:
// base picks) edited by ops — positions moved, repeated, out of the file
// or out of order, lists emptied or dropped, centroids, norms, codes and
// codewords set to extreme values — written as a valid Arrow IPC payload
// under the committed header with its checksum recomputed, opened and
// searched (with its own packed lists and with the committed payload's).
// Raw bytes are not fuzzed here: arrow-go's IPC reader allocates what a
// crafted schema says (a field with 2^32 children exhausts memory, which
// no recover catches), so a service opens IPC payloads only after their
// committed SHA-256 matched (OpenCommitted): crafted bytes never reach it.
func fuzzVectorPayload(f *testing.F, name string) {
	c := payloadCaseOf(f, name)
	ctx := context.Background()
	bases := []*vector.Index{}
	for _, p := range [][]byte{c.good, c.forged["another file's"], c.forged["another build of the file"]} {
		idx, err := c.kind.Open(ctx, p, c.want)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, idx.(VectorIndex).Vectors())
	}
	goodPk, err := bases[0].Pack(c.mat)
	if bases[0].PQ != nil {
		goodPk, err = bases[0].PackRadii(c.mat)
	}
	if err != nil {
		f.Fatal(err)
	}
	for b := range bases {
		f.Add(uint8(b), []byte{})
	}
	f.Add(uint8(0), []byte{0, 1, 2, 3, 1, 0, 0, 9, 2, 3, 4, 200})                      // a position moved, another out of the file
	f.Add(uint8(1), []byte{3, 2, 0, 0, 4, 1, 1, 1, 5, 0, 0, 0})                        // a list emptied, a centroid NaN
	f.Add(uint8(2), []byte{6, 0, 7, 0, 7, 1, 0, 255, 8, 0, 3, 3, 9, 0, 0, 0, 1, 7, 7}) // codes, norms, a list dropped
	f.Fuzz(func(t *testing.T, base uint8, ops []byte) {
		ix := cloneIndex(bases[int(base)%len(bases)])
		editIndex(ix, c.mat.Rows(), ops)
		payload, ok := writeEdited(c.want, ix)
		if !ok {
			return
		}
		idx, err := c.kind.Open(ctx, payload, c.want)
		if err != nil {
			return
		}
		checkVectorSearches(t, c, idx.(VectorIndex).Vectors(), goodPk)
	})
}

// writeEdited writes an edited index as a payload under h (false when the
// edit broke an invariant the writer relies on: a writer's panic, not a
// reader's).
func writeEdited(h Header, ix *vector.Index) (p []byte, ok bool) {
	defer func() {
		if recover() != nil {
			p, ok = nil, false
		}
	}()
	p, err := writeIVF(h, ix)
	return p, err == nil
}

func cloneIndex(ix *vector.Index) *vector.Index {
	out := &vector.Index{Dim: ix.Dim, Rows: ix.Rows, Centroids: slices.Clone(ix.Centroids)}
	for l := range ix.Lists {
		out.Lists = append(out.Lists, slices.Clone(ix.Lists[l]))
	}
	if ix.PQ != nil {
		out.PQ = &vector.PQ{M: ix.PQ.M, Dsub: ix.PQ.Dsub, Codebooks: slices.Clone(ix.PQ.Codebooks)}
		for l := range ix.Codes {
			out.Codes = append(out.Codes, slices.Clone(ix.Codes[l]))
			out.Norms = append(out.Norms, slices.Clone(ix.Norms[l]))
		}
	}
	return out
}

// editIndex applies ops, four bytes each (op, a, b, c), to ix.
func editIndex(ix *vector.Index, rows int64, ops []byte) {
	extreme := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, 0, -1e-30}
	for len(ops) >= 4 {
		op, a, b, v := ops[0], int(ops[1]), int(ops[2]), ops[3]
		ops = ops[4:]
		if len(ix.Lists) == 0 {
			return
		}
		l := a % len(ix.Lists)
		ps := ix.Lists[l]
		switch op % 10 {
		case 0: // a position moved to another list
			if len(ps) > 0 {
				i, to := b%len(ps), (l+1)%len(ix.Lists)
				ix.Lists[to] = append(ix.Lists[to], ps[i])
				ix.Lists[l] = slices.Delete(ps, i, i+1)
				if ix.PQ != nil {
					m := ix.PQ.M
					ix.Codes[to] = append(ix.Codes[to], ix.Codes[l][i*m:(i+1)*m]...)
					ix.Codes[l] = slices.Delete(ix.Codes[l], i*m, (i+1)*m)
					ix.Norms[to] = append(ix.Norms[to], ix.Norms[l][i])
					ix.Norms[l] = slices.Delete(ix.Norms[l], i, i+1)
				}
			}
		case 1: // a position set to another value (in or out of the file)
			if len(ps) > 0 {
				ps[b%len(ps)] = []int64{0, rows - 1, rows, -1, int64(v) * rows / 255, math.MaxInt64}[int(v)%6]
			}
		case 2: // a position repeated
			if len(ps) > 0 {
				ix.Lists[l] = append(ps, ps[b%len(ps)])
				if ix.PQ != nil {
					m := ix.PQ.M
					i := b % len(ps)
					ix.Codes[l] = append(ix.Codes[l], ix.Codes[l][i*m:(i+1)*m]...)
					ix.Norms[l] = append(ix.Norms[l], ix.Norms[l][i])
				}
			}
		case 3: // a list emptied
			ix.Lists[l] = nil
			if ix.PQ != nil {
				ix.Codes[l], ix.Norms[l] = nil, nil
			}
		case 4: // a centroid value extreme
			ix.Centroids[(l*ix.Dim+b)%len(ix.Centroids)] = extreme[int(v)%len(extreme)]
		case 5: // positions reversed
			slices.Reverse(ps)
		case 6: // a code byte
			if ix.PQ != nil && len(ix.Codes[l]) > 0 {
				ix.Codes[l][b%len(ix.Codes[l])] = v
			}
		case 7: // a norm
			if ix.PQ != nil && len(ix.Norms[l]) > 0 {
				ix.Norms[l][b%len(ix.Norms[l])] = extreme[int(v)%len(extreme)]
			}
		case 8: // a codeword value
			if ix.PQ != nil {
				ix.PQ.Codebooks[(b*256+int(v))%len(ix.PQ.Codebooks)] = extreme[int(v)%len(extreme)]
			}
		case 9: // the last list dropped
			n := len(ix.Lists) - 1
			ix.Lists, ix.Centroids = ix.Lists[:n], ix.Centroids[:n*ix.Dim]
			if ix.PQ != nil {
				ix.Codes, ix.Norms = ix.Codes[:n], ix.Norms[:n]
			}
		}
	}
}
