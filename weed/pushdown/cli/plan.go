package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/seaweedfs/seaweedfs/weed/util"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

func init() {
	register(&subcommand{
		name: "plan",
		short: `Ask the catalog pushdown service what a query must read: files, row groups, pages and byte ranges,
with per-tier pruning figures. The WHERE clause is parsed as SQL, bound to the table's field ids here
(the schema comes from the Iceberg REST catalog) and sent as Substrait.`,
		usage: `-table ns.table [-snapshot ID] [-where "<SQL predicate>"] [-select a,b] [-json] [-catalog host:port] [-iceberg URL]`,
		run:   runPlan,
	})
}

func runPlan(args []string) error {
	fs := newFlags(subcommands["plan"])
	tableName := fs.String("table", "", "table, namespace.table")
	snapshot := fs.Int64("snapshot", 0, "snapshot id (default: the current snapshot)")
	where := fs.String("where", "", "SQL predicate, e.g. \"tenant_id = 'tenant-007' AND ts >= TIMESTAMP '2026-01-01 06:00:00'\"")
	sel := fs.String("select", "", "comma-separated columns to read (default: every column)")
	asJSON := fs.Bool("json", false, "print the response as JSON (proto field names)")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait")
	endpoints := endpointFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tableName == "" {
		return fmt.Errorf("-table is required (namespace.table)")
	}
	util.LoadSecurityConfiguration()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	e, err := endpoints(ctx)
	if err != nil {
		return err
	}
	req, err := BuildPlanRequest(ctx, e, *tableName, *snapshot, *where, *sel)
	if err != nil {
		return err
	}
	resp, err := Plan(ctx, e, req)
	if err != nil {
		return err
	}
	if *asJSON {
		b, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true}.Marshal(resp)
		if err != nil {
			return err
		}
		fmt.Println(string(b))
		return nil
	}
	PrintPlan(os.Stdout, *tableName, *where, resp)
	return nil
}

// BuildPlanRequest binds a SQL WHERE clause and a column list to the
// table's schema (from the Iceberg REST catalog) and builds the request.
func BuildPlanRequest(ctx context.Context, e lakeclient.Endpoints, tableName string, snapshot int64, where, sel string) (*pushdown_pb.ParquetPushdownRequest, error) {
	ident, err := lakeclient.ParseIdentifier(tableName)
	if err != nil {
		return nil, err
	}
	cat, err := lakeclient.NewIcebergCatalog(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("iceberg REST catalog %s: %w", e.Iceberg, err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %s from %s: %w", tableName, e.Iceberg, err)
	}
	schema, snapID, err := schemaFor(tbl, snapshot)
	if err != nil {
		return nil, err
	}
	req := &pushdown_pb.ParquetPushdownRequest{Table: tableName, Warehouse: e.Warehouse, SchemaId: ptr(int32(schema.ID))}
	if snapID != 0 {
		req.SnapshotId = ptr(snapID)
	}
	if where != "" {
		b, err := sqlpred.Encode(where, schema)
		if err != nil {
			return nil, err
		}
		if b != nil {
			req.Predicate, req.PredicateKind = b, pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT
		}
	}
	ids, err := sqlpred.Columns(sel, schema)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		name, _ := schema.FindColumnName(id)
		req.Columns = append(req.Columns, &pushdown_pb.ColumnRef{FieldId: int32(id), Path: name})
	}
	return req, nil
}

func schemaFor(tbl *table.Table, snapshot int64) (*iceberg.Schema, int64, error) {
	if snapshot == 0 {
		return tbl.Schema(), 0, nil
	}
	s := tbl.SnapshotByID(snapshot)
	if s == nil {
		return nil, 0, fmt.Errorf("snapshot %d is not a snapshot of %s", snapshot, strings.Join(tbl.Identifier(), "."))
	}
	if s.SchemaID != nil {
		if sc, ok := tbl.Schemas()[*s.SchemaID]; ok {
			return sc, snapshot, nil
		}
	}
	return tbl.Schema(), snapshot, nil
}

func ptr[T any](v T) *T { return &v }

// Plan calls PushdownCatalog.Plan, signed with the endpoints' S3
// credentials when they have some.
func Plan(ctx context.Context, e lakeclient.Endpoints, req *pushdown_pb.ParquetPushdownRequest) (*pushdown_pb.ParquetPushdownResponse, error) {
	catalog := e.Catalog
	pool := grpcutil.NewConnPool(grpcutil.ClientDialOption())
	defer pool.Close()
	conn, err := pool.Get(catalog)
	if err != nil {
		return nil, err
	}
	ctx, err = e.SignPlan(ctx, catalog, req)
	if err != nil {
		return nil, fmt.Errorf("sign the plan request: %w", err)
	}
	resp, err := pushdown_pb.NewPushdownCatalogClient(conn).Plan(ctx, req, waitForReady())
	if err != nil {
		return nil, fmt.Errorf("catalog pushdown service at %s: %w", catalog, err)
	}
	return resp, nil
}

// PrintPlan writes a readable summary per tier.
func PrintPlan(w io.Writer, tableName, where string, resp *pushdown_pb.ParquetPushdownResponse) {
	st := resp.GetStats()
	fmt.Fprintf(w, "plan for %s (snapshot %d, schema %d, trust mode %s)\n", tableName, resp.GetSnapshotId(), resp.GetSchemaId(), st.GetTrustMode())
	if where != "" {
		fmt.Fprintf(w, "  where      %s\n", where)
	}
	fmt.Fprintf(w, "  files      %d of %d planned\n", st.GetFilesTotal()-st.GetFilesPruned(), st.GetFilesTotal())
	fmt.Fprintf(w, "  row groups %d of %d planned\n", st.GetRowGroupsTotal()-st.GetRowGroupsPruned(), st.GetRowGroupsTotal())
	if st.GetPagesTotal() > 0 {
		fmt.Fprintf(w, "  pages      %d of %d planned (projected columns with a page index)\n", st.GetPagesTotal()-st.GetPagesPruned(), st.GetPagesTotal())
	}
	fmt.Fprintf(w, "  bytes      %s of %s projected (%s), in %d ranges\n", plan.HumanBytes(st.GetBytesPlanned()), plan.HumanBytes(st.GetBytesTotal()),
		pct(st.GetBytesPlanned(), st.GetBytesTotal()), planRanges(resp))
	fmt.Fprintf(w, "  rows       estimated selectivity %.4f\n", st.GetEstimatedSelectivity())
	fmt.Fprintf(w, "tiers\n")
	for _, t := range st.GetTiers() {
		fmt.Fprintf(w, "  %-13s pruned %d files, %d row groups, %d pages  (%s)\n", t.GetTier(), t.GetFilesPruned(), t.GetRowGroupsPruned(), t.GetPagesPruned(),
			time.Duration(t.GetMicros())*time.Microsecond)
	}
	if len(st.GetIndexesUsed()) > 0 {
		fmt.Fprintf(w, "indexes used\n  %s\n", strings.Join(st.GetIndexesUsed(), "\n  "))
	}
	if len(st.GetIndexesMissing()) > 0 {
		fmt.Fprintf(w, "indexes missing\n  %s\n", strings.Join(st.GetIndexesMissing(), "\n  "))
	}
	if len(st.GetResidualPredicates()) > 0 {
		fmt.Fprintf(w, "residual (evaluated on rows)\n  %s\n", strings.Join(st.GetResidualPredicates(), "\n  "))
	}
	fmt.Fprintf(w, "footer cache %d hits, %d misses; plan took %s\n", st.GetFooterCacheHits(), st.GetFooterCacheMisses(), time.Duration(st.GetPlanMicros())*time.Microsecond)
	verdict := "pushdown pays off"
	if !st.GetPushdownRecommended() {
		verdict = "read without pushdown"
	}
	fmt.Fprintf(w, "cost model: %s: %s\n", verdict, st.GetCostReason())
	files := map[string]int{}
	var names []string
	for _, fp := range connector.PlanFiles(resp) {
		if len(fp.RowGroups) > 0 {
			files[fp.File.GetFile()] += len(fp.RowGroups)
			names = append(names, fp.File.GetFile())
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		fmt.Fprintf(w, "files\n")
	}
	for i, f := range names {
		if i == 20 {
			fmt.Fprintf(w, "  ... %d more\n", len(names)-20)
			break
		}
		fmt.Fprintf(w, "  %s: %d row groups\n", f, files[f])
	}
}

// planRanges is the number of byte ranges the plan reads.
func planRanges(resp *pushdown_pb.ParquetPushdownResponse) int {
	n := 0
	for _, fp := range connector.PlanFiles(resp) {
		n += len(fp.Ranges)
	}
	return n
}

// PrintFilterSites writes where the plan's row groups would be filtered
// (-filterAt; the cost model's estimate from the plan alone).
func PrintFilterSites(w io.Writer, fs connector.FilterSites) {
	fmt.Fprintf(w, "filter (-filterAt %s; estimated from the plan, decided per row group while reading)\n", fs.Setting)
	fmt.Fprintf(w, "  exact      %d row groups (side indexes answered: no filter)\n", fs.Exact)
	fmt.Fprintf(w, "  here       %d row groups", fs.Here)
	if fs.HereReason != "" {
		fmt.Fprintf(w, " (first: %s)", fs.HereReason)
	}
	fmt.Fprintf(w, "\n  volume     %d row groups", fs.Volume)
	if fs.VolumeReason != "" {
		fmt.Fprintf(w, " (first: %s)", fs.VolumeReason)
	}
	fmt.Fprintln(w)
}

func pct(a, b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(a)/float64(b))
}
