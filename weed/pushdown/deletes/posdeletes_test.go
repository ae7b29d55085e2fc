package deletes

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// randomPositionDeletes makes sorted (file_path, pos) rows over paths.
func randomPositionDeletes(rng *rand.Rand, paths []string, n int, maxPos int64) []posRow {
	var rows []posRow
	for i := 0; i < n; i++ {
		rows = append(rows, posRow{path: paths[rng.IntN(len(paths))], pos: rng.Int64N(maxPos)})
	}
	slices.SortFunc(rows, func(a, b posRow) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return int(a.pos - b.pos)
	})
	return rows
}

// oraclePositions is the brute-force answer: every pos whose path matches.
func oraclePositions(rows []posRow, path string) []uint64 {
	var out []uint64
	for _, r := range rows {
		if r.path == path {
			out = append(out, uint64(r.pos))
		}
	}
	return out
}

func posFile(path string, size int64) File {
	return File{Path: path, Size: size, Content: PositionDeletes, Format: FormatParquet}
}

func TestMultiTargetPositionDeletesCountOnlyRowsOfTheDataFile(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	paths := []string{"s3://w/t/data/a.parquet", "s3://w/t/data/b.parquet", "s3://w/t/data/c.parquet", "s3://w/t/data/ab.parquet"}
	for _, withIDs := range []bool{true, false} {
		for _, rpg := range []int64{1 << 20, 97, 13} {
			t.Run(fmt.Sprintf("ids=%v/rowsPerGroup=%d", withIDs, rpg), func(t *testing.T) {
				rows := randomPositionDeletes(rng, paths, 2000, 5000)
				b := writePositionDeletes(t, rows, rpg, withIDs)
				fs := newMemFS()
				fs.put("del.parquet", b)
				for _, target := range append(paths, "s3://w/t/data/none.parquet") {
					got, err := ReadPositionDeletes(context.Background(), fs.open, posFile("del.parquet", int64(len(b))), target)
					if err != nil {
						t.Fatal(err)
					}
					sameBitmap(t, target, got, oraclePositions(rows, target))
				}
			})
		}
	}
}

func TestSingleTargetPositionDeletesReadEveryRow(t *testing.T) {
	var rows []posRow
	for i := int64(0); i < 300; i += 3 {
		rows = append(rows, posRow{"d.parquet", i})
	}
	b := writePositionDeletes(t, rows, 64, true)
	fs := newMemFS()
	fs.put("del.parquet", b)
	f := posFile("del.parquet", int64(len(b)))
	f.ReferencedDataFile = "d.parquet"
	got, err := ReadPositionDeletes(context.Background(), fs.open, f, "d.parquet")
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "single target", got, oraclePositions(rows, "d.parquet"))
}

func TestRowGroupsWhoseFilePathStatsExcludeTheDataFileAreNotRead(t *testing.T) {
	var rows []posRow
	for _, p := range []string{"a.parquet", "b.parquet", "c.parquet", "d.parquet"} {
		for i := int64(0); i < 100; i++ {
			rows = append(rows, posRow{p, i * 2})
		}
	}
	b := writePositionDeletes(t, rows, 100, true) // one row group per path
	fs := newMemFS()
	fs.put("del.parquet", b)
	got, err := ReadPositionDeletes(context.Background(), fs.open, posFile("del.parquet", int64(len(b))), "c.parquet")
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "c", got, oraclePositions(rows, "c.parquet"))

	rd, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	md := rd.MetaData()
	if md.NumRowGroups() != 4 {
		t.Fatalf("%d row groups, want 4", md.NumRowGroups())
	}
	touched := map[int]bool{}
	for _, r := range *fs.reads["del.parquet"] {
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			for c := 0; c < 2; c++ {
				cc, _ := md.RowGroup(rg).ColumnChunk(c)
				start := cc.DataPageOffset()
				if cc.HasDictionaryPage() && cc.DictionaryPageOffset() < start {
					start = cc.DictionaryPageOffset()
				}
				end := start + cc.TotalCompressedSize()
				if r.off < end && r.off+r.n > start {
					touched[rg] = true
				}
			}
		}
	}
	if !touched[2] || touched[0] || touched[1] || touched[3] {
		t.Fatalf("row groups read: %v, want only row group 2", touched)
	}
}

func TestStatisticsSkipIsSoundForTruncatedMaxima(t *testing.T) {
	cases := []struct {
		lo, hi, want string
		skip         bool
	}{
		{"a", "c", "b", false},
		{"b", "c", "a", true},
		{"a", "b", "c", true},
		{"a", "s3://w/t/data/x", "s3://w/t/data/x.parquet", false}, // max truncated to a prefix of want
		{"a", "s3://w/t/data/x", "s3://w/t/data/y", true},
		{"s3://w/t/data/x", "s3://w/t/data/x", "s3://w/t/data/x", false},
		{"b", "b", "b", false},
	}
	for _, c := range cases {
		if got := boundsExclude([]byte(c.lo), []byte(c.hi), []byte(c.want)); got != c.skip {
			t.Errorf("boundsExclude(%q, %q, %q) = %v, want %v", c.lo, c.hi, c.want, got, c.skip)
		}
	}
}

func TestNegativePositionIsCorrupt(t *testing.T) {
	b := writePositionDeletes(t, []posRow{{"d", 1}, {"d", -4}}, 10, true)
	fs := newMemFS()
	fs.put("del.parquet", b)
	_, err := ReadPositionDeletes(context.Background(), fs.open, posFile("del.parquet", int64(len(b))), "d")
	errContains(t, err, "del.parquet", "negative pos -4")
	if perr.KindOf(err) != perr.Corrupt {
		t.Fatalf("kind %v", perr.KindOf(err))
	}
}

func TestAvroAndORCPositionDeletesAreAFailedPrecondition(t *testing.T) {
	for _, f := range []Format{FormatAvro, FormatORC} {
		_, err := ReadPositionDeletes(context.Background(), newMemFS().open, File{Path: "x." + f.String(), Content: PositionDeletes, Format: f}, "d")
		if perr.KindOf(err) != perr.FailedPrecondition {
			t.Fatalf("%s: %v (kind %v)", f, err, perr.KindOf(err))
		}
		errContains(t, err, "x."+f.String(), f.String())
	}
}

func TestMalformedPositionDeleteFilesAreCorruptNotPanics(t *testing.T) {
	good := writePositionDeletes(t, []posRow{{"d", 1}, {"d", 2}, {"e", 3}}, 2, true)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 300; i++ {
		b := slices.Clone(good)
		switch i % 3 {
		case 0:
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		case 1:
			b = b[:rng.IntN(len(b))]
		default:
			for j := 0; j < 8; j++ {
				b[rng.IntN(len(b))] = byte(rng.IntN(256))
			}
		}
		fs := newMemFS()
		fs.put("bad.parquet", b)
		_, err := ReadPositionDeletes(context.Background(), fs.open, posFile("bad.parquet", int64(len(b))), "d")
		if err != nil && !strings.Contains(err.Error(), "bad.parquet") {
			t.Fatalf("error does not name the file: %v", err)
		}
	}
}

func TestUnreadablePositionDeleteFileIsUnavailable(t *testing.T) {
	b := writePositionDeletes(t, []posRow{{"d", 1}}, 2, true)
	open := func(ctx context.Context, path string) (Source, error) {
		return memSource{data: b, fail: errInjected}, nil
	}
	_, err := ReadPositionDeletes(context.Background(), open, posFile("del.parquet", int64(len(b))), "d")
	if perr.KindOf(err) != perr.Unavailable {
		t.Fatalf("%v (kind %v)", err, perr.KindOf(err))
	}
	errContains(t, err, "del.parquet")
}
