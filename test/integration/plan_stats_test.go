package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

// The stats tables are demo tables small enough that every figure is known
// from their layout: 8,000 rows in 4 files of 2,000 rows (file i holds
// global rows [2000i, 2000i+2000)), each file 2 row groups of 1,000 rows.
// ts is strictly increasing over global rows (row g has ts = start + g/4 s),
// so a ts range selects known rows, files and row groups; id is a shuffled
// permutation of [0, 8000), so every row group's id bounds cover almost the
// whole range and only bloom filters and page indexes can narrow an id
// equality. Under -indexed all every file has page indexes and bloom
// filters on id and tenant_id, under half files 0 and 2, under none no file.
const (
	statsRows         = 8000
	statsFiles        = 4
	statsRowGroupRows = 1000
)

func statsSpec(indexed demo.Indexed) demo.Spec {
	s := demo.DefaultSpec()
	s.Rows, s.Files, s.RowGroupRows, s.PageBytes, s.Indexed = statsRows, statsFiles, statsRowGroupRows, 4096, indexed
	return s
}

// statsTables loads stats_it.all, stats_it.half and stats_it.none into the
// shared cluster once.
func statsTables(t *testing.T, c *harness.Cluster) {
	t.Helper()
	for _, ix := range []demo.Indexed{demo.IndexedAll, demo.IndexedHalf, demo.IndexedNone} {
		demoTableOn(t, c, "stats_it."+string(ix), statsSpec(ix))
	}
}

// tsAt is the SQL literal of the ts of global row g (g a multiple of 4, so
// the literal is whole seconds).
func tsAt(g int64) string {
	return "TIMESTAMP '" + statsSpec(demo.IndexedNone).TimestampOf(g).Format("2006-01-02 15:04:05") + "'"
}

// tsRange is the SQL predicate selecting global rows [from, to).
func tsRange(from, to int64) string {
	return fmt.Sprintf("ts >= %s AND ts < %s", tsAt(from), tsAt(to))
}

// planStats plans table WHERE where SELECT sel on the catalog and returns
// the stats.
func planStats(t *testing.T, c *harness.Cluster, tableName, where, sel string) *pushdown_pb.PushdownStats {
	t.Helper()
	return planStatsOf(t, c, tableName, where, sel, false)
}

// planStatsOf is planStats, asking the catalog to decide early (stop at the
// manifests when a manifest-level cost rule fires) as the connector does.
func planStatsOf(t *testing.T, c *harness.Cluster, tableName, where, sel string, decideEarly bool) *pushdown_pb.PushdownStats {
	t.Helper()
	ctx := context.Background()
	req, err := cli.BuildPlanRequest(ctx, c.Endpoints(), tableName, 0, where, sel)
	if err != nil {
		t.Fatalf("%s WHERE %q: %v", tableName, where, err)
	}
	req.DecideEarly = decideEarly
	resp, err := c.Catalog(t).Plan(ctx, req)
	if err != nil {
		t.Fatalf("%s WHERE %q: Plan: %v", tableName, where, err)
	}
	return resp.GetStats()
}

// idOfRow reads, with iceberg-go's own scan, the id of global row g (found
// by its unique ts): the row lives in file g/2000.
func idOfRow(t *testing.T, c *harness.Cluster, tableName string, g int64) int64 {
	t.Helper()
	ctx := context.Background()
	ns, name, _ := strings.Cut(tableName, ".")
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{ns, name})
	if err != nil {
		t.Fatal(err)
	}
	ts := iceberg.Timestamp(statsSpec(demo.IndexedNone).TimestampOf(g).UnixMicro())
	at, err := tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("ts"), ts)), table.WithSelectedFields("id")).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scan for row %d: %v", g, err)
	}
	defer at.Release()
	if at.NumRows() != 1 {
		t.Fatalf("ts of row %d matches %d rows, want 1", g, at.NumRows())
	}
	return at.Column(0).Data().Chunk(0).(*array.Int64).Value(0)
}

// The cost model's verdict and the rule behind it, for each rule
// decideCost has, with the catalog's default thresholds (pushdown not
// recommended below a 10 MiB scan in at most 1 file, nor above selectivity
// 0.5 when the projection keeps at least 80% of the surviving bytes).
func TestCostModelVerdictNamesTheRuleThatFired(t *testing.T) {
	c := sharedCluster(t)
	statsTables(t, c)
	const tbl = "stats_it.none"
	cases := []struct {
		name, where, sel string
		recommended      bool
		rule             string // the reason's text before the summary; "" = no rule fired
		summaryTail      string // the summary's files and selectivity
	}{
		{"no predicate", "", "", false,
			"no predicate: Iceberg file pruning alone does the job", "4 of 4 files, estimated selectivity 1.0000"},
		// rows [2000, 3000): file 1 only, well below 10 MiB — decided from
		// the manifests before planning, so the selectivity is file 1's
		// share of the rows.
		{"small scan in one file", tsRange(2000, 3000), "", false,
			"planned scan below 10 MiB in at most 1 file(s): a direct ranged read is cheaper than a planning round-trip", "1 of 4 files, estimated selectivity 0.2500"},
		// an id outside [0, 8000): nothing planned, which is a small scan too.
		{"nothing matches", "id = 8000", "", false,
			"planned scan below 10 MiB in at most 1 file(s): a direct ranged read is cheaper than a planning round-trip", "0 of 4 files, estimated selectivity 0.0000"},
		// every row matches and every column is read.
		{"predicate not selective", "id >= 0", "", false,
			"predicate is not selective (1.00 > 0.50) and the projection prunes few bytes", "4 of 4 files, estimated selectivity 1.0000"},
		// rows [1500, 2500): row group 1 of file 0 and row group 0 of file 1.
		{"selective over two files", tsRange(1500, 2500), "", true,
			"", "2 of 4 files, estimated selectivity 0.2500"},
		// every row matches but one column of seven is read.
		{"not selective but the projection prunes", "id >= 0", "id", true,
			"", "4 of 4 files, estimated selectivity 1.0000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := planStatsOf(t, c, tbl, tc.where, tc.sel, true)
			reason := st.GetCostReason()
			if st.GetPushdownRecommended() != tc.recommended {
				t.Fatalf("WHERE %q: pushdown_recommended %v, want %v (reason %q)", tc.where, st.GetPushdownRecommended(), tc.recommended, reason)
			}
			rule, summary, hasRule := strings.Cut(reason, "; ")
			if !hasRule {
				rule, summary = "", reason
			}
			if rule != tc.rule {
				t.Fatalf("WHERE %q: reason names rule %q, want %q (reason %q)", tc.where, rule, tc.rule, reason)
			}
			// the rules the manifests decide stop the plan before any
			// footer is read; the others are decided on the plan
			early := strings.HasPrefix(rule, "no predicate") || strings.HasPrefix(rule, "planned scan below")
			prefix := "planned "
			if early {
				prefix = "decided before planning from the manifests: a plain scan reads at most "
			}
			if !strings.HasPrefix(summary, prefix) || !strings.HasSuffix(summary, ", "+tc.summaryTail) || st.GetPlanningSkipped() != early {
				t.Fatalf("WHERE %q: reason summary %q (planning skipped %v), want \"%s…, %s\"", tc.where, summary, st.GetPlanningSkipped(), prefix, tc.summaryTail)
			}
		})
	}

	// The connector follows the verdict: without Force a query the cost
	// model advises against (every row, every column) reads plainly and
	// says why; with Force it pushes down. (On cost_it.plain: the plain
	// read of the demo tables' embedding column fails, see
	// TestPlainReadOfTheDemoEmbeddingColumnReturnsEveryRow.)
	ctx := context.Background()
	plain := createDeleteTable(t, c, "cost_it", "plain", 2)
	// One file per partition, 3 files of 20,000 rows: large enough that
	// the column chunks, not the footers, make up most of each file.
	appendRows(t, plain, 0, 60000)
	for _, force := range []bool{false, true} {
		conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Force: force})
		if err != nil {
			t.Fatal(err)
		}
		res, err := conn.Query(ctx, connector.Query{Table: "cost_it.plain", Where: "id >= 0"})
		conn.Close()
		if err != nil {
			t.Fatalf("force=%v: %v", force, err)
		}
		rows := res.NumRows()
		res.Release()
		wantReason := ""
		if !force {
			wantReason = "cost model: predicate is not selective (1.00 > 0.50) and the projection prunes few bytes; "
		}
		if rows != 60000 || res.Stats.Pushdown != force || !strings.HasPrefix(res.Stats.FallbackReason, wantReason) || (force && res.Stats.FallbackReason != "") {
			t.Fatalf("force=%v: %d rows, pushdown %v, fallback reason %q; want 60000 rows, pushdown %v, reason starting %q",
				force, rows, res.Stats.Pushdown, res.Stats.FallbackReason, force, wantReason)
		}
	}
}

// A plan the cost model advises against but that is already made is read
// when it reads fewer bytes than a plain scan — not thrown away and the
// table scanned again; a query the manifests rule out (no predicate) is
// read plainly without a plan being made.
func TestAPlanAlreadyMadeIsReadWhenItReadsFewerBytesThanAPlainScan(t *testing.T) {
	c := sharedCluster(t)
	statsTables(t, c)
	ctx := context.Background()
	// rows [1000, 6000): files 0-2 survive the manifests, row group 0 of
	// file 0 is pruned by its footer statistics: 5 of 6 row groups,
	// selectivity 0.625 > 0.5 over nearly every byte of the files left.
	where := tsRange(1000, 6000)
	st := planStats(t, c, "stats_it.none", where, "")
	if st.GetPushdownRecommended() || st.GetPlanningSkipped() || st.GetBytesPlanned() >= st.GetBytesPlainScan() {
		t.Fatalf("plan of %s: recommended %v, skipped %v, planned %d of a %d-byte plain scan (%s)", where, st.GetPushdownRecommended(), st.GetPlanningSkipped(), st.GetBytesPlanned(), st.GetBytesPlainScan(), st.GetCostReason())
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := conn.Query(ctx, connector.Query{Table: "stats_it.none", Where: where, Select: []string{"id", "ts"}})
	if err != nil {
		t.Fatal(err)
	}
	rows := res.NumRows()
	res.Release()
	// SELECT id, ts prunes the projection: recommended; SELECT * is not
	res, err = conn.Query(ctx, connector.Query{Table: "stats_it.none", Where: where})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if res.NumRows() != 5000 || rows != 5000 || !res.Stats.Pushdown || res.Stats.FallbackReason != "" || !strings.Contains(res.Stats.CostNote, "reads fewer bytes than a plain scan") {
		t.Fatalf("SELECT * WHERE %s: %d rows (%d projected), pushdown %v, fallback %q, cost note %q; want 5000 rows read from the plan", where, res.NumRows(), rows, res.Stats.Pushdown, res.Stats.FallbackReason, res.Stats.CostNote)
	}
	plain, err := conn.Query(ctx, connector.Query{Table: "stats_it.none", Select: []string{"id", "ts"}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Release()
	if plain.NumRows() != statsRows || plain.Stats.Pushdown || !strings.Contains(plain.Stats.FallbackReason, "decided before planning from the manifests") {
		t.Fatalf("no predicate: %d rows, pushdown %v, fallback %q; want a plain read decided before planning", plain.NumRows(), plain.Stats.Pushdown, plain.Stats.FallbackReason)
	}
}

// The plain read (the connector's fallback, and -no-pushdown) of the demo
// tables' embedding column returns every row with the values a planned
// read gives. The demo writer stores the Arrow schema, so embedding reads
// back as fixed_size_list<float32>[64], which iceberg-go v0.7.0's scan
// cannot project (its projection visitor has no FIXED_SIZE_LIST case): the
// plain read decodes those files itself.
func TestPlainReadOfTheDemoEmbeddingColumnReturnsEveryRow(t *testing.T) {
	c := sharedCluster(t)
	statsTables(t, c)
	ctx := context.Background()
	read := func(o connector.Options) (*connector.Result, []string) {
		t.Helper()
		o.Endpoints = c.Endpoints()
		conn, err := connector.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		res, err := conn.Query(ctx, connector.Query{Table: "stats_it.none", Select: []string{"id", "embedding"}})
		if err != nil {
			t.Fatalf("%+v: read of embedding: %v", o, err)
		}
		return res, inOrder(res.Records)
	}
	plain, plainRows := read(connector.Options{NoPushdown: true})
	defer plain.Release()
	if plain.NumRows() != statsRows || plain.Stats.Pushdown || !strings.Contains(plain.Stats.Mode, "decoded by the connector") {
		t.Fatalf("plain read: %d rows (want %d), stats %+v", plain.NumRows(), statsRows, plain.Stats)
	}
	planned, plannedRows := read(connector.Options{Force: true, NoFallback: true})
	defer planned.Release()
	if !planned.Stats.Pushdown || !slices.Equal(plainRows, plannedRows) {
		t.Fatalf("the plain read's rows differ from the planned read's (pushdown %v): first difference %s", planned.Stats.Pushdown, firstDiff(plainRows, plannedRows))
	}
}

// indexes_used and indexes_missing list exactly the indexes each tier read
// or wanted, per table layout. Missing entries count the files that lacked
// the index among the files that survived the manifest tier.
func TestPlanStatsListExactlyTheIndexesUsedAndMissing(t *testing.T) {
	c := sharedCluster(t)
	statsTables(t, c)
	// Row 100 lives in row group 0 of file 0, which is indexed under both
	// all and half: its row group survives the bloom filter, so its page
	// index is read.
	type want struct{ used, missing []string }
	for _, tc := range []struct {
		table string
		// id = <id of row 100>: no file pruned by the manifest (every
		// file's id bounds cover [~0, ~8000)), footer stats read in every
		// file but prune nothing, bloom filters and page indexes read
		// where present.
		point want
		// rows [2500, 3100): file 1 alone survives the manifest; its two
		// row groups survive footer stats; a range never asks for a bloom
		// filter.
		tsRange want
	}{
		{"stats_it.all",
			want{[]string{"bloom_filter(id)", "footer_stats(id)", "page_index(id)"}, nil},
			want{[]string{"footer_stats(ts)", "page_index(ts)"}, nil}},
		{"stats_it.half", // files 0 and 2 indexed; file 1 (the ts range's) is not
			want{[]string{"bloom_filter(id)", "footer_stats(id)", "page_index(id)"}, []string{"bloom_filter(id) (2 of 4 files)", "page_index (2 of 4 files)"}},
			want{[]string{"footer_stats(ts)"}, []string{"page_index (1 of 1 files)"}}},
		{"stats_it.none",
			want{[]string{"footer_stats(id)"}, []string{"bloom_filter(id) (4 of 4 files)", "page_index (4 of 4 files)"}},
			want{[]string{"footer_stats(ts)"}, []string{"page_index (1 of 1 files)"}}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			id := idOfRow(t, c, tc.table, 100)
			for _, q := range []struct {
				where string
				want  want
			}{
				{fmt.Sprintf("id = %d", id), tc.point},
				{tsRange(2500, 3100), tc.tsRange},
				// Without a predicate no index is consulted or wanted.
				{"", want{}},
			} {
				st := planStats(t, c, tc.table, q.where, "id")
				if fmt.Sprintf("%q", st.GetIndexesUsed()) != fmt.Sprintf("%q", q.want.used) {
					t.Errorf("WHERE %q: indexes_used %q, want %q", q.where, st.GetIndexesUsed(), q.want.used)
				}
				if fmt.Sprintf("%q", st.GetIndexesMissing()) != fmt.Sprintf("%q", q.want.missing) {
					t.Errorf("WHERE %q: indexes_missing %q, want %q", q.where, st.GetIndexesMissing(), q.want.missing)
				}
			}
		})
	}
}

// estimated_selectivity is the fraction of the table's rows the plan keeps
// (rows of the planned row ranges, whole row groups where nothing narrowed
// them, over every file's record count): an upper bound of the true
// selectivity, exact where the plan's granularity matches the predicate,
// never below it, and within [0, 1].
func TestEstimatedSelectivityBoundsTheTrueFractionOfRows(t *testing.T) {
	c := sharedCluster(t)
	statsTables(t, c)
	const m = float64(statsRows)
	for _, tc := range []struct {
		table, where string
		// the true fraction of matching rows, and the highest estimate
		// the layout allows (equal when the estimate is exact)
		trueSel, maxEst float64
	}{
		{"stats_it.none", "", 1, 1},
		{"stats_it.all", "", 1, 1},
		// rows [2000, 3000) are exactly row group 0 of file 1.
		{"stats_it.none", tsRange(2000, 3000), 1000 / m, 1000 / m},
		{"stats_it.all", tsRange(2000, 3000), 1000 / m, 1000 / m},
		// rows [2500, 3100) lie in both row groups of file 1: without a page
		// index both row groups are kept whole.
		{"stats_it.none", tsRange(2500, 3100), 600 / m, 2000 / m},
		{"stats_it.all", tsRange(2500, 3100), 600 / m, 2000 / m},
		// rows [1500, 2500) span files 0 and 1: one row group of each.
		{"stats_it.half", tsRange(1500, 2500), 1000 / m, 2000 / m},
		// an id no file holds is pruned by the manifest bounds.
		{"stats_it.none", "id = 8000", 0, 0},
		{"stats_it.all", "id = -1", 0, 0},
		// every row.
		{"stats_it.none", "id >= 0", 1, 1},
	} {
		st := planStats(t, c, tc.table, tc.where, "id")
		est := st.GetEstimatedSelectivity()
		const eps = 1e-12
		if est < 0 || est > 1 || est < tc.trueSel-eps || est > tc.maxEst+eps {
			t.Errorf("%s WHERE %q: estimated selectivity %v, want within [%v, %v] ⊆ [0, 1]", tc.table, tc.where, est, tc.trueSel, tc.maxEst)
		}
	}
	// One row by id: without indexes nothing narrows a shuffled column, so
	// every row is kept; with bloom filters and page indexes the estimate
	// falls to at most one row group's worth, never below the one row.
	for _, tc := range []struct {
		table          string
		minEst, maxEst float64
	}{
		{"stats_it.none", 1, 1},
		{"stats_it.all", 1 / m, 1000 / m},
	} {
		where := fmt.Sprintf("id = %d", idOfRow(t, c, tc.table, 100))
		est := planStats(t, c, tc.table, where, "id").GetEstimatedSelectivity()
		if est < tc.minEst-1e-12 || est > tc.maxEst+1e-12 {
			t.Errorf("%s WHERE %q: estimated selectivity %v, want within [%v, %v]", tc.table, where, est, tc.minEst, tc.maxEst)
		}
	}
}
