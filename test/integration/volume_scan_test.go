package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/vector"
)

// randomScanPredicate is a random WHERE over the demo table's columns:
// LIKE / ILIKE on message, equality, ranges and IN on columns no index
// answers, IS NULL, array_contains, and their combinations.
func randomScanPredicate(r *rand.Rand, ids []int64) string {
	tenant := func() string { return fmt.Sprintf("'tenant-%03d'", r.IntN(100)) }
	leaves := []func() string{
		func() string {
			return "message LIKE '%" + []string{"timeout", "tenant=tenant-007 ", "/api/v2/search/1", "DELETE /healthz", "trace=00", "ms upstream"}[r.IntN(6)] + "%'"
		},
		func() string {
			return "message ILIKE '%" + []string{"TIMEOUT", "Post /API/V1/USERS", "TENANT=TENANT-04"}[r.IntN(3)] + "%'"
		},
		func() string { return "message LIKE 'GET /api/v1/orders/" + fmt.Sprint(r.IntN(10)) + "%'" },
		func() string { return "tenant_id = " + tenant() },
		func() string { return "tenant_id IN (" + tenant() + ", " + tenant() + ", " + tenant() + ")" },
		func() string {
			return "status = '" + []string{"ok", "warn", "error", "retry", "timeout"}[r.IntN(5)] + "'"
		},
		func() string { return "status <> 'ok'" },
		func() string {
			a := ids[r.IntN(len(ids))]
			return fmt.Sprintf("id >= %d AND id < %d", a, a+int64(r.IntN(3000)))
		},
		func() string {
			return fmt.Sprintf("id IN (%d, %d, %d)", ids[r.IntN(len(ids))], ids[r.IntN(len(ids))], ids[r.IntN(len(ids))])
		},
		func() string {
			m := r.IntN(60)
			return fmt.Sprintf("ts >= TIMESTAMP '2026-01-01 00:%02d:00' AND ts < TIMESTAMP '2026-01-01 01:%02d:30'", m, r.IntN(60))
		},
		func() string { return "tenant_id NOT IN (" + tenant() + ", " + tenant() + ")" },
		func() string { return "message IS NULL" },
		func() string { return "message IS NOT NULL AND id < " + fmt.Sprint(ids[r.IntN(len(ids))]) },
		func() string {
			return "array_contains(tags, '" + []string{"gpu", "canary", "slow", "billing"}[r.IntN(4)] + "')"
		},
	}
	leaf := func() string { return leaves[r.IntN(len(leaves))]() }
	switch r.IntN(5) {
	case 0:
		return leaf() + " AND " + leaf()
	case 1:
		return "(" + leaf() + ") OR (" + leaf() + ")"
	case 2:
		return "NOT (" + leaf() + ") AND " + leaf()
	}
	return leaf()
}

// Rows the volume filters next to the data (ScanRows) are exactly the rows
// of a plain read, for random predicates — LIKE and ILIKE without and with
// an ngram index (candidates rechecked there), equality, ranges and IN on
// unindexed columns, IS NULL, array_contains, combinations, with and
// without a LIMIT — on a table with position deletes, and the same rows as
// filtering here; with -filterAt volume no row group is read here and no
// call fails, with -filterAt here none is asked of the volume. An exact
// vector search whose predicate the volume filters ranks the same rows.
func TestRowsTheVolumeFiltersAreThePlainRowsForRandomPredicates(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	const name = "volume_scan.events"
	c := sharedCluster(t)
	weed := pushdownCLI(t, c)
	weed("demo", "-table", name, "-rows", "20000", "-files", "3", "-rowGroupRows", "2500", "-indexed", "none")
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"volume_scan", "events"})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(28, 2026))
	var ids []int64
	{
		res := scanRows(t, tbl, tbl.CurrentSnapshot().SnapshotID, iceberg.AlwaysTrue{}, []string{"id"})
		for _, line := range res {
			var id int64
			if _, err := fmt.Sscanf(line, "id=%d", &id); err != nil {
				t.Fatalf("id row %q: %v", line, err)
			}
			ids = append(ids, id)
		}
	}
	if len(ids) != 20000 {
		t.Fatalf("the demo table holds %d rows, want 20000", len(ids))
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeMergeOnRead}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl = deleteWhere(t, tbl, idIn(randomIDs(r, slices.Min(ids), slices.Max(ids)+1, 400)))

	open := func(o connector.Options) *connector.Connector { return openConnector(t, c, o) }
	plain := open(connector.Options{NoPushdown: true})
	volume := open(connector.Options{Force: true, NoFallback: true, FilterAt: connector.FilterVolume})
	here := open(connector.Options{Force: true, NoFallback: true, FilterAt: connector.FilterHere})
	const sel = "id, ts, tenant_id, status, message, tags, embedding"
	run := func(conn *connector.Connector, where string, limit int64) ([]string, connector.Stats) {
		t.Helper()
		res, err := conn.Query(ctx, connector.Query{Table: name, Where: where, Select: strings.Split(sel, ", "), Limit: limit})
		if err != nil {
			t.Fatalf("WHERE %s LIMIT %d: %v", where, limit, err)
		}
		defer res.Release()
		return rowsOf(t, res.Schema, res.Records), res.Stats
	}
	var volumeGroups, volumeRows, hereRows int64
	check := func(round string, n int) {
		for i := 0; i < n; i++ {
			where := randomScanPredicate(r, ids)
			limit := int64(0)
			if r.IntN(3) == 0 {
				limit = 1 + r.Int64N(40)
			}
			want, _ := run(plain, where, 0)
			gotV, stV := run(volume, where, limit)
			gotH, stH := run(here, where, limit)
			if stV.FilterHereRowGroups != 0 || stV.FilterVolumeFallbacks != 0 || stH.FilterVolumeRowGroups != 0 {
				t.Fatalf("%s: WHERE %s: -filterAt volume read %d row groups here (%s), %d calls failed (%s); -filterAt here asked %d of the volume",
					round, where, stV.FilterHereRowGroups, stV.FilterHereReason, stV.FilterVolumeFallbacks, stV.FilterFallbackReason, stH.FilterVolumeRowGroups)
			}
			volumeGroups += stV.FilterVolumeRowGroups
			volumeRows += stV.FilterVolumeRows
			hereRows += int64(len(gotH))
			if limit == 0 {
				if strings.Join(gotV, "\n") != strings.Join(want, "\n") || strings.Join(gotH, "\n") != strings.Join(want, "\n") {
					t.Fatalf("%s: WHERE %s: filtered by the volume %d rows, here %d, a plain read %d\nvolume vs plain: %s\nhere vs plain: %s",
						round, where, len(gotV), len(gotH), len(want), firstDiff(gotV, want), firstDiff(gotH, want))
				}
				t.Logf("%s: WHERE %.70s: %d rows, %d row groups filtered by the volume (%d rows evaluated, %d B sent)",
					round, where, len(want), stV.FilterVolumeRowGroups, stV.FilterVolumeRowsEvaluated, stV.BytesFilterVolume)
				continue
			}
			// a LIMIT without ORDER BY: min(limit, all) rows, each a plain
			// row, the same on both sites (the same row groups in order)
			if int64(len(gotV)) != min(limit, int64(len(want))) || strings.Join(gotV, "\n") != strings.Join(gotH, "\n") {
				t.Fatalf("%s: WHERE %s LIMIT %d: %d rows filtered by the volume, %d here, of %d plain\n%s", round, where, limit, len(gotV), len(gotH), len(want), firstDiff(gotV, gotH))
			}
			for _, row := range gotV {
				if _, found := slices.BinarySearch(want, row); !found {
					t.Fatalf("%s: WHERE %s LIMIT %d: row %s is not a plain row", round, where, limit, row)
				}
			}
		}
	}
	check("no index", 20)
	// the volumes' warm filters copied pages they had decoded (the
	// uncompressed page cache, on by default) — and every row above was
	// exact with it
	if pc := volumeCache(t, c.VolumePushdownAddr(), "pages"); pc.GetHits() == 0 || pc.GetBytes() > pc.GetCapacityBytes() || pc.GetCapacityBytes() == 0 {
		t.Fatalf("the page cache after 20 queries filtered by the volume: %+v, want hits within its capacity", pc)
	}
	weed("index", "create", "-table", name, "-column", "message", "-kind", "ngram", "-wait")
	check("ngram(message)", 14)
	// the residual of an exact vector search: the predicate's rows
	// filtered by the volume, then ranked here
	q := make([]float32, demo.EmbeddingDim)
	for i := range q {
		q[i] = float32(i%7) / 7
	}
	for i := 0; i < 4; i++ {
		where := randomScanPredicate(r, ids)
		vq := connector.Query{Table: name, Where: where, Select: []string{"id", "tenant_id", connector.DistanceColumn}, Limit: 7,
			Vector: &connector.VectorQuery{Column: "embedding", Metric: vector.L2, Vector: q}}
		var answers [3][]string
		var stats [3]connector.Stats
		for j, conn := range []*connector.Connector{plain, volume, here} {
			res, err := conn.ExactVectors(ctx, vq)
			if err != nil {
				t.Fatalf("vector search WHERE %s: %v", where, err)
			}
			answers[j], stats[j] = inOrder(res.Records), res.Stats
			res.Release()
		}
		if strings.Join(answers[1], "\n") != strings.Join(answers[0], "\n") || strings.Join(answers[2], "\n") != strings.Join(answers[0], "\n") {
			t.Fatalf("exact vector search WHERE %s: filtered by the volume\n%s\nhere\n%s\nplain\n%s", where, strings.Join(answers[1], "\n"), strings.Join(answers[2], "\n"), strings.Join(answers[0], "\n"))
		}
		if stats[1].FilterHereRowGroups != 0 || stats[1].FilterVolumeFallbacks != 0 {
			t.Fatalf("exact vector search WHERE %s, -filterAt volume: stats %+v", where, stats[1])
		}
		t.Logf("exact vector search WHERE %.60s: %d rows, %d row groups filtered by the volume", where, len(answers[0]), stats[1].FilterVolumeRowGroups)
	}

	// counting rows only: the same number of rows as the plain read, on
	// every site, each record without columns (the volume sends none)
	for _, where := range []string{"status = 'error'", "message LIKE '%timeout%' AND tenant_id <> 'tenant-003'", "tenant_id IN ('tenant-001', 'tenant-002')"} {
		want, _ := run(plain, where, 0)
		for i, conn := range []*connector.Connector{plain, volume, here} {
			res, err := conn.Query(ctx, connector.Query{Table: name, Where: where, Select: []string{"status"}, CountOnly: true})
			if err != nil {
				t.Fatalf("count WHERE %s: %v", where, err)
			}
			var n int64
			for _, rec := range res.Records {
				if rec.NumCols() != 0 {
					t.Fatalf("count WHERE %s (connector %d): a record with %d columns", where, i, rec.NumCols())
				}
				n += rec.NumRows()
			}
			if n != int64(len(want)) || res.Stats.Rows != n || res.Schema.NumFields() != 0 || (i == 1 && (res.Stats.FilterVolumeRowGroups == 0 || res.Stats.FilterVolumeFallbacks != 0)) {
				t.Fatalf("count WHERE %s (connector %d): %d rows counted (stats %+v), plain %d", where, i, n, res.Stats, len(want))
			}
			res.Release()
		}
		// a column asked for but not the predicate's is not read to count
		var read [2]int64
		for i, sel := range []string{"status", "embedding"} {
			fresh := open(connector.Options{Force: true, NoFallback: true, FilterAt: connector.FilterHere})
			res, err := fresh.Query(ctx, connector.Query{Table: name, Where: where, Select: []string{sel}, CountOnly: true})
			if err != nil {
				t.Fatalf("count WHERE %s, SELECT %s: %v", where, sel, err)
			}
			if res.Stats.Rows != int64(len(want)) {
				t.Fatalf("count WHERE %s, SELECT %s: %d rows, plain %d", where, sel, res.Stats.Rows, len(want))
			}
			read[i] = res.Stats.BytesRead
			res.Release()
		}
		if read[1] != read[0] || read[0] == 0 {
			t.Fatalf("count WHERE %s: %d bytes read selecting embedding, %d selecting status: want the same, the predicate's columns only", where, read[1], read[0])
		}
	}

	// the CLI: -filterAt, -explain's estimate and the -stats figures
	const sql = "SELECT id, message FROM " + name + " WHERE message LIKE '%tenant=tenant-007 %' AND status <> 'ok'"
	out, _ := weed("query", "-sql", sql, "-explain", "-filterAt", "volume")
	if !strings.Contains(out, "filter (-filterAt volume;") || !regexp.MustCompile(`volume +[1-9][0-9]* row groups`).MatchString(out) {
		t.Fatalf("-explain -filterAt volume does not show row groups filtered by the volume:\n%s", out)
	}
	for _, site := range []string{"volume", "here", "auto"} {
		got, st := queryRowsAndStats(t, weed, sql, "-filterAt", site)
		want, _ := queryRowsAndStats(t, weed, sql, "-no-pushdown")
		if strings.Join(got, "\n") != strings.Join(want, "\n") || st["filter_at"] != site {
			t.Fatalf("-filterAt %s: %d rows, %d plain, stats %v", site, len(got), len(want), st)
		}
		v, _ := st["filter_volume_row_groups"].(float64)
		h, _ := st["filter_here_row_groups"].(float64)
		if site == "volume" && (v == 0 || h != 0 || st["filter_volume_reason"] != "volume: -filterAt volume") || site == "here" && (v != 0 || h == 0) || v+h == 0 {
			t.Fatalf("-filterAt %s: %v row groups filtered by the volume, %v here: %v", site, v, h, st)
		}
		t.Logf("-filterAt %s: %v row groups on the volume, %v here, %v bytes read; %v", site, v, h, st["bytes_read"], st["filter_volume_reason"])
	}
	if volumeGroups == 0 || volumeRows == 0 || hereRows == 0 {
		t.Fatalf("%d row groups and %d rows filtered by the volume, %d rows here: the volume path was not exercised", volumeGroups, volumeRows, hereRows)
	}
}

// ScanRows is authorized and bounded like every volume call: a request
// out of bounds is INVALID_ARGUMENT or RESOURCE_EXHAUSTED naming the
// problem, and a file outside a table bucket is PERMISSION_DENIED.
func TestScanRowsRefusesMalformedAndUnauthorizedCalls(t *testing.T) {
	c := sharedCluster(t)
	v := c.Volume(t)
	call := func(req *pushdown_pb.ScanRowsRequest) error {
		ctx, err := c.Endpoints().SignCall(context.Background(), c.VolumePushdownAddr(), "ScanRows", req)
		if err != nil {
			t.Fatal(err)
		}
		stream, err := v.ScanRows(ctx, req)
		if err != nil {
			return err
		}
		_, err = stream.Recv()
		return err
	}
	path := "s3://" + c.Endpoints().Warehouse + "/ns/t/data/f.parquet"
	rg := []*pushdown_pb.ScanRowGroup{{RowGroup: 0}}
	many := make([]*pushdown_pb.ScanRowGroup, 1<<16+1)
	for i := range many {
		many[i] = &pushdown_pb.ScanRowGroup{RowGroup: int32(i)}
	}
	for _, c := range []struct {
		name    string
		req     *pushdown_pb.ScanRowsRequest
		code    codes.Code
		mention string
	}{
		{"no row groups", &pushdown_pb.ScanRowsRequest{Path: path, SizeBytes: 100, RecordCount: 10, Predicate: []byte{1}}, codes.InvalidArgument, "no row groups"},
		{"a row group twice", &pushdown_pb.ScanRowsRequest{Path: path, SizeBytes: 100, RecordCount: 10, Predicate: []byte{1},
			RowGroups: []*pushdown_pb.ScanRowGroup{{RowGroup: 1}, {RowGroup: 1}}}, codes.InvalidArgument, "ascending, each once"},
		{"no predicate", &pushdown_pb.ScanRowsRequest{Path: path, SizeBytes: 100, RecordCount: 10, RowGroups: rg}, codes.InvalidArgument, "no predicate"},
		{"a negative limit", &pushdown_pb.ScanRowsRequest{Path: path, SizeBytes: 100, RecordCount: 10, RowGroups: rg, Predicate: []byte{1}, Limit: -1}, codes.InvalidArgument, "negative"},
		{"an empty path", &pushdown_pb.ScanRowsRequest{SizeBytes: 100, RecordCount: 10, RowGroups: rg, Predicate: []byte{1}}, codes.InvalidArgument, "path is empty"},
		{"a zero size", &pushdown_pb.ScanRowsRequest{Path: path, RecordCount: 10, RowGroups: rg, Predicate: []byte{1}}, codes.InvalidArgument, "positive size"},
		{"too many fields", &pushdown_pb.ScanRowsRequest{Path: path, SizeBytes: 100, RecordCount: 10, RowGroups: rg, Predicate: []byte{1}, ProjectedFieldIds: make([]int32, 1025)},
			codes.ResourceExhausted, "projected fields"},
		{"too many row groups", &pushdown_pb.ScanRowsRequest{Path: path, SizeBytes: 100, RecordCount: 10, Predicate: []byte{1}, RowGroups: many}, codes.ResourceExhausted, "row groups exceed"},
		{"outside a table bucket", &pushdown_pb.ScanRowsRequest{Path: "s3://not-a-table-bucket/f.parquet", SizeBytes: 100, RecordCount: 10, RowGroups: rg, Predicate: []byte{1}},
			codes.PermissionDenied, ""},
	} {
		wantCode(t, c.name, call(c.req), c.code, c.mention)
	}
}

// A predicate a million rows match, filtered by the volume, streams all of
// them — every row counted once, none read here — while the process
// serving the volume grows by less than a third of the answer: one row group decoded
// and one batch encoded at a time, none kept after it. The rows carry the
// embedding, so a row group leaves in several batches (the later ones take
// the row group from the stream's memo: once a panic, now covered here).
func TestAMillionMatchingRowsStreamFromTheVolumeInBoundedMemory(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	const name = "volume_scan_big.events"
	const rows = 1_000_000
	// a cluster of its own: the shared one's heap holds what earlier tests
	// cached, and garbage grows with it before a collection runs. GOGC=50
	// keeps the garbage a collection leaves behind (up to GOGC% of the live
	// heap, ~100 MiB for a whole mini) well below the answer, which carries
	// the 64-float embedding so that it is ~350 MiB: CI once saw 93 MiB of
	// garbage growth against a 93 MiB answer of three narrow columns.
	// The chunk cache (column chunks as stored, kept for warm scans) is
	// held at 16 MiB and the page cache (decoded pages) is off: bounds of
	// their own, not streaming's.
	c := harness.StartMini(t, harness.MiniOptions{Env: []string{"GOGC=50"}, ExtraArgs: []string{"-pushdown.chunkCacheMB=16", "-pushdown.pageCacheMB=0"}})
	weed := pushdownCLI(t, c)
	weed("demo", "-table", name, "-rows", fmt.Sprint(rows), "-files", "2", "-indexed", "none")
	ctx := context.Background()
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: true, NoFallback: true, FilterAt: connector.FilterVolume, MaxBufferBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := c.ProcessRSSKiB()
	peak := before
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				peak = max(peak, c.ProcessRSSKiB())
			}
		}
	}()
	var got, answerBytes int64
	distinct := roaring64.New() // the demo's ids are distinct: a batch cut from the wrong rows repeats some
	res, err := conn.Stream(ctx, connector.Query{Table: name, Where: "status <> 'none'", Select: []string{"id", "status", "message", "embedding"}}, func(rec arrow.RecordBatch) error {
		got += rec.NumRows()
		for _, id := range rec.Column(0).(*array.Int64).Int64Values() {
			distinct.Add(uint64(id))
		}
		for _, col := range rec.Columns() {
			answerBytes += int64(col.Data().SizeInBytes())
		}
		return nil
	})
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stats
	if got != rows || st.FilterVolumeRows != rows || st.FilterHereRowGroups != 0 || st.FilterVolumeFallbacks != 0 {
		t.Fatalf("%d rows streamed, %d filtered by the volume, %d row groups here, %d fallbacks (%s): want all %d from the volume",
			got, st.FilterVolumeRows, st.FilterHereRowGroups, st.FilterVolumeFallbacks, st.FilterFallbackReason, rows)
	}
	if distinct.GetCardinality() != rows {
		t.Fatalf("%d distinct ids in %d rows streamed, want %d", distinct.GetCardinality(), got, rows)
	}
	grew := (peak - before) >> 10
	t.Logf("%d rows (%d MiB of Arrow) from %d row groups filtered by the volume; %d MiB sent; the cluster process grew by %d MiB at most",
		got, answerBytes>>20, st.FilterVolumeRowGroups, st.BytesFilterVolume>>20, grew)
	// a server holding the whole answer (or keeping the row groups it
	// decoded) would grow by at least the answer's Arrow bytes
	if grew >= answerBytes>>20/3 {
		t.Fatalf("the cluster process grew by %d MiB while streaming %d MiB of rows, want less than a third of the answer", grew, answerBytes>>20)
	}
}
