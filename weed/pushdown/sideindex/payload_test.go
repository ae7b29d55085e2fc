package sideindex

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// builtPayloads builds every kind on the i64 column of a small file.
func builtPayloads(t *testing.T) (map[string][]byte, Input) {
	t.Helper()
	cols := testCols()
	_, s := schemasOf(cols)
	f := loadFile(t, "s3://b/t/data/p.parquet", writeFile(t, cols, layouts[0], 1500, 5), s)
	in := f.input(t, 2, nil)
	out := map[string][]byte{}
	for _, k := range Kinds() {
		if !k.Supports(in.Type) {
			continue // string, list and vector kinds: see their own tests
		}
		p, err := k.Build(context.Background(), in)
		if err != nil {
			t.Fatalf("%s: %v", k.Name(), err)
		}
		out[k.Name()] = p
	}
	return out, in
}

func TestOpenRefusesAPayloadWhoseHeaderDiffersInAnyField(t *testing.T) {
	payloads, in := builtPayloads(t)
	cases := map[string]func(h *Header){
		"format version": func(h *Header) { h.FormatVersion = 2 },
		"kind":           func(h *Header) { h.Kind = "bitmap" },
		"field id":       func(h *Header) { h.FieldID++ },
		"type":           func(h *Header) { h.IcebergType = "int" },
		"data file":      func(h *Header) { h.DataFile += ".old" },
		"identity":       func(h *Header) { h.Identity = "1-2-deadbeef" },
		"params":         func(h *Header) { h.Params = map[string]string{"fpp": "0.5"} },
		"rows":           func(h *Header) { h.Rows++ },
	}
	for _, k := range Kinds() {
		if payloads[k.Name()] == nil {
			continue
		}
		if _, err := k.Open(context.Background(), payloads[k.Name()], wantOf(in, k.Name())); err != nil {
			t.Fatalf("%s: the matching header is refused: %v", k.Name(), err)
		}
		for what, change := range cases {
			want := wantOf(in, k.Name())
			change(&want)
			if what == "kind" {
				// Open pins the kind it is; a payload of another kind is refused.
				for _, other := range Kinds() {
					if other.Name() != k.Name() && payloads[other.Name()] != nil {
						if _, err := other.Open(context.Background(), payloads[k.Name()], wantOf(in, other.Name())); err == nil {
							t.Errorf("%s opened a %s payload", other.Name(), k.Name())
						}
					}
				}
				continue
			}
			if _, err := k.Open(context.Background(), payloads[k.Name()], want); err == nil {
				t.Errorf("%s: a payload whose %s differs was opened", k.Name(), what)
			}
		}
	}
}

func TestOpenRefusesAnUnknownFormatVersion(t *testing.T) {
	if _, err := checkHeader(`{"format-version":2,"kind":"btree"}`, Header{Kind: "btree"}); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("format version 2 was accepted: %v", err)
	}
}

// TestCorruptPayloadsAreRefusedOrNeverMissARow flips, truncates and
// overwrites bytes of every kind's payload: Open (or Eval) errors and
// never panics; an index that still opens never answers wrongly, since
// every byte it reads is covered by the checksum.
func TestCorruptPayloadsAreRefusedOrNeverMissARow(t *testing.T) {
	payloads, in := builtPayloads(t)
	s := iceberg.NewSchema(0, iceberg.NestedField{ID: 2, Name: "i64", Type: iceberg.PrimitiveTypes.Int64})
	e, err := predicate.Bind(&predicate.Leaf{FieldID: 2, Op: predicate.OpGtEq, Raw: []iceberg.Literal{iceberg.Int64Literal(0)}}, s, predicate.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	leaf := e.(*predicate.Leaf)
	n := 300
	if testing.Short() {
		n = 60
	}
	for _, k := range Kinds() {
		if payloads[k.Name()] == nil {
			continue
		}
		checkCorruptionsNeverMissARow(t, k, payloads[k.Name()], wantOf(in, k.Name()), leaf, n)
	}
}

// checkCorruptionsNeverMissARow flips, truncates, overwrites and extends
// payload good n times: each corrupted payload is refused, or answers leaf
// as the good one does.
func checkCorruptionsNeverMissARow(t *testing.T, k Kind, good []byte, want Header, leaf *predicate.Leaf, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, uint64(len(good))))
	{
		idx, err := k.Open(context.Background(), good, want)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := idx.Eval(context.Background(), leaf)
		if err != nil {
			t.Fatal(err)
		}
		opened := 0
		for i := 0; i < n; i++ {
			p := append([]byte(nil), good...)
			switch i % 4 {
			case 0:
				p[r.IntN(len(p))] ^= byte(1 + r.IntN(255))
			case 1:
				p = p[:r.IntN(len(p))]
			case 2:
				at := r.IntN(len(p))
				for j := at; j < min(len(p), at+1+r.IntN(64)); j++ {
					p[j] = byte(r.IntN(256))
				}
			case 3:
				p = append(p, byte(r.IntN(256)))
			}
			idx, err := k.Open(context.Background(), p, want)
			if err != nil {
				continue
			}
			opened++
			ans, err := idx.Eval(context.Background(), leaf)
			if err != nil {
				continue
			}
			if !ans.Unknown && !ans.Positions.Equals(ref.Positions) {
				t.Fatalf("%s: corruption %d opened and answered %d rows instead of %d", k.Name(), i, ans.Positions.GetCardinality(), ref.Positions.GetCardinality())
			}
		}
		t.Logf("%s: %d of %d corrupted payloads still opened (corruption outside the covered bytes)", k.Name(), opened, n)
	}
}

// FuzzOpenNeverPanics opens arbitrary bytes as any kind but the Arrow IPC
// ones (see fuzzVectorPayload: their parser is reached only by committed
// bytes).
func FuzzOpenNeverPanics(f *testing.F) {
	f.Add([]byte("PFA1"), "bloom")
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"), "btree")
	f.Fuzz(func(t *testing.T, b []byte, kind string) {
		k, ok := Lookup(kind)
		if !ok || kind == "ivf" || kind == "ivf_pq" {
			return
		}
		_, _ = k.Open(context.Background(), b, Header{Kind: kind})
	})
}
