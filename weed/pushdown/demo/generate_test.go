package demo

import (
	"bytes"
	"testing"
	"time"

	"context"
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
