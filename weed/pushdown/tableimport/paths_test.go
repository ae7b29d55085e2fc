package tableimport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPathSpellingsOfOneLocationNormalizeAlike(t *testing.T) {
	cases := map[string]string{
		"file:///tmp/wh/t":               "/tmp/wh/t",
		"file:/tmp/wh/t/":                "/tmp/wh/t",
		"/tmp/wh//t":                     "/tmp/wh/t",
		"file://data/persistent/t":       "data/persistent/t",
		"./lineitem_iceberg":             "lineitem_iceberg",
		"s3://bucket/a//b/":              "s3://bucket/a/b",
		"gs://bucket":                    "gs://bucket",
		"data/persistent/x/../x/data/f":  "data/persistent/x/data/f",
		"abfss://c@acct.dfs/x/y.parquet": "abfss://c@acct.dfs/x/y.parquet",
	}
	for in, want := range cases {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRelocatorMovesPathsUnderThePrefixAndRefusesOthers(t *testing.T) {
	rl := newRelocator("file:///src/db/t", "s3://wh/db/t-1")
	for in, want := range map[string]string{
		"/src/db/t":                     "s3://wh/db/t-1",
		"file:/src/db/t/data/a.parquet": "s3://wh/db/t-1/data/a.parquet",
		"/src/db/t/metadata/snap.avro":  "s3://wh/db/t-1/metadata/snap.avro",
	} {
		got, err := rl.rewrite(in)
		if err != nil || got != want {
			t.Errorf("rewrite(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/src/db/t2/data/a.parquet", "/src/db/t/../u/a.parquet", "s3://src/db/t/a.parquet", "data/a.parquet"} {
		if _, err := rl.rewrite(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("rewrite(%q) = %v, want an error naming the path", bad, err)
		}
	}
}

func TestMetadataJSONRewriteKeepsKeyOrderNumbersAndUnknownFields(t *testing.T) {
	src := `{"format-version":2,"zeta":{"x":[1,2.50,1e3]},"location":"/src/t","big":9223372036854775807,` +
		`"snapshots":[{"snapshot-id":8333717011536307519,"manifest-list":"/src/t/metadata/snap-1.avro","extra":"<&>"}],` +
		`"metadata-log":[{"timestamp-ms":1,"metadata-file":"/src/t/metadata/v1.gz.metadata.json"}],` +
		`"statistics":[{"snapshot-id":1,"statistics-path":"/src/t/metadata/s.puffin","file-size-in-bytes":10}],` +
		`"partition-statistics":[{"snapshot-id":1,"statistics-path":"/src/t/metadata/p.parquet"}],` +
		`"properties":{"write.data.path":"/src/t/custom","owner":"me"}}`
	doc, err := parseJSON([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	refs, n := rewriteMetadataDoc(doc.(*jsonObject), newRelocator("/src/t", "s3://wh/ns/t-1"), func(what, p string, err error) {
		t.Errorf("%s: %v", what, err)
	})
	out, err := encodeJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"format-version":2,"zeta":{"x":[1,2.50,1e3]},"location":"s3://wh/ns/t-1","big":9223372036854775807,` +
		`"snapshots":[{"snapshot-id":8333717011536307519,"manifest-list":"s3://wh/ns/t-1/metadata/snap-1.avro","extra":"<&>"}],` +
		`"metadata-log":[{"timestamp-ms":1,"metadata-file":"s3://wh/ns/t-1/metadata/v1.metadata.json"}],` +
		`"statistics":[{"snapshot-id":1,"statistics-path":"s3://wh/ns/t-1/metadata/s.puffin","file-size-in-bytes":10}],` +
		`"partition-statistics":[{"snapshot-id":1,"statistics-path":"s3://wh/ns/t-1/metadata/p.parquet"}],` +
		`"properties":{"write.data.path":"s3://wh/ns/t-1/custom","owner":"me"}}`
	if string(out) != want {
		t.Errorf("rewritten:\n%s\nwant:\n%s", out, want)
	}
	if n != 6 || len(refs.manifestLists) != 1 || len(refs.previous) != 1 || len(refs.statistics) != 2 || refs.snapshots != 1 {
		t.Errorf("n=%d refs=%+v", n, refs)
	}
	if !json.Valid(out) {
		t.Error("output is not valid JSON")
	}
}

func TestMetadataChoiceFollowsFlagThenVersionHintThenHighestThenNewest(t *testing.T) {
	write := func(dir, name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "metadata", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := func(p string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Base(p)
	}
	pick := func(dir, flag string) string {
		p, _, err := chooseMetadata(dir, flag)
		return base(p, err)
	}

	hadoop := t.TempDir()
	for _, v := range []string{"v1", "v2", "v10"} {
		write(hadoop, v+".metadata.json", `{}`)
	}
	if got := pick(hadoop, ""); got != "v10.metadata.json" {
		t.Errorf("highest version: got %s", got)
	}
	write(hadoop, "version-hint.text", "2\n")
	if got := pick(hadoop, ""); got != "v2.metadata.json" {
		t.Errorf("numeric version hint: got %s", got)
	}
	write(hadoop, "version-hint.text", "7")
	if got := pick(hadoop, ""); got != "v10.metadata.json" {
		t.Errorf("a hint naming no file falls back to the highest: got %s", got)
	}
	if got := pick(hadoop, "v1.metadata.json"); got != "v1.metadata.json" {
		t.Errorf("-metadata: got %s", got)
	}
	if _, _, err := chooseMetadata(hadoop, "v99.metadata.json"); err == nil || !strings.Contains(err.Error(), "v99") {
		t.Errorf("-metadata of a missing file: %v", err)
	}

	cat := t.TempDir()
	write(cat, "00000-aaa.metadata.json", `{"last-updated-ms":1}`)
	write(cat, "00001-bbb.gz.metadata.json", `{"last-updated-ms":2}`)
	write(cat, "version-hint.text", "00000-aaa")
	if got := pick(cat, ""); got != "00000-aaa.metadata.json" {
		t.Errorf("name-stem version hint: got %s", got)
	}
	os.Remove(filepath.Join(cat, "metadata", "version-hint.text"))
	if got := pick(cat, ""); got != "00001-bbb.gz.metadata.json" {
		t.Errorf("highest catalog version: got %s", got)
	}
	write(cat, "vfinal.metadata.json", `{"last-updated-ms":3}`)
	if got := pick(cat, ""); got != "vfinal.metadata.json" {
		t.Errorf("unnumbered names: newest last-updated-ms should win, got %s", got)
	}

	if _, _, err := chooseMetadata(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "metadata/") {
		t.Errorf("a folder without metadata/: %v", err)
	}
}
