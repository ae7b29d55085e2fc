package integration

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

var planTableOnce sync.Once

// planTable loads plan_it.events (40,000 rows, 4 files of 8 row groups,
// small pages; files 0 and 2 with page index and bloom filters).
func planTable(t *testing.T, c *harness.Cluster) {
	t.Helper()
	planTableOnce.Do(func() {
		spec := demo.DefaultSpec()
		spec.Rows, spec.Files, spec.RowGroupRows, spec.PageBytes = 40_000, 4, 1250, 4096
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := demo.Load(ctx, demo.LoadOptions{Endpoints: c.Endpoints(), Table: "plan_it.events", Spec: spec}); err != nil {
			t.Fatalf("load plan_it.events: %v", err)
		}
	})
}

// fetchAll downloads a table file through the S3 gateway.
func fetchAll(t *testing.T, c *harness.Cluster, path string) []byte {
	t.Helper()
	rest := strings.TrimPrefix(path, "s3://")
	bucket, key, _ := strings.Cut(rest, "/")
	obj, err := c.S3(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	defer obj.Body.Close()
	b, err := io.ReadAll(obj.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Plans from the real catalog, over a real table, keep every matching row:
// each data file is downloaded through S3 and decoded in full.
func TestPlanOverDemoTableKeepsEveryMatchingRow(t *testing.T) {
	c := sharedCluster(t)
	planTable(t, c)
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{"plan_it", "events"})
	if err != nil {
		t.Fatal(err)
	}
	schema := tbl.Schema()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	decoded := map[string]*oracle.File{}
	for _, task := range tasks {
		df, err := oracle.DecodeFile(fetchAll(t, c, task.File.FilePath()), schema)
		if err != nil {
			t.Fatal(err)
		}
		decoded[task.File.FilePath()] = df
	}
	queries := []struct {
		where      string
		selectCols string
		// at most this fraction of the projected bytes may be planned
		maxBytesFraction float64
	}{
		{"id = 12345", "id,message", 1},
		{"ts >= TIMESTAMP '2026-01-01 01:00:00' AND ts < TIMESTAMP '2026-01-01 01:05:00'", "id,ts", 0.1},
		{"tenant_id = 'tenant-042'", "id,tenant_id", 0.8},
		{"status = 'error'", "id", 1},
		{"tenant_id IN ('tenant-001', 'tenant-099') OR id < 100", "id,tenant_id,tags", 1},
		{"NOT (ts < TIMESTAMP '2026-01-01 02:40:00') AND status != 'ok'", "ts,status", 0.3},
		{"message LIKE 'GET /api/v1/orders%'", "message", 1},
		{"id BETWEEN 39990 AND 40010", "", 1},
	}
	for _, q := range queries {
		req, err := cli.BuildPlanRequest(ctx, c.Endpoints(), "plan_it.events", 0, q.where, q.selectCols)
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		resp, err := c.Catalog(t).Plan(ctx, req)
		if err != nil {
			t.Fatalf("%s: Plan: %v", q.where, err)
		}
		raw, err := predicate.DecodeSubstrait(req.Predicate, schema)
		if err != nil {
			t.Fatal(err)
		}
		e, err := predicate.Bind(raw, schema, predicate.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		planned := map[string]map[int32]*pushdown_pb.RowGroupRef{}
		for _, rg := range resp.RowGroups {
			if planned[rg.File] == nil {
				planned[rg.File] = map[int32]*pushdown_pb.RowGroupRef{}
			}
			planned[rg.File][rg.RowGroup] = rg
		}
		var matches int
		for path, df := range decoded {
			for _, row := range df.Matching(e) {
				matches++
				rg := df.RowGroupOf(row)
				ref := planned[path][int32(rg)]
				if ref == nil {
					t.Fatalf("%s: row %d of %s (row group %d) matches but is not planned", q.where, row, path, rg)
				}
				local := row - ref.FirstRow
				if len(ref.RowRanges) > 0 {
					in := false
					for _, r := range ref.RowRanges {
						if r.Start <= local && local < r.End {
							in = true
						}
					}
					if !in {
						t.Fatalf("%s: row %d of %s matches but the row ranges %v miss it", q.where, row, path, ref.RowRanges)
					}
				}
			}
		}
		var sum int64
		for _, fr := range resp.FileRanges {
			sum += fr.Length
		}
		st := resp.Stats
		if sum != st.BytesPlanned || st.FilesTotal != 4 || st.TrustMode != pushdown_pb.TrustMode_CATALOG_RESOLVED {
			t.Fatalf("%s: stats inconsistent: ranges sum %d, %+v", q.where, sum, st)
		}
		if frac := float64(st.BytesPlanned) / float64(st.BytesTotal); frac > q.maxBytesFraction {
			t.Errorf("%s: planned %.3f of the projected bytes, expected at most %.2f", q.where, frac, q.maxBytesFraction)
		}
		t.Logf("%-70s matches %5d  planned %7d of %8d bytes, %d/%d row groups, %d/%d pages", q.where, matches, st.BytesPlanned, st.BytesTotal,
			st.RowGroupsTotal-st.RowGroupsPruned, st.RowGroupsTotal, st.PagesTotal-st.PagesPruned, st.PagesTotal)
	}
}

func TestPlanCLIPrintsJSONWithProtoFieldNames(t *testing.T) {
	c := sharedCluster(t)
	planTable(t, c)
	e := c.Endpoints()
	out, errOut, err := harness.Weed(t, "pushdown", "plan", "-table", "plan_it.events", "-where", "tenant_id = 'tenant-007' AND status = 'error'",
		"-select", "id", "-json", "-catalog", e.Catalog, "-iceberg", e.Iceberg, "-s3", e.S3)
	if err != nil {
		t.Fatalf("plan -json: %v\n%s", err, errOut)
	}
	var resp map[string]any
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	st, _ := resp["stats"].(map[string]any)
	if st == nil || st["bytes_planned"] == nil || st["files_total"] == nil || resp["row_groups"] == nil {
		t.Fatalf("JSON lacks proto field names: %s", out)
	}
	text, _, err := harness.Weed(t, "pushdown", "plan", "-table", "plan_it.events", "-where", "tenant_id = 'tenant-007'",
		"-catalog", e.Catalog, "-iceberg", e.Iceberg, "-s3", e.S3)
	if err != nil || !strings.Contains(text, "bloom_filter") || !strings.Contains(text, "cost model:") {
		t.Fatalf("readable plan: %v\n%s", err, text)
	}
	_, errOut, err = harness.Weed(t, "pushdown", "plan", "-table", "plan_it.events", "-where", "lower(status) = 'x'",
		"-catalog", e.Catalog, "-iceberg", e.Iceberg, "-s3", e.S3)
	if err == nil || !strings.Contains(errOut, "supported:") {
		t.Fatalf("unsupported SQL: %v %s", err, errOut)
	}
}

func TestPlanRefusesRequestsThatDoNotBind(t *testing.T) {
	c := sharedCluster(t)
	planTable(t, c)
	ctx := context.Background()
	cat := c.Catalog(t)
	nine := int32(9)
	good, err := cli.BuildPlanRequest(ctx, c.Endpoints(), "plan_it.events", 0, "id = 1", "")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		req  *pushdown_pb.ParquetPushdownRequest
		code codes.Code
		msg  string
	}{
		{"name-only reference", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG,
			Predicate: []byte(`{"type":"eq","term":"id","value":1}`)}, codes.InvalidArgument, "name-only"},
		{"unknown field id", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG,
			Predicate: []byte(`{"type":"eq","term":{"field-id":99},"value":1}`)}, codes.InvalidArgument, "field id 99"},
		{"type mismatch", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG,
			Predicate: []byte(`{"type":"eq","term":{"field-id":1},"value":"abc"}`)}, codes.InvalidArgument, "id"},
		{"unknown schema id", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", SchemaId: &nine}, codes.InvalidArgument, "schema id 9"},
		{"malformed substrait", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT,
			Predicate: []byte{0xff, 0x01, 0x02}}, codes.InvalidArgument, "Substrait"},
		{"predicate without kind", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", Predicate: good.Predicate}, codes.InvalidArgument, "predicate_kind"},
		{"unknown table", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.nope"}, codes.NotFound, "plan_it.nope"},
		{"unknown snapshot", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", SnapshotId: aws.Int64(12345)}, codes.NotFound, "snapshot 12345"},
		{"no table", &pushdown_pb.ParquetPushdownRequest{}, codes.InvalidArgument, "table is empty"},
		{"huge predicate", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG,
			Predicate: make([]byte, 2<<20)}, codes.ResourceExhausted, "predicate of"},
		{"unknown column id", &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", Columns: []*pushdown_pb.ColumnRef{{FieldId: 77}}}, codes.InvalidArgument, "field id 77"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cat.Plan(ctx, tc.req)
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
	// An operator the planner cannot prune with is a residual, not an error.
	resp, err := cat.Plan(ctx, &pushdown_pb.ParquetPushdownRequest{Table: "plan_it.events", PredicateKind: pushdown_pb.PredicateKind_PREDICATE_ICEBERG,
		Predicate: []byte(`{"type":"eq","term":{"type":"transform","transform":"bucket[16]","term":{"field-id":1}},"value":3}`)})
	if err != nil || len(resp.Stats.ResidualPredicates) != 1 || resp.Stats.FilesPruned != 0 {
		t.Fatalf("residual predicate: %v %v", err, resp.GetStats())
	}
}
