package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

func smallSpec() Spec {
	s := DefaultSpec()
	s.Rows, s.Files, s.RowGroupRows, s.PageBytes = 6000, 4, 500, 4096
	return s
}

func generate(t *testing.T, s Spec) []GeneratedFile {
	t.Helper()
	var out []GeneratedFile
	if err := Files(s, func(f GeneratedFile) error { out = append(out, f); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDemoFilesAreDeterministicForASeed(t *testing.T) {
	a, b := generate(t, smallSpec()), generate(t, smallSpec())
	for i := range a {
		if !bytes.Equal(a[i].Bytes, b[i].Bytes) {
			t.Fatalf("file %d differs between two runs with the same seed", i)
		}
	}
	s := smallSpec()
	s.Seed = 2
	c := generate(t, s)
	if bytes.Equal(a[0].Bytes, c[0].Bytes) {
		t.Fatalf("a different seed produced the same file")
	}
}

func TestDemoLayoutMatchesItsPromises(t *testing.T) {
	s := smallSpec()
	files := generate(t, s)
	seenIDs := map[int64]bool{}
	var lastTS int64 = -1
	tenantFiles := map[string]map[int]bool{}
	statusCount := map[string]int{}
	for i, f := range files {
		rdr, err := file.NewParquetReader(bytes.NewReader(f.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		md := rdr.MetaData()
		if md.NumRowGroups() < 2 {
			t.Fatalf("file %d has %d row groups, want several", i, md.NumRowGroups())
		}
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			for c := 0; c < md.Schema.NumColumns(); c++ {
				cc, _ := md.RowGroup(rg).ColumnChunk(c)
				hasPI := cc.GetColumnIndexLocation() != nil && cc.GetOffsetIndexLocation() != nil
				if hasPI != f.Indexed {
					t.Fatalf("file %d rg %d column %d: page index %v, indexed %v", i, rg, c, hasPI, f.Indexed)
				}
				name := md.Schema.Column(c).Name()
				wantBloom := f.Indexed && (name == "id" || name == "tenant_id")
				if (cc.BloomFilterOffset() > 0) != wantBloom {
					t.Fatalf("file %d rg %d column %s: bloom filter %v, want %v", i, rg, name, cc.BloomFilterOffset() > 0, wantBloom)
				}
			}
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 1<<20)
		for tr.Next() {
			rec := tr.RecordBatch()
			ids := rec.Column(0).(*array.Int64)
			ts := rec.Column(1).(*array.Timestamp)
			ten := rec.Column(2).(*array.String)
			st := rec.Column(3).(*array.String)
			for r := 0; r < int(rec.NumRows()); r++ {
				if seenIDs[ids.Value(r)] {
					t.Fatalf("id %d repeats", ids.Value(r))
				}
				seenIDs[ids.Value(r)] = true
				if int64(ts.Value(r)) <= lastTS {
					t.Fatalf("ts not strictly increasing at file %d row %d", i, r)
				}
				lastTS = int64(ts.Value(r))
				if tenantFiles[ten.Value(r)] == nil {
					tenantFiles[ten.Value(r)] = map[int]bool{}
				}
				tenantFiles[ten.Value(r)][i] = true
				statusCount[st.Value(r)]++
			}
		}
		tr.Release()
		tbl.Release()
		if f.Indexed != (i%2 == 0) {
			t.Fatalf("file %d indexed=%v under -indexed half", i, f.Indexed)
		}
	}
	if int64(len(seenIDs)) != s.Rows {
		t.Fatalf("%d distinct ids, want %d", len(seenIDs), s.Rows)
	}
	for tn, fs := range tenantFiles {
		if len(fs) > 3 {
			t.Fatalf("tenant %s spans %d files", tn, len(fs))
		}
	}
	if len(tenantFiles) != Tenants {
		t.Fatalf("%d tenants, want %d", len(tenantFiles), Tenants)
	}
	for _, st := range Statuses {
		if n := statusCount[st]; n < int(s.Rows)/len(Statuses)*8/10 {
			t.Fatalf("status %s appears %d times of %d rows: not uniform", st, n, s.Rows)
		}
	}
	if got := s.TimestampOf(0); !got.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("first ts = %s", got)
	}
}

func TestDemoSpecRefusesImpossibleLayouts(t *testing.T) {
	for _, s := range []Spec{{Rows: 0, Files: 1, RowGroupRows: 1, PageBytes: 4096, Indexed: IndexedAll},
		{Rows: 10, Files: 11, RowGroupRows: 1, PageBytes: 4096, Indexed: IndexedAll},
		{Rows: 10, Files: 1, RowGroupRows: 1, PageBytes: 4096, Indexed: "some"}} {
		if err := s.Validate(); err == nil {
			t.Fatalf("spec %+v accepted", s)
		}
	}
}

// readRows calls fn for every row of the generated files with its global
// row number and the record holding it.
func readRows(t *testing.T, files []GeneratedFile, fn func(g int64, file, rg int, rec arrow.RecordBatch, r int)) {
	t.Helper()
	var g int64
	for i, f := range files {
		rdr, err := file.NewParquetReader(bytes.NewReader(f.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		cols := make([]int, rdr.MetaData().Schema.NumColumns())
		for c := range cols {
			cols[c] = c
		}
		for rg := 0; rg < rdr.NumRowGroups(); rg++ {
			tbl, err := fr.ReadRowGroups(context.Background(), cols, []int{rg})
			if err != nil {
				t.Fatal(err)
			}
			tr := array.NewTableReader(tbl, 1<<20)
			for tr.Next() {
				rec := tr.RecordBatch()
				for r := 0; r < int(rec.NumRows()); r++ {
					fn(g, i, rg, rec, r)
					g++
				}
			}
			tr.Release()
			tbl.Release()
		}
	}
}

func tagsOf(rec arrow.RecordBatch, r int) []string {
	l := rec.Column(5).(*array.List)
	vals := l.ListValues().(*array.String)
	from, to := l.ValueOffsets(r)
	var out []string
	for j := from; j < to; j++ {
		out = append(out, vals.Value(int(j)))
	}
	return out
}

// The benchmark queries' rare values: "timeout" in messages and the "gpu"
// tag come in bursts of consecutive rows, about 0.8% and 1% of rows, with
// some in every row group of every file, and nowhere else.
func TestTimeoutsAndGPUTagsAreRareBurstsInEveryRowGroup(t *testing.T) {
	s := DefaultSpec()
	s.Rows, s.Files, s.RowGroupRows = 200_000, 4, 16_384
	type group struct{ file, rg int }
	timeouts, gpus := map[group]int{}, map[group]int{}
	var nTimeout, nGPU, runs int64
	prevGPU := false
	readRows(t, generate(t, s), func(g int64, f, rg int, rec arrow.RecordBatch, r int) {
		msg := rec.Column(4).(*array.String).Value(r)
		hasTimeout := strings.Contains(msg, "timeout")
		if hasTimeout != s.InTimeoutBurst(g) {
			t.Fatalf("row %d: message %q, in a timeout burst %v", g, msg, s.InTimeoutBurst(g))
		}
		hasGPU := slices.Contains(tagsOf(rec, r), "gpu")
		if hasGPU != s.InGPUBurst(g) {
			t.Fatalf("row %d: tags %v, in a gpu burst %v", g, tagsOf(rec, r), s.InGPUBurst(g))
		}
		if hasTimeout {
			nTimeout++
			timeouts[group{f, rg}]++
		}
		if hasGPU {
			nGPU++
			gpus[group{f, rg}]++
			if !prevGPU {
				runs++
			}
		}
		prevGPU = hasGPU
	})
	if frac := float64(nTimeout) / float64(s.Rows); frac < 0.005 || frac > 0.01 {
		t.Errorf("%.3f%% of messages report a timeout; want 0.5-1%%", 100*frac)
	}
	if frac := float64(nGPU) / float64(s.Rows); frac < 0.007 || frac > 0.013 {
		t.Errorf("%.3f%% of rows are tagged gpu; want about 1%%", 100*frac)
	}
	if want := s.Rows / BurstWindow; runs < want {
		t.Errorf("%d gpu bursts, want one per window (%d)", runs, want)
	}
	// A row group of two windows or more holds a whole burst of each kind.
	groups := 0
	for f := 0; f < s.Files; f++ {
		for rg := int64(0); (rg+1)*s.RowGroupRows <= s.Rows/int64(s.Files); rg++ {
			groups++
			if g := (group{f, int(rg)}); timeouts[g] == 0 || gpus[g] == 0 {
				t.Errorf("file %d row group %d: %d timeouts, %d gpu rows; want some of each", f, rg, timeouts[g], gpus[g])
			}
		}
	}
	if groups < 12 {
		t.Fatalf("only %d full row groups checked", groups)
	}
}

// Bursts changed only the message's incident text and which tag stands
// where "gpu" was drawn outside a gpu burst: every other value is the one
// the generator wrote before them (digest taken from that generator).
func TestBurstsLeaveTheOtherColumnsAsTheyWere(t *testing.T) {
	h := sha256.New()
	readRows(t, generate(t, smallSpec()), func(g int64, _, _ int, rec arrow.RecordBatch, r int) {
		msg := strings.Replace(rec.Column(4).(*array.String).Value(r), " upstream timeout", "", 1)
		tags := tagsOf(rec, r)
		if smallSpec().InGPUBurst(g) {
			tags = tags[:0] // burst rows may carry an extra "gpu"
		}
		emb := rec.Column(6).(*array.FixedSizeList).ListValues().(*array.Float32).Float32Values()[r*EmbeddingDim : (r+1)*EmbeddingDim]
		fmt.Fprintf(h, "%d|%d|%s|%s|%s|%d|%v\n", rec.Column(0).(*array.Int64).Value(r), rec.Column(1).(*array.Timestamp).Value(r),
			rec.Column(2).(*array.String).Value(r), rec.Column(3).(*array.String).Value(r), msg, len(tags), emb)
	})
	if got, want := hex.EncodeToString(h.Sum(nil)), "71c259b1578d14cd2ac5fe1b93217e76d1330107b259f6e08fa3722dd4417e35"; got != want {
		t.Fatalf("columns digest %s, want %s", got, want)
	}
}

// A larger burst window gives rarer, longer bursts at the same share of
// rows; plain timestamps leave ts without a dictionary page.
func TestAWiderBurstWindowGivesRarerLongerBurstsAndPlainTimestampsNoDictionary(t *testing.T) {
	s := DefaultSpec()
	s.Rows, s.Files, s.RowGroupRows = 262_144, 2, 32_768
	s.BurstWindow, s.PlainTimestamps = 32_768, true
	files := generate(t, s)
	var nTimeout, runs int64
	prev := false
	readRows(t, files, func(g int64, _, _ int, rec arrow.RecordBatch, r int) {
		has := strings.Contains(rec.Column(4).(*array.String).Value(r), "timeout")
		if has != s.InTimeoutBurst(g) {
			t.Fatalf("row %d: timeout %v, in a burst %v", g, has, s.InTimeoutBurst(g))
		}
		if has {
			nTimeout++
			if !prev {
				runs++
			}
		}
		prev = has
	})
	if frac := float64(nTimeout) / float64(s.Rows); frac < 0.005 || frac > 0.01 {
		t.Errorf("%.3f%% of messages report a timeout; want 0.5-1%%", 100*frac)
	}
	if want := s.Rows / s.BurstWindow; runs != want {
		t.Errorf("%d timeout bursts, want one per window (%d)", runs, want)
	}
	if mean := nTimeout / runs; mean < 128 {
		t.Errorf("bursts of %d rows on average, want the default's scaled by the window (>= 128)", mean)
	}
	for _, f := range files {
		rdr, err := file.NewParquetReader(bytes.NewReader(f.Bytes))
		if err != nil {
			t.Fatal(err)
		}
		for rg := 0; rg < rdr.NumRowGroups(); rg++ {
			ch, err := rdr.MetaData().RowGroup(rg).ColumnChunk(1)
			if err != nil {
				t.Fatal(err)
			}
			if ch.HasDictionaryPage() {
				t.Fatalf("file %d row group %d: ts has a dictionary page", f.Index, rg)
			}
		}
	}
	if err := (Spec{Rows: 10, Files: 1, RowGroupRows: 1, PageBytes: 4096, Indexed: IndexedAll, BurstWindow: 100}).Validate(); err == nil {
		t.Fatal("a burst window of 100 rows accepted")
	}
}
