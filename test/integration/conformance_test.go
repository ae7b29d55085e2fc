package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlpred"
)

// conformanceOutcome is what the conformance test must observe for one
// fixture table.
type conformanceOutcome string

const (
	// Every snapshot, query and decoding mode reads through pushdown
	// exactly as iceberg-go scans it.
	outcomeAgrees conformanceOutcome = "pushdown agrees with iceberg-go"
	// The import refuses the folder (its reason is pinned in
	// fixtureOutcomes): nothing to read.
	outcomeNotImported conformanceOutcome = "not imported"
	// Files differ in size from their manifest entries (imported with
	// -allow-size-mismatch): Plan fails FAILED_PRECONDITION naming a file
	// and both sizes, and the connector falls back to iceberg-go's rows.
	outcomeSizeMismatch conformanceOutcome = "plan refused: file sizes differ from the manifests"
	// iceberg-go's own scan fails (phrase) at some snapshots, so there is no
	// reference there; pushdown is compared wherever iceberg-go can scan.
	outcomeIcebergGoCannotScan conformanceOutcome = "iceberg-go cannot scan"
	// legacy_bare_deletion_vector: see
	// TestConformanceADeletionVectorOutsideAPuffinFileIsReadOnlyWhereBareDeletionVectorsAreAllowed.
	outcomeBareDeletionVector conformanceOutcome = "deletion vector outside a Puffin file"
)

// conformanceExpectation is one fixture table's expected outcome.
type conformanceExpectation struct {
	outcome conformanceOutcome
	// phrase of iceberg-go's scan error (outcomeIcebergGoCannotScan,
	// outcomeBareDeletionVector); alternatives separated by " || " (which
	// problem iceberg-go meets first varies from run to run).
	phrase string
}

const sizesWaived = "-allow-size-mismatch"

// defaultsUnreadable is iceberg-go's scan error for tables whose columns
// have initial-defaults in their JSON forms (strings for dates, UUIDs ...).
const defaultsUnreadable = "unsupported write-default value type string for numeric iceberg type || " +
	"function 'cast_extension' has no kernel matching input types (fixed_size_binary[16])"

// failsWith says whether err is an error containing one of phrase's
// alternatives (" || "-separated); an empty phrase matches no error.
func failsWith(err error, phrase string) bool {
	if err == nil || phrase == "" {
		return false
	}
	for _, alt := range strings.Split(phrase, " || ") {
		if strings.Contains(err.Error(), alt) {
			return true
		}
	}
	return false
}

// idPartitionNotFilled is iceberg-go's scan error for tables whose identity
// partition column is not stored in the data files (iceberg-go does not
// fill it from the partition tuple).
const idPartitionNotFilled = "required field is missing and has no default value"

// conformanceExpectations pins every fixture table's outcome. A table
// imports with sizesWaived exactly when its outcome is
// outcomeSizeMismatch.
var conformanceExpectations = map[string]conformanceExpectation{
	"add_columns_with_defaults/default.db/add_columns_with_defaults":                     {outcomeIcebergGoCannotScan, defaultsUnreadable},
	"add_columns_with_defaults_in_struct/default.db/add_columns_with_defaults_in_struct": {outcomeIcebergGoCannotScan, defaultsUnreadable},
	"bad_data":        {outcome: outcomeNotImported},
	"benchmark":       {outcome: outcomeNotImported},
	"big_query_error": {outcomeIcebergGoCannotScan, "reader string vs writer null"},
	"case_sensitive_names/default.db/case_sensitive_names":                      {outcome: outcomeAgrees},
	"column_mapping/warehouse/default.db/my_table":                              {outcome: outcomeNotImported},
	"custom_write_paths":                                                        {outcome: outcomeAgrees},
	"equality_delete_extra_column/warehouse/ns/t":                               {outcome: outcomeNotImported},
	"equality_deletes/warehouse/mydb/mytable":                                   {outcome: outcomeNotImported},
	"equality_deletes/warehouse/mydb/mytable_partitioned":                       {outcome: outcomeAgrees},
	"generated_bounds":                                                          {outcome: outcomeNotImported},
	"hive_partitioned_table":                                                    {outcome: outcomeSizeMismatch},
	"iceberg/lineitem_iceberg":                                                  {outcome: outcomeAgrees},
	"iceberg/lineitem_iceberg_gz":                                               {outcome: outcomeAgrees},
	"iceberg/lineitem_iceberg_gz_no_hint":                                       {outcome: outcomeAgrees},
	"iceberg/lineitem_iceberg_no_hint":                                          {outcome: outcomeAgrees},
	"iceberg_v1_deprecated/default/legacy_v1":                                   {outcome: outcomeAgrees},
	"iceberg_v1_repro/repro/merch_v1":                                           {outcome: outcomeAgrees},
	"legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector": {outcomeBareDeletionVector, "puffin: invalid header magic"},
	"map_stats/default.db/map_stats":                                            {outcome: outcomeAgrees},
	"name_mapping/warehouse_1/mydb/t1":                                          {outcome: outcomeSizeMismatch},
	"null_stats/default/test_nulls":                                             {outcome: outcomeAgrees},
	"partition_bigint":                                                          {outcome: outcomeSizeMismatch},
	"partition_binary":                                                          {outcome: outcomeSizeMismatch},
	"partition_bool":                                                            {outcome: outcomeSizeMismatch},
	"partition_decimal_bigint":                                                  {outcome: outcomeSizeMismatch},
	"partition_decimal_integer":                                                 {outcome: outcomeSizeMismatch},
	"partition_decimal_smallint":                                                {outcome: outcomeSizeMismatch},
	"partition_double":                                                          {outcome: outcomeSizeMismatch},
	"partition_fixed_length_binary/default.db/partition_fixed_length_binary":    {outcomeSizeMismatch, idPartitionNotFilled},
	"partition_float":                                                           {outcome: outcomeSizeMismatch},
	"partition_integer":                                                         {outcome: outcomeSizeMismatch},
	"partition_time/default.db/partition_time":                                  {outcomeSizeMismatch, idPartitionNotFilled},
	"partition_timestamp/default.db/partition_timestamp":                        {outcomeSizeMismatch, idPartitionNotFilled},
	"partition_timestamptz/default.db/partition_timestamptz":                    {outcomeSizeMismatch, idPartitionNotFilled},
	"timestamptz_ns":                                                            {outcome: outcomeNotImported},
	"uuid":                                                                      {outcome: outcomeAgrees},
}

// pushdownModes are the two ways the connector decodes planned data; both
// push down even against the cost model's advice and never fall back.
var pushdownModes = []struct {
	name string
	opts connector.Options
}{
	{"page-aware", connector.Options{Mode: connector.PageAware, Force: true, NoFallback: true}},
	{"row-group", connector.Options{Mode: connector.RowGroup, Force: true, NoFallback: true}},
}

// conformanceReaders are the connectors of one cluster: one per pushdown
// mode, and one that falls back to a plain read when the catalog refuses.
type conformanceReaders struct {
	c        *harness.Cluster
	modes    []*connector.Connector
	fallback *connector.Connector
}

// modeConnector is a connector of c in pushdown mode m.
func modeConnector(t *testing.T, c *harness.Cluster, m int) *connector.Connector {
	t.Helper()
	o := pushdownModes[m].opts
	o.Endpoints = c.Endpoints()
	conn, err := connector.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// importedFixtureDir imports fixture table rel as name and returns its
// local folder.
func importedFixtureDir(t *testing.T, c *harness.Cluster, rel, name string) string {
	t.Helper()
	root := harness.RequireShared(t, "testdata/iceberg-tables")
	if _, stderr, err := harness.RunFixtureImport(t, c, rel, name); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	return filepath.Join(root, rel)
}

func newConformanceReaders(t *testing.T, c *harness.Cluster) *conformanceReaders {
	t.Helper()
	ctx := context.Background()
	r := &conformanceReaders{c: c}
	for _, m := range pushdownModes {
		o := m.opts
		o.Endpoints = c.Endpoints()
		conn, err := connector.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		r.modes = append(r.modes, conn)
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: c.Endpoints(), Mode: connector.PageAware, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	r.fallback = conn
	return r
}

// conformanceQuery is one read of a snapshot: SQL for the connector, the
// same predicate for iceberg-go's scan.
type conformanceQuery struct {
	where string
}

func (q conformanceQuery) String() string {
	if q.where == "" {
		return "all rows"
	}
	return "WHERE " + q.where
}

// tableReport is one line of the conformance report.
type tableReport struct {
	rel, table      string
	outcome         string
	snapshots       int
	reads, compared int // pushdown reads checked, rows compared (summed over reads)
	notes           []string
}

func (r *tableReport) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !slices.Contains(r.notes, n) {
		r.notes = append(r.notes, n)
	}
}

// referenceScan is iceberg-go's scan of a snapshot through the REST
// catalog, all columns, with identity partition values in files that do
// not store those columns (referenceWithPartitionValues).
func referenceScan(ctx context.Context, tbl *table.Table, snapshot int64, where string) (arrow.Table, error) {
	filter, err := sqlpred.Parse(where)
	if err != nil {
		return nil, err
	}
	return referenceWithPartitionValues(ctx, tbl, snapshot, filter)
}

// snapshotSchema is the schema a snapshot was written with.
func snapshotSchema(tbl *table.Table, s table.Snapshot) *iceberg.Schema {
	if s.SchemaID != nil {
		if sc, ok := tbl.Schemas()[*s.SchemaID]; ok {
			return sc
		}
	}
	return tbl.Schema()
}

// quoted is a SQL identifier in double quotes.
func quoted(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// predicatesFor picks predicates the schema allows: a range on the first
// integer (else floating-point) column, split at the median of its values
// in the snapshot (all rows), and IS NULL on the first optional primitive
// column.
func predicatesFor(sc *iceberg.Schema, all arrow.Table) []conformanceQuery {
	var out []conformanceQuery
	pick := func(want func(iceberg.Type) bool) (iceberg.NestedField, bool) {
		for _, f := range sc.Fields() {
			if want(f.Type) {
				return f, true
			}
		}
		return iceberg.NestedField{}, false
	}
	isInt := func(t iceberg.Type) bool {
		return t.Equals(iceberg.PrimitiveTypes.Int32) || t.Equals(iceberg.PrimitiveTypes.Int64)
	}
	isFloat := func(t iceberg.Type) bool {
		return t.Equals(iceberg.PrimitiveTypes.Float32) || t.Equals(iceberg.PrimitiveTypes.Float64)
	}
	f, ok := pick(isInt)
	if !ok {
		f, ok = pick(isFloat)
	}
	if ok {
		out = append(out, conformanceQuery{fmt.Sprintf("%s >= %s", quoted(f.Name), medianLiteral(all, f.Name))})
	}
	if f, ok := pick(func(t iceberg.Type) bool {
		_, prim := t.(iceberg.PrimitiveType)
		return prim
	}); ok {
		for _, g := range sc.Fields() {
			if _, prim := g.Type.(iceberg.PrimitiveType); prim && !g.Required {
				f = g
				out = append(out, conformanceQuery{quoted(f.Name) + " IS NULL"})
				break
			}
		}
	}
	return out
}

// medianLiteral is the median non-null value of a numeric column as a SQL
// literal ("0" when there is none).
func medianLiteral(all arrow.Table, name string) string {
	idx := all.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return "0"
	}
	var ints []int64
	var floats []float64
	for _, chunk := range all.Column(idx[0]).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			if chunk.IsNull(i) {
				continue
			}
			switch a := chunk.(type) {
			case *array.Int32:
				ints = append(ints, int64(a.Value(i)))
			case *array.Int64:
				ints = append(ints, a.Value(i))
			case *array.Float32:
				floats = append(floats, float64(a.Value(i)))
			case *array.Float64:
				floats = append(floats, a.Value(i))
			}
		}
	}
	switch {
	case len(ints) > 0:
		slices.Sort(ints)
		return strconv.FormatInt(ints[len(ints)/2], 10)
	case len(floats) > 0:
		slices.Sort(floats)
		return strconv.FormatFloat(floats[len(floats)/2], 'g', -1, 64)
	}
	return "0"
}

// readPushdown reads a query through one connector and renders its rows
// like the reference.
func readPushdown(ctx context.Context, conn *connector.Connector, name string, snapshot int64, q conformanceQuery, ref *arrow.Schema) (harness.RenderedRows, connector.Stats, error) {
	res, err := conn.Query(ctx, connector.Query{Table: name, Snapshot: snapshot, Where: q.where})
	if err != nil {
		return harness.RenderedRows{}, connector.Stats{}, err
	}
	defer res.Release()
	rows, err := harness.RenderLike(ctx, ref, res.Schema, res.Records)
	return rows, res.Stats, err
}

// sizeNote is an import note about a file whose size differs from its
// manifest entry.
var sizeNote = regexp.MustCompile(`file "([^"]+)" is (\d+) bytes but its manifest entry says (\d+)`)

// mismatchedFile is a file whose size differs from its manifest entry.
type mismatchedFile struct {
	base             string
	actual, declared string
}

func mismatchedFiles(importStderr string) []mismatchedFile {
	var out []mismatchedFile
	for _, m := range sizeNote.FindAllStringSubmatch(importStderr, -1) {
		out = append(out, mismatchedFile{base: filepath.Base(m[1]), actual: m[2], declared: m[3]})
	}
	return out
}

// namesAMismatch reports whether msg names one of the files with both its
// sizes.
func namesAMismatch(msg string, files []mismatchedFile) bool {
	for _, f := range files {
		if strings.Contains(msg, f.base) && strings.Contains(msg, f.actual) && strings.Contains(msg, f.declared) {
			return true
		}
	}
	return false
}

// importedFixture is a fixture table loaded into a cluster.
type importedFixture struct {
	rel, name string
	stderr    string
}

// importFixtures imports each folder into c, one after the other, with
// -allow-size-mismatch where the expectation says so; a refusal must be
// what the import test pins.
func importFixtures(t *testing.T, c *harness.Cluster, ns string, rels []string, reports map[string]*tableReport) []importedFixture {
	t.Helper()
	var out []importedFixture
	for i, rel := range rels {
		exp := conformanceExpectations[rel]
		name := fmt.Sprintf("%s.t%02d_%s", ns, i, regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(filepath.Base(rel)), "_"))
		var flags []string
		if exp.outcome == outcomeSizeMismatch {
			flags = append(flags, sizesWaived)
		}
		_, errOut, err := harness.RunFixtureImport(t, c, rel, name, flags...)
		rep := reports[rel]
		if rep != nil {
			rep.table = name
		}
		switch {
		case exp.outcome == outcomeNotImported && err == nil:
			t.Errorf("%s: expected the import to refuse it (%q), but it imported", rel, fixtureOutcomes[rel])
		case exp.outcome == outcomeNotImported:
			if want := fixtureOutcomes[rel]; want == "" || !strings.Contains(errOut, want) {
				t.Errorf("%s: the import refused it, but not for %q:\n%s", rel, want, errOut)
			}
			if rep != nil {
				lines := strings.Split(strings.TrimSpace(errOut), "\n")
				rep.outcome = string(outcomeNotImported) + ": " + strings.TrimSpace(lines[len(lines)-1])
			}
		case err != nil:
			t.Errorf("%s: import %s: %v\n%s", rel, strings.Join(flags, " "), err, errOut)
			if rep != nil {
				rep.outcome = "IMPORT FAILED"
			}
		default:
			out = append(out, importedFixture{rel: rel, name: name, stderr: errOut})
		}
	}
	return out
}

// Every table under ../shared/testdata/iceberg-tables loads into a cluster,
// and for each of its snapshots the rows visible through pushdown (plan,
// read only the planned ranges, apply the delete masks), page-aware and
// row-group, all columns, with and without predicates, equal iceberg-go's
// own scan of that snapshot row for row; where pushdown cannot serve a
// table the reason is the expected one.
func TestConformanceEveryFixtureTableReadsThroughPushdownAsIcebergGoScansItAtEverySnapshot(t *testing.T) {
	t.Parallel() // reads tables of its own on the shared cluster: runs beside another test (CI time)
	root := harness.RequireShared(t, "testdata/iceberg-tables")
	start := time.Now()
	c := sharedCluster(t)
	ctx := context.Background()
	rels := fixtureTables(t, root)
	reports := map[string]*tableReport{}
	for _, rel := range rels {
		if _, ok := conformanceExpectations[rel]; !ok {
			t.Errorf("%s: no expected conformance outcome recorded", rel)
			continue
		}
		reports[rel] = &tableReport{rel: rel}
	}
	for rel := range conformanceExpectations {
		if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
			t.Errorf("%s: an expected outcome names a folder that is gone", rel)
		}
	}
	var known []string
	for _, rel := range rels {
		if reports[rel] != nil {
			known = append(known, rel)
		}
	}
	imported := importFixtures(t, c, "conformance", known, reports)
	importTime := time.Since(start)
	readers := newConformanceReaders(t, c)
	cat := c.Iceberg(t)
	for _, f := range imported {
		rep := reports[f.rel]
		exp := conformanceExpectations[f.rel]
		t.Run(f.rel, func(t *testing.T) {
			tbl, err := cat.LoadTable(ctx, strings.Split(f.name, "."))
			if err != nil {
				t.Fatalf("load %s through the REST catalog: %v", f.name, err)
			}
			checkFixtureTable(t, readers, f, tbl, exp, rep)
		})
	}
	var lines []string
	totalReads, totalRows := 0, 0
	for _, rel := range rels {
		r := reports[rel]
		if r == nil {
			continue
		}
		totalReads += r.reads
		totalRows += r.compared
		line := fmt.Sprintf("%-78s %-55s snapshots %d, pushdown reads %3d, rows compared %7d", rel, r.outcome, r.snapshots, r.reads, r.compared)
		for _, n := range r.notes {
			line += "\n      " + n
		}
		lines = append(lines, line)
	}
	t.Logf("conformance report (%d tables, %d imported in %s; %d pushdown reads, %d rows compared; %s in all):\n%s",
		len(rels), len(imported), importTime.Round(time.Millisecond), totalReads, totalRows, time.Since(start).Round(time.Millisecond), strings.Join(lines, "\n"))
}

// checkFixtureTable compares every snapshot of one imported table.
func checkFixtureTable(t *testing.T, r *conformanceReaders, f importedFixture, tbl *table.Table, exp conformanceExpectation, rep *tableReport) {
	ctx := context.Background()
	snaps := tbl.Metadata().Snapshots()
	rep.outcome = string(exp.outcome)
	mismatched := mismatchedFiles(f.stderr)
	if exp.outcome == outcomeSizeMismatch && len(mismatched) == 0 {
		t.Errorf("imported with %s, but the import noted no file whose size differs from its manifest:\n%s", sizesWaived, f.stderr)
	}
	if exp.outcome != outcomeSizeMismatch && len(mismatched) > 0 {
		t.Errorf("the import noted files whose size differs from their manifest: %v", mismatched)
	}
	icebergGoFailed, sizeRefusals := 0, 0
	for _, s := range snaps {
		rep.snapshots++
		all, err := referenceScan(ctx, tbl, s.SnapshotID, "")
		if err != nil {
			icebergGoFailed++
			rep.note("snapshot %d: iceberg-go cannot scan it: %v", s.SnapshotID, err)
			if !failsWith(err, exp.phrase) {
				t.Errorf("snapshot %d: iceberg-go's scan fails (%v), want it to scan or to fail with %q", s.SnapshotID, err, exp.phrase)
			}
			if exp.outcome == outcomeSizeMismatch {
				// No reference rows, but Plan must still refuse.
				sizeRefusals++
				checkPlanRefusesSizes(t, r, f.name, s.SnapshotID, conformanceQuery{}, mismatched, rep)
				continue
			}
			recordPushdownWithoutReference(t, r, f.name, s.SnapshotID, rep)
			continue
		}
		queries := append([]conformanceQuery{{}}, predicatesFor(snapshotSchema(tbl, s), all)...)
		all.Release()
		for _, q := range queries {
			ref, err := referenceScan(ctx, tbl, s.SnapshotID, q.where)
			if err != nil {
				t.Errorf("snapshot %d %s: iceberg-go: %v", s.SnapshotID, q, err)
				continue
			}
			want, err := harness.RenderLike(ctx, ref.Schema(), ref.Schema(), harness.TableRecords(ref))
			refSchema := ref.Schema()
			ref.Release()
			if err != nil {
				t.Fatal(err)
			}
			for i, conn := range r.modes {
				got, _, err := readPushdown(ctx, conn, f.name, s.SnapshotID, q, refSchema)
				if err != nil && exp.outcome == outcomeSizeMismatch {
					sizeRefusals++
					checkSizeRefusal(t, r, f.name, s.SnapshotID, q, err, mismatched, want, refSchema, rep)
					break
				}
				if err != nil {
					t.Errorf("snapshot %d %s, %s: pushdown read failed: %v", s.SnapshotID, q, pushdownModes[i].name, err)
					continue
				}
				rep.reads++
				for _, c := range got.Casts {
					rep.note("%s: cast from the file's Arrow type to iceberg-go's: %s", pushdownModes[i].name, c)
				}
				if !slices.Equal(got.Rows, want.Rows) {
					t.Errorf("snapshot %d %s, %s: pushdown returned %d rows, iceberg-go %d\n%s",
						s.SnapshotID, q, pushdownModes[i].name, len(got.Rows), len(want.Rows), firstDiff(got.Rows, want.Rows))
					continue
				}
				rep.compared += len(want.Rows)
			}
		}
	}
	switch exp.outcome {
	case outcomeSizeMismatch:
		if sizeRefusals == 0 {
			t.Errorf("no pushdown read was refused although files differ in size from their manifests (%v)", mismatched)
		}
	case outcomeIcebergGoCannotScan, outcomeBareDeletionVector:
		if icebergGoFailed == 0 {
			t.Errorf("iceberg-go scans every snapshot; the expectation says it fails with %q", exp.phrase)
		}
	case outcomeAgrees:
		if icebergGoFailed > 0 {
			t.Errorf("iceberg-go cannot scan %d snapshots", icebergGoFailed)
		}
	}
}

// checkSizeRefusal checks a refused pushdown read of a table whose files
// differ in size from their manifests: Plan itself fails
// FAILED_PRECONDITION naming a file with both sizes, and the connector
// with fallback allowed returns iceberg-go's rows.
func checkSizeRefusal(t *testing.T, r *conformanceReaders, name string, snapshot int64, q conformanceQuery, readErr error,
	files []mismatchedFile, want harness.RenderedRows, ref *arrow.Schema, rep *tableReport) {
	t.Helper()
	ctx := context.Background()
	if !namesAMismatch(readErr.Error(), files) {
		t.Errorf("snapshot %d %s: the pushdown read failed without naming a mismatched file and its sizes: %v", snapshot, q, readErr)
	}
	checkPlanRefusesSizes(t, r, name, snapshot, q, files, rep)
	got, st, err := readPushdown(ctx, r.fallback, name, snapshot, q, ref)
	if err != nil {
		t.Errorf("snapshot %d %s: the connector with fallback failed: %v", snapshot, q, err)
		return
	}
	if st.Pushdown || !strings.Contains(st.FallbackReason, "refused to plan") {
		t.Errorf("snapshot %d %s: the connector with fallback read with pushdown %v (fallback reason %q)", snapshot, q, st.Pushdown, st.FallbackReason)
	}
	rep.reads++
	if !slices.Equal(got.Rows, want.Rows) {
		t.Errorf("snapshot %d %s, fallback: the connector returned %d rows, iceberg-go %d\n%s", snapshot, q, len(got.Rows), len(want.Rows), firstDiff(got.Rows, want.Rows))
		return
	}
	rep.compared += len(want.Rows)
}

// checkPlanRefusesSizes checks that Plan fails FAILED_PRECONDITION naming
// a file whose size differs from its manifest entry, with both sizes.
func checkPlanRefusesSizes(t *testing.T, r *conformanceReaders, name string, snapshot int64, q conformanceQuery, files []mismatchedFile, rep *tableReport) {
	t.Helper()
	ctx := context.Background()
	req := &pushdown_pb.ParquetPushdownRequest{Table: name, SnapshotId: &snapshot}
	if q.where != "" {
		tbl, err := r.c.Iceberg(t).LoadTable(ctx, strings.Split(name, "."))
		if err != nil {
			t.Fatal(err)
		}
		if req.Predicate, err = sqlpred.Encode(q.where, tbl.Schema()); err != nil {
			t.Fatal(err)
		}
		req.PredicateKind = pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT
	}
	_, err := r.c.Catalog(t).Plan(ctx, req)
	if status.Code(err) != codes.FailedPrecondition || !namesAMismatch(status.Convert(err).Message(), files) {
		t.Errorf("snapshot %d %s: Plan: got %v, want FAILED_PRECONDITION naming a file and both its sizes (%v)", snapshot, q, err, files)
	} else {
		rep.note("Plan: %s", status.Convert(err).Message())
	}
}

// recordPushdownWithoutReference notes what pushdown reads at a snapshot
// iceberg-go cannot scan (nothing to compare with).
func recordPushdownWithoutReference(t *testing.T, r *conformanceReaders, name string, snapshot int64, rep *tableReport) {
	t.Helper()
	for i, conn := range r.modes {
		res, err := conn.Query(context.Background(), connector.Query{Table: name, Snapshot: snapshot})
		if err != nil {
			rep.note("snapshot %d, %s: pushdown: %v", snapshot, pushdownModes[i].name, err)
			continue
		}
		rep.note("snapshot %d, %s: pushdown reads %d rows (no reference to compare with)", snapshot, pushdownModes[i].name, res.NumRows())
		res.Release()
	}
}

const legacyBareDV = "legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector"

// legacyExpectedRows computes, without lakeweed's code, what the legacy
// table's current snapshot holds: its one data file decoded with pqarrow
// minus the positions its standalone deletion vector holds (decoded with
// roaring64's ReadFrom).
func legacyExpectedRows(t *testing.T, dir string) (rows harness.RenderedRows, schema *arrow.Schema, deleted []uint64, framed bool) {
	t.Helper()
	ctx := context.Background()
	data, err := harness.ReadParquetFile(ctx, filepath.Join(dir, "data", "00000-0-cac6cfea-266f-44f8-9a3a-70dd8fb68014.parquet"))
	if err != nil {
		t.Fatalf("decode the data file: %v", err)
	}
	defer data.Release()
	blob, err := os.ReadFile(filepath.Join(dir, "data", "legacy-bare-deletion-vector.puffin"))
	if err != nil {
		t.Fatal(err)
	}
	bm, framed, err := harness.StandaloneDeletionVector(blob)
	if err != nil {
		t.Fatalf("decode the deletion vector: %v", err)
	}
	kept, err := harness.WithoutPositions(ctx, data, bm)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Release()
	rows, err = harness.RenderLike(ctx, kept.Schema(), kept.Schema(), harness.TableRecords(kept))
	if err != nil {
		t.Fatal(err)
	}
	if kept.NumRows() != data.NumRows()-int64(bm.GetCardinality()) || bm.GetCardinality() == 0 {
		t.Fatalf("the deletion vector holds %v; %d of %d rows remain", bm.ToArray(), kept.NumRows(), data.NumRows())
	}
	return rows, kept.Schema(), bm.ToArray(), framed
}

// legacy_bare_deletion_vector's current snapshot deletes with a deletion
// vector an older writer stored as a file of its own, not inside a Puffin
// file. A default cluster refuses to plan that snapshot, saying why and
// naming -pushdown.allowBareDeletionVectors; a cluster started with that
// flag reads the data file's rows minus the positions the vector holds.
// (iceberg-go cannot read the vector at all: its Puffin reader wants the
// header magic.)
func TestConformanceADeletionVectorOutsideAPuffinFileIsReadOnlyWhereBareDeletionVectorsAreAllowed(t *testing.T) {
	dir := harness.FixtureTableDir(t, legacyBareDV)
	ctx := context.Background()
	want, wantSchema, deleted, framed := legacyExpectedRows(t, dir)
	framing := "a bare roaring64 bitmap without the deletion-vector-v1 framing"
	if framed {
		framing = "a blob with the deletion-vector-v1 framing (length, magic, CRC) but no Puffin container around it"
	}
	t.Logf("the deletion vector file is %s; it deletes positions %v", framing, deleted)

	c := sharedCluster(t)
	const name = "conformance_dv.legacy_default"
	harness.ImportFixtureTable(t, c, legacyBareDV, name)
	tbl := loadTable(t, c, name)
	current := tbl.CurrentSnapshot().SnapshotID
	_, scanErr := tbl.Scan(table.WithSnapshotID(current)).ToArrowTable(ctx)
	if !failsWith(scanErr, conformanceExpectations[legacyBareDV].phrase) {
		t.Errorf("iceberg-go's scan of the current snapshot: got %v, want a failure with %q", scanErr, conformanceExpectations[legacyBareDV].phrase)
	}
	t.Logf("iceberg-go: %v", scanErr)

	_, err := c.Catalog(t).Plan(ctx, &pushdown_pb.ParquetPushdownRequest{Table: name, SnapshotId: &current})
	checkBareRefusal(t, "Plan", err)
	r := newConformanceReaders(t, c)
	for i, conn := range r.modes {
		_, err := conn.Query(ctx, connector.Query{Table: name, Snapshot: current})
		checkBareRefusal(t, "the connector ("+pushdownModes[i].name+", no fallback)", err)
	}

	allowing := harness.StartMini(t, harness.MiniOptions{ExtraArgs: []string{"-pushdown.allowBareDeletionVectors"}})
	const allowedName = "conformance_dv.legacy_allowed"
	harness.ImportFixtureTable(t, allowing, legacyBareDV, allowedName)
	allowedTbl := loadTable(t, allowing, allowedName)
	ar := newConformanceReaders(t, allowing)
	for i, conn := range ar.modes {
		got, st, err := readPushdown(ctx, conn, allowedName, allowedTbl.CurrentSnapshot().SnapshotID, conformanceQuery{}, wantSchema)
		if err != nil {
			t.Errorf("%s, bare deletion vectors allowed: %v", pushdownModes[i].name, err)
			continue
		}
		if !st.Pushdown {
			t.Errorf("%s: read without pushdown (%s)", pushdownModes[i].name, st.FallbackReason)
		}
		if !slices.Equal(got.Rows, want.Rows) {
			t.Errorf("%s, bare deletion vectors allowed: pushdown returned %d rows, the data file minus positions %v has %d\n%s",
				pushdownModes[i].name, len(got.Rows), deleted, len(want.Rows), firstDiff(got.Rows, want.Rows))
		}
	}
	t.Logf("with -pushdown.allowBareDeletionVectors pushdown reads %d rows: %v", len(want.Rows), want.Rows)
}

// checkBareRefusal checks that a read of the legacy snapshot failed
// FAILED_PRECONDITION naming the deletion vector file, saying it lacks the
// Puffin framing, and naming the flag that accepts it.
func checkBareRefusal(t *testing.T, who string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s succeeded on a snapshot whose deletion vector is not in a Puffin file", who)
		return
	}
	msg := status.Convert(err).Message()
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("%s: code %s, want FailedPrecondition: %s", who, status.Code(err), msg)
	}
	for _, phrase := range []string{"legacy-bare-deletion-vector.puffin", "without the Puffin framing", "-pushdown.allowBareDeletionVectors"} {
		if !strings.Contains(msg, phrase) {
			t.Errorf("%s: the error does not say %q: %s", who, phrase, msg)
		}
	}
}

// add_columns_with_defaults (written by PyIceberg) adds fourteen columns
// with initial-defaults after its first file was written. Iceberg reads a
// column a file lacks as its initial-default, so the first file's rows
// carry the defaults, match predicates on them and never read NULL.
// (iceberg-go cannot scan the table: it does not parse string defaults.)
// The expected rows come from decoding the two data files with pqarrow
// and the defaults as the table metadata spells them.
func TestConformanceColumnsAddedWithInitialDefaultsReadTheirDefaultsInOlderFiles(t *testing.T) {
	const rel = "add_columns_with_defaults/default.db/add_columns_with_defaults"
	c := sharedCluster(t)
	ctx := context.Background()
	dir := importedFixtureDir(t, c, rel, "conformance_defaults.t")
	oldFile, err := harness.ReadParquetFile(ctx, filepath.Join(dir, "data", "00000-0-0bb8c58e-4fbc-483f-af6d-0e2f896179a2.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer oldFile.Release()
	newFile, err := harness.ReadParquetFile(ctx, filepath.Join(dir, "data", "00000-0-f1823874-113e-405c-b412-f75145620823.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	defer newFile.Release()
	if oldFile.NumCols() != 1 || newFile.NumCols() != 15 {
		t.Fatalf("the fixture's files have %d and %d columns, want 1 and 15", oldFile.NumCols(), newFile.NumCols())
	}
	column := func(tbl arrow.Table, name string) []string {
		for i := 0; i < int(tbl.NumCols()); i++ {
			if tbl.Schema().Field(i).Name == name {
				var out []string
				for _, ch := range tbl.Column(i).Data().Chunks() {
					for r := 0; r < ch.Len(); r++ {
						if ch.IsNull(r) {
							out = append(out, "NULL")
						} else {
							out = append(out, ch.ValueStr(r))
						}
					}
				}
				return out
			}
		}
		t.Fatalf("no column %s", name)
		return nil
	}
	// the defaults as the metadata states them, rendered as Arrow renders them
	defaults := map[string]string{"col_integer": "342342", "col_string": "HELLO", "col_boolean": "true",
		"col_date": "2003-10-20", "col_long": "-9223372036854775808"}
	cols := []string{"col1", "col_integer", "col_string", "col_boolean", "col_date", "col_long"}
	expect := func(where func(row map[string]string) bool) []string {
		var out []string
		add := func(row map[string]string) {
			if !where(row) {
				return
			}
			var parts []string
			for _, c := range cols {
				parts = append(parts, c+"="+row[c])
			}
			out = append(out, strings.Join(parts, "|"))
		}
		for _, v := range column(oldFile, "col1") {
			row := map[string]string{"col1": v}
			for k, d := range defaults {
				row[k] = d
			}
			add(row)
		}
		vals := map[string][]string{}
		for _, c := range cols {
			vals[c] = column(newFile, c)
		}
		for r := range vals["col1"] {
			row := map[string]string{}
			for _, c := range cols {
				row[c] = vals[c][r]
			}
			add(row)
		}
		slices.Sort(out)
		return out
	}
	for _, q := range []struct {
		where string
		keep  func(map[string]string) bool
	}{
		{"", func(map[string]string) bool { return true }},
		{"col_integer = 342342", func(r map[string]string) bool { return r["col_integer"] == "342342" }},
		{"col_integer IS NULL", func(r map[string]string) bool { return r["col_integer"] == "NULL" }},
		{"col_string = 'HELLO' AND col_boolean = true", func(r map[string]string) bool { return r["col_string"] == "HELLO" && r["col_boolean"] == "true" }},
		{"col_date < '2003-10-21'", func(r map[string]string) bool { return r["col_date"] != "NULL" && r["col_date"] < "2003-10-21" }},
	} {
		want := expect(q.keep)
		for mi, m := range pushdownModes {
			conn := modeConnector(t, c, mi)
			res, err := conn.Query(ctx, connector.Query{Table: "conformance_defaults.t", Where: q.where, Select: cols})
			if err != nil {
				t.Fatalf("%s WHERE %s: %v", m.name, q.where, err)
			}
			var got []string
			for _, rec := range res.Records {
				for r := 0; r < int(rec.NumRows()); r++ {
					var parts []string
					for i, c := range cols {
						v := "NULL"
						if !rec.Column(i).IsNull(r) {
							v = rec.Column(i).ValueStr(r)
						}
						parts = append(parts, c+"="+v)
					}
					got = append(got, strings.Join(parts, "|"))
				}
			}
			res.Release()
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s WHERE %q: got %d rows, want %d\n%s", m.name, q.where, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

// add_columns_with_defaults_in_struct (written by PyIceberg) adds fourteen
// fields with initial-defaults inside struct column a after its first file
// was written. Rows of that file read the defaults inside a, match
// predicates on them, and the struct itself is never NULL because a child
// is missing. The expected rows come from decoding the two data files with
// pqarrow and the defaults as the table metadata spells them. (iceberg-go
// cannot scan the table.)
func TestConformanceStructFieldsAddedWithInitialDefaultsReadTheirDefaultsInOlderFiles(t *testing.T) {
	const rel = "add_columns_with_defaults_in_struct/default.db/add_columns_with_defaults_in_struct"
	c := sharedCluster(t)
	ctx := context.Background()
	dir := importedFixtureDir(t, c, rel, "conformance_struct_defaults.t")
	entries, err := os.ReadDir(filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{"col1", "col_integer", "col_string", "col_boolean", "col_date"}
	defaults := map[string]string{"col_integer": "342342", "col_string": "HELLO", "col_boolean": "true", "col_date": "2003-10-20"}
	render := func(st *array.Struct, r int) string {
		if st.IsNull(r) {
			return "a=NULL"
		}
		typ := st.DataType().(*arrow.StructType)
		var parts []string
		for _, name := range fields {
			idx, ok := typ.FieldIdx(name)
			v := "ABSENT"
			if ok {
				v = "NULL"
				if ch := st.Field(idx); !ch.IsNull(r) {
					v = ch.ValueStr(r)
				}
			} else if d, has := defaults[name]; has {
				v = d // the file lacks the field: Iceberg reads its initial-default
			}
			parts = append(parts, name+"="+v)
		}
		return strings.Join(parts, "|")
	}
	var all []string
	oldRows := 0
	for _, e := range entries {
		tbl, err := harness.ReadParquetFile(ctx, filepath.Join(dir, "data", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range tbl.Column(0).Data().Chunks() {
			st := ch.(*array.Struct)
			if st.DataType().(*arrow.StructType).NumFields() == 1 {
				oldRows += st.Len()
			}
			for r := 0; r < st.Len(); r++ {
				all = append(all, render(st, r))
			}
		}
		tbl.Release()
	}
	if oldRows == 0 {
		t.Fatal("no data file of the fixture holds the struct before the fields were added")
	}
	for _, q := range []struct {
		where string
		keep  func(string) bool
	}{
		{"", func(string) bool { return true }},
		{"a.col_integer = 342342", func(r string) bool { return strings.Contains(r, "col_integer=342342|") }},
		{"a.col_integer IS NULL", func(r string) bool { return r == "a=NULL" || strings.Contains(r, "col_integer=NULL|") }},
		{"a.col_string = 'HELLO'", func(r string) bool { return strings.Contains(r, "col_string=HELLO|") }},
	} {
		var want []string
		for _, r := range all {
			if q.keep(r) {
				want = append(want, r)
			}
		}
		slices.Sort(want)
		for mi, m := range pushdownModes {
			conn := modeConnector(t, c, mi)
			res, err := conn.Query(ctx, connector.Query{Table: "conformance_struct_defaults.t", Where: q.where, Select: []string{"a"}})
			if err != nil {
				t.Errorf("%s WHERE %q: %v", m.name, q.where, err)
				continue
			}
			var got []string
			for _, rec := range res.Records {
				st := rec.Column(0).(*array.Struct)
				if n := st.DataType().(*arrow.StructType).NumFields(); n != 15 {
					t.Fatalf("%s: column a has %d fields, want the table's 15", m.name, n)
				}
				for r := 0; r < st.Len(); r++ {
					got = append(got, render(st, r))
				}
			}
			res.Release()
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s WHERE %q: got %d rows, want %d\n%s", m.name, q.where, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}
