package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/schollz/progressbar/v3"
	flag "github.com/seaweedfs/seaweedfs/weed/util/fla9"
	"golang.org/x/term"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

func init() {
	register(&subcommand{
		name:  "index",
		short: "side indexes of a table: create, list, drop",
		usage: `weed pushdown index create -table ns.t -column C -kind btree|bloom|page_index|bitmap|ngram|label_list|ivf|ivf_pq [-param key=value[,key=value]]... [-wait]
weed pushdown index list -table ns.t [-json]
weed pushdown index drop -table ns.t -column C -kind K`,
		run: runIndex,
	})
}

func runIndex(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("want create, list or drop (see weed pushdown index -h)")
	}
	sub, args := args[0], args[1:]
	fs := newFlags(subcommands["index"])
	switch sub {
	case "-h", "-help", "--help", "help":
		fs.Usage()
		return flag.ErrHelp
	}
	endpoints := endpointFlags(fs)
	tableName := fs.String("table", "", "table, as namespace.table")
	column := fs.String("column", "", "column (dotted path for nested fields)")
	kind := fs.String("kind", "", "index kind: "+strings.Join(kindNames(), ", "))
	params := paramFlag{}
	fs.Var(params, "param", "create: build parameters key=value[,key=value], repeatable (bitmap max_distinct, btree rows_per_group, bloom fpp|ndv|max_bytes, ivf nlist|m|min_rows|seed|iterations)")
	wait := fs.Bool("wait", false, "create: wait until every existing file is indexed")
	asJSON := fs.Bool("json", false, "list: print JSON")
	timeout := fs.Duration("timeout", time.Hour, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tableName == "" {
		return fmt.Errorf("-table is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	e, err := endpoints(ctx)
	if err != nil {
		return err
	}
	switch sub {
	case "create", "drop":
		if *column == "" || *kind == "" {
			return fmt.Errorf("%s needs -column and -kind", sub)
		}
		k, ok := sideindex.Lookup(*kind)
		if !ok {
			return fmt.Errorf("unknown kind %q (want %s)", *kind, strings.Join(kindNames(), ", "))
		}
		if len(params) > 0 && sub == "drop" {
			return fmt.Errorf("-param is for create only")
		}
		if err := k.CheckParams(params); err != nil {
			return fmt.Errorf("-param: a %s index: %w", *kind, err)
		}
		var before *pushdown_pb.ListIndexesResponse
		if sub == "drop" {
			// the payloads to remove once the table no longer wants them
			var err error
			if before, err = listIndexes(ctx, e, *tableName); err != nil {
				return err
			}
		}
		specs, fieldID, err := updateWanted(ctx, e, *tableName, *column, indexing.Spec{Kind: *kind, Params: params.orNil()}, sub == "create")
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s wants %d side indexes: %s\n", *tableName, len(specs), indexing.Encode(specs))
		if sub == "drop" {
			if st := summarize(before, indexing.Spec{FieldID: fieldID, Kind: *kind}); st.indexed > 0 {
				// A table bucket takes no S3 deletes outside data/ and
				// metadata/: only the catalog can remove them (not built yet).
				fmt.Fprintf(os.Stderr, "note: the %d payloads of the dropped index (%d bytes, <data dir>/.index/<file>/<identity>/%s) stay beside the data files; "+
					"they are no longer read, and creating the %s index on %s again reuses them\n", st.indexed, st.bytes, indexing.PayloadName(*kind, fieldID), *kind, *column)
			}
			return nil
		}
		t0 := time.Now()
		resp, err := buildWithProgress(ctx, e, *tableName, *wait)
		if err != nil {
			return err
		}
		if !*wait {
			fmt.Fprintf(os.Stderr, "builds scheduled in the background; follow them with weed pushdown index list -table %s\n", *tableName)
			return nil
		}
		// What is committed counts, not what this call built: a commit of
		// the table may have built the indexes already, or be building them.
		list, st, err := waitSettled(ctx, e, *tableName, indexing.Spec{FieldID: fieldID, Kind: *kind})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s index on %s: %d of %d files indexed (%d built by this call, %d failed) in %s\n",
			*kind, *column, st.indexed, list.GetFilesTotal(), resp.GetBuilt(), resp.GetFailed(), time.Since(t0).Round(time.Millisecond))
		for _, m := range resp.GetErrors() {
			fmt.Fprintf(os.Stderr, "  %s\n", m)
		}
		if resp.GetFailed() > 0 {
			return fmt.Errorf("%d builds failed", resp.GetFailed())
		}
		if st.indexed < list.GetFilesTotal() {
			return fmt.Errorf("%d of %d files are not indexed (states: %s); see weed pushdown index list -table %s", list.GetFilesTotal()-st.indexed, list.GetFilesTotal(), st.statesText(), *tableName)
		}
		return nil
	case "list":
		resp, err := listIndexes(ctx, e, *tableName)
		if err != nil {
			return err
		}
		names, err := columnNames(ctx, e, *tableName)
		if err != nil {
			return err
		}
		if *asJSON {
			b, err := indexesJSON(resp, names)
			if err != nil {
				return err
			}
			fmt.Println(string(b))
			return nil
		}
		PrintIndexes(os.Stdout, resp, names)
		return nil
	}
	return fmt.Errorf("unknown index subcommand %q: want create, list or drop", sub)
}

func kindNames() []string {
	var out []string
	for _, k := range sideindex.Kinds() {
		out = append(out, k.Name())
	}
	return out
}

// paramFlag collects repeated -param key=value.
type paramFlag map[string]string

func (p paramFlag) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + p[k]
	}
	return strings.Join(keys, ",")
}

// Set takes key=value, or several separated by commas (nlist=64,m=16).
func (p paramFlag) Set(s string) error {
	for _, kv := range strings.Split(s, ",") {
		if err := p.set(kv); err != nil {
			return err
		}
	}
	return nil
}

func (p paramFlag) set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	switch {
	case !ok || k == "" || v == "":
		return fmt.Errorf("want key=value, got %q", perr.Truncate(s, 64))
	case p[k] != "" && p[k] != v:
		return fmt.Errorf("parameter %s given twice (%s and %s)", perr.Truncate(k, 64), perr.Truncate(p[k], 64), perr.Truncate(v, 64))
	}
	p[k] = v
	return nil
}

func (p paramFlag) orNil() map[string]string {
	if len(p) == 0 {
		return nil
	}
	return map[string]string(p)
}

// updateWanted adds (or removes) an index on column to the table's
// lakeweed.indexes property through the Iceberg REST catalog; an added
// spec replaces one of the same kind on the column (new parameters).
// It returns the specs wanted after the change and the column's field id;
// dropping an index the table does not want is an error naming those it
// wants.
func updateWanted(ctx context.Context, e lakeclient.Endpoints, tableName, column string, want indexing.Spec, add bool) ([]indexing.Spec, int, error) {
	kind := want.Kind
	tbl, err := loadTable(ctx, e, tableName)
	if err != nil {
		return nil, 0, err
	}
	name, err := sqlpred.ResolveName(tbl.Schema(), column)
	if err != nil {
		return nil, 0, err
	}
	field, ok := tbl.Schema().FindFieldByName(name)
	if !ok {
		return nil, 0, fmt.Errorf("table %s: %w", tableName, sqlpred.UnknownColumn(column, tbl.Schema()))
	}
	if k, _ := sideindex.Lookup(kind); add && !k.Supports(field.Type) {
		return nil, 0, fmt.Errorf("a %s index cannot index column %s of type %s", kind, column, field.Type)
	}
	specs, err := indexing.Wanted(tbl.Properties())
	if err != nil {
		return nil, 0, err
	}
	out := specs[:0]
	for _, sp := range specs {
		if sp.FieldID == field.ID && sp.Kind == kind {
			continue
		}
		out = append(out, sp)
	}
	if !add && len(out) == len(specs) {
		var have []string
		for _, sp := range specs {
			have = append(have, sp.Kind+" on "+fieldName(tbl.Schema(), sp.FieldID))
		}
		if len(have) == 0 {
			have = []string{"none"}
		}
		return nil, 0, fmt.Errorf("table %s has no %s index on %s to drop (its indexes: %s)", tableName, kind, field.Name, strings.Join(have, ", "))
	}
	if add {
		want.FieldID = field.ID
		out = append(out, want)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{indexing.Property: indexing.Encode(out)}); err != nil {
		return nil, 0, err
	}
	if _, err := tx.Commit(ctx); err != nil {
		return nil, 0, fmt.Errorf("record the wanted indexes on %s: %w", tableName, err)
	}
	return out, field.ID, nil
}

// loadTable loads a table from the cluster's Iceberg REST catalog.
func loadTable(ctx context.Context, e lakeclient.Endpoints, tableName string) (*table.Table, error) {
	cat, err := lakeclient.NewIcebergCatalog(ctx, e)
	if err != nil {
		return nil, err
	}
	id, err := lakeclient.ParseIdentifier(tableName)
	if err != nil {
		return nil, err
	}
	tbl, err := cat.LoadTable(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", tableName, err)
	}
	return tbl, nil
}

// columnNames maps the field ids of a table's current schema to their
// column names (dotted for nested fields).
func columnNames(ctx context.Context, e lakeclient.Endpoints, tableName string) (map[int]string, error) {
	tbl, err := loadTable(ctx, e, tableName)
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	for id := 1; id <= tbl.Schema().HighestFieldID(); id++ {
		if n, ok := tbl.Schema().FindColumnName(id); ok {
			names[id] = n
		}
	}
	return names, nil
}

func fieldName(s *iceberg.Schema, id int) string {
	if n, ok := s.FindColumnName(id); ok {
		return n
	}
	return fmt.Sprintf("field %d", id)
}

// waitSettled lists the table's indexes until no live file's entry of sp
// is building (a build a commit started in the background may finish
// after a -wait build that found nothing to do), or ctx ends.
func waitSettled(ctx context.Context, e lakeclient.Endpoints, tableName string, sp indexing.Spec) (*pushdown_pb.ListIndexesResponse, indexStats, error) {
	for {
		list, err := listIndexes(ctx, e, tableName)
		if err != nil {
			return nil, indexStats{}, err
		}
		st := summarize(list, sp)
		if st.states[indexing.StateBuilding] == 0 {
			return list, st, nil
		}
		select {
		case <-ctx.Done():
			return list, st, nil // report what is there
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// indexStats is what the listed entries say of one wanted index.
type indexStats struct {
	indexed, bytes int64
	states         map[string]int
	reasons        []string // distinct failure reasons, at most three
}

// summarize counts the entries of sp's index: files committed, their
// payload bytes, entries by state.
func summarize(list *pushdown_pb.ListIndexesResponse, sp indexing.Spec) indexStats {
	st := indexStats{states: map[string]int{}}
	for _, e := range list.GetEntries() {
		if int(e.GetFieldId()) != sp.FieldID || e.GetKind() != sp.Kind {
			continue
		}
		st.states[e.GetState()]++
		switch e.GetState() {
		case indexing.StateCommitted:
			st.indexed++
			st.bytes += e.GetPayloadBytes()
		case indexing.StateFailed:
			if len(st.reasons) < 3 && !slices.Contains(st.reasons, e.GetReason()) {
				st.reasons = append(st.reasons, e.GetReason())
			}
		}
	}
	return st
}

func (st indexStats) statesText() string {
	var parts []string
	for s, n := range st.states {
		parts = append(parts, fmt.Sprintf("%s %d", s, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// indexesJSON is ListIndexes's answer as JSON (proto field names) with, on
// each wanted index, its column name, files_indexed (committed), the
// payload bytes and the entries by state.
func indexesJSON(resp *pushdown_pb.ListIndexesResponse, names map[int]string) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(resp)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	wanted, _ := doc["wanted"].([]any)
	for i, sp := range resp.GetWanted() {
		st := summarize(resp, indexing.Spec{FieldID: int(sp.GetFieldId()), Kind: sp.GetKind()})
		w := wanted[i].(map[string]any)
		w["column"], w["files_indexed"], w["payload_bytes"], w["states"] = names[int(sp.GetFieldId())], st.indexed, st.bytes, st.states
	}
	return json.MarshalIndent(doc, "", "  ")
}

func buildIndexes(ctx context.Context, e lakeclient.Endpoints, tableName string, wait bool) (*pushdown_pb.BuildTableIndexesResponse, error) {
	pool := grpcutil.NewConnPool(grpcutil.ClientDialOption())
	defer pool.Close()
	conn, err := pool.Get(e.Catalog)
	if err != nil {
		return nil, err
	}
	req := &pushdown_pb.BuildTableIndexesRequest{Warehouse: e.Warehouse, Table: tableName, Wait: wait}
	ctx, err = e.SignCall(ctx, e.Catalog, "BuildIndexes", req)
	if err != nil {
		return nil, err
	}
	resp, err := pushdown_pb.NewPushdownCatalogClient(conn).BuildIndexes(ctx, req, waitForReady())
	if err != nil {
		return nil, fmt.Errorf("catalog pushdown service at %s: %w", e.Catalog, err)
	}
	return resp, nil
}

func listIndexes(ctx context.Context, e lakeclient.Endpoints, tableName string) (*pushdown_pb.ListIndexesResponse, error) {
	pool := grpcutil.NewConnPool(grpcutil.ClientDialOption())
	defer pool.Close()
	conn, err := pool.Get(e.Catalog)
	if err != nil {
		return nil, err
	}
	req := &pushdown_pb.ListIndexesRequest{Warehouse: e.Warehouse, Table: tableName}
	ctx, err = e.SignCall(ctx, e.Catalog, "ListIndexes", req)
	if err != nil {
		return nil, err
	}
	resp, err := pushdown_pb.NewPushdownCatalogClient(conn).ListIndexes(ctx, req, waitForReady())
	if err != nil {
		return nil, fmt.Errorf("catalog pushdown service at %s: %w", e.Catalog, err)
	}
	return resp, nil
}

// PrintIndexes writes, per wanted index, its column, build parameters,
// files indexed of total, counts by state and payload bytes; then, per
// wanted index with failed builds, their distinct reasons (at most three).
func PrintIndexes(w io.Writer, resp *pushdown_pb.ListIndexesResponse, names map[int]string) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COLUMN\tFIELD ID\tKIND\tPARAMS\tFILES INDEXED\tSTATES\tPAYLOAD BYTES")
	var failures []string
	for _, sp := range resp.GetWanted() {
		st := summarize(resp, indexing.Spec{FieldID: int(sp.GetFieldId()), Kind: sp.GetKind()})
		params := paramFlag(sp.GetParams()).String()
		if params == "" {
			params = "-"
		}
		name := names[int(sp.GetFieldId())]
		if name == "" {
			name = "?"
		}
		states := ""
		if len(st.states) > 0 {
			states = st.statesText()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d of %d\t%s\t%d\n", name, sp.GetFieldId(), sp.GetKind(), params, st.indexed, resp.GetFilesTotal(), states, st.bytes)
		for _, r := range st.reasons {
			failures = append(failures, fmt.Sprintf("%s on %s (field %d) failed: %s", sp.GetKind(), name, sp.GetFieldId(), r))
		}
	}
	tw.Flush()
	for _, f := range failures {
		fmt.Fprintln(w, f)
	}
}

// buildWithProgress runs buildIndexes; waiting on a terminal, it shows a
// progress bar of the wanted indexes of live files that are committed or
// failed, polling ListIndexes while the catalog builds.
func buildWithProgress(ctx context.Context, e lakeclient.Endpoints, tableName string, wait bool) (*pushdown_pb.BuildTableIndexesResponse, error) {
	if !wait || !term.IsTerminal(int(os.Stderr.Fd())) {
		return buildIndexes(ctx, e, tableName, wait)
	}
	type result struct {
		resp *pushdown_pb.BuildTableIndexesResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := buildIndexes(ctx, e, tableName, true)
		done <- result{resp, err}
	}()
	var bar *progressbar.ProgressBar
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			if bar != nil {
				_ = bar.Finish()
			}
			return r.resp, r.err
		case <-tick.C:
			list, err := listIndexes(ctx, e, tableName)
			if err != nil {
				continue // the build's own answer says what went wrong
			}
			finished, total := indexProgress(list)
			if total == 0 {
				continue
			}
			if bar == nil {
				bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription("indexing"), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
			}
			_ = bar.Set64(min(finished, total))
		}
	}
}

// indexProgress counts the wanted indexes of the listed files that are
// committed or failed, of files × wanted.
func indexProgress(list *pushdown_pb.ListIndexesResponse) (finished, total int64) {
	wanted := map[string]bool{}
	for _, sp := range list.GetWanted() {
		wanted[indexing.PayloadName(sp.GetKind(), int(sp.GetFieldId()))] = true
	}
	for _, en := range list.GetEntries() {
		if wanted[indexing.PayloadName(en.GetKind(), int(en.GetFieldId()))] && (en.GetState() == indexing.StateCommitted || en.GetState() == indexing.StateFailed) {
			finished++
		}
	}
	return finished, list.GetFilesTotal() * int64(len(wanted))
}
