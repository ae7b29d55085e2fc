package plan

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// sharedDir finds ../shared/testdata/<rel> above the module, or skips.
func sharedDir(t *testing.T, rel string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("skipping: no go.mod above the test")
		}
		dir = parent
	}
	p := filepath.Join(filepath.Dir(dir), "shared", "testdata", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is absent (../shared exists in CI and the development sandbox, not in a user's clone)", p)
	}
	return p
}

// icebergTypeOf maps a top-level Arrow column type to the Iceberg type a
// table over this file would declare; ok is false for types Iceberg has no
// primitive for.
func icebergTypeOf(dt arrow.DataType) (iceberg.Type, bool) {
	switch t := dt.(type) {
	case *arrow.DictionaryType:
		return icebergTypeOf(t.ValueType)
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return iceberg.PrimitiveTypes.Int32, true
	case *arrow.Int64Type, *arrow.Uint32Type:
		return iceberg.PrimitiveTypes.Int64, true
	case *arrow.Float16Type, *arrow.Float32Type:
		return iceberg.PrimitiveTypes.Float32, true
	case *arrow.Float64Type:
		return iceberg.PrimitiveTypes.Float64, true
	case *arrow.BooleanType:
		return iceberg.PrimitiveTypes.Bool, true
	case *arrow.StringType, *arrow.LargeStringType:
		return iceberg.PrimitiveTypes.String, true
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return iceberg.PrimitiveTypes.Binary, true
	case *arrow.FixedSizeBinaryType:
		return iceberg.FixedTypeOf(t.ByteWidth), true
	case *arrow.Date32Type:
		return iceberg.PrimitiveTypes.Date, true
	case *arrow.Time32Type, *arrow.Time64Type:
		return iceberg.PrimitiveTypes.Time, true
	case *arrow.TimestampType:
		if t.Unit == arrow.Nanosecond {
			if t.TimeZone != "" {
				return iceberg.PrimitiveTypes.TimestampTzNs, true
			}
			return iceberg.PrimitiveTypes.TimestampNs, true
		}
		if t.TimeZone != "" {
			return iceberg.PrimitiveTypes.TimestampTz, true
		}
		return iceberg.PrimitiveTypes.Timestamp, true
	case *arrow.Decimal128Type:
		return iceberg.DecimalTypeOf(int(t.Precision), int(t.Scale)), true
	}
	if dt.ID() == arrow.EXTENSION {
		if et, ok := dt.(arrow.ExtensionType); ok && et.ExtensionName() == "arrow.uuid" {
			return iceberg.PrimitiveTypes.UUID, true
		}
	}
	return nil, false
}

// corpusSchema derives an Iceberg schema (top-level primitive columns, fresh
// ids) and a name mapping for a file written without Iceberg.
func corpusSchema(data []byte) (s *iceberg.Schema, nm iceberg.NameMapping, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, nm, err = nil, nil, fmt.Errorf("arrow-go panicked: %v", r)
		}
	}()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Close()
	as, err := pqarrow.FromParquet(rdr.MetaData().Schema, &pqarrow.ArrowReadProperties{}, rdr.MetaData().KeyValueMetadata())
	if err != nil {
		return nil, nil, err
	}
	// Files that carry Parquet field ids are read by id, as Iceberg does;
	// others get fresh ids and a name mapping.
	ids := map[string]int{}
	root := rdr.MetaData().Schema.Root()
	for i := 0; i < root.NumFields(); i++ {
		if id := root.Field(i).FieldID(); id >= 0 {
			ids[root.Field(i).Name()] = int(id)
		}
	}
	var fields []iceberg.NestedField
	for i, f := range as.Fields() {
		id := 1000 + i
		if fid, ok := ids[f.Name]; ok {
			id = fid
		}
		if t, ok := icebergTypeOf(f.Type); ok {
			fields = append(fields, iceberg.NestedField{ID: id, Name: f.Name, Type: t})
			idc := id
			nm = append(nm, iceberg.MappedField{Names: []string{f.Name}, FieldID: &idc})
		}
	}
	return iceberg.NewSchema(0, fields...), nm, nil
}

// TestPlansNeverDropAMatchingRowOnParquetTestingFiles runs the differential
// check over every readable file of the Parquet project's test corpus
// (written by parquet-mr, Arrow C++, Impala, Spark, Rust...). Encrypted and
// malformed files must be refused or planned without a panic.
func TestPlansNeverDropAMatchingRowOnParquetTestingFiles(t *testing.T) {
	root := sharedDir(t, "parquet-testing")
	var paths []string
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (strings.HasSuffix(p, ".parquet") || strings.HasSuffix(p, ".parquet.encrypted")) {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	r := rand.New(rand.NewPCG(7, 7))
	var checked, refused, predicates int
	var matching, planned int64
	for _, p := range paths {
		name, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mem := memFiles{"s3://corpus/" + name: data}
		pl := &Planner{Cache: footer.NewCache("corpus", 64<<20, mem.open)}
		df := DataFile{Path: "s3://corpus/" + name, Size: int64(len(data))}
		if strings.Contains(name, "encrypt") {
			_, _, err := pl.Plan(context.Background(), Request{Table: Table{Schema: iceberg.NewSchema(0)}, Files: []DataFile{df}, Options: DefaultOptions()})
			if err == nil || !strings.Contains(err.Error(), "encrypt") {
				t.Errorf("%s: encrypted file planned or refused without saying why: %v", name, err)
			}
			refused++
			continue
		}
		if strings.Contains(name, "corrupt-checksum") {
			// Data pages were altered after their CRC was written; arrow-go
			// does not verify page CRCs, so a full decode is no ground truth.
			t.Logf("%s: skipped as oracle input: data pages fail their CRC", name)
			continue
		}
		schema, nm, err := corpusSchema(data)
		if err != nil {
			// Unreadable even for arrow-go: the planner must refuse cleanly.
			_, _, perr := pl.Plan(context.Background(), Request{Table: Table{Schema: iceberg.NewSchema(0)}, Files: []DataFile{df}, Options: DefaultOptions()})
			t.Logf("%s: not decodable (%v); planner: %v", name, err, perr)
			refused++
			continue
		}
		decoded, derr := oracle.DecodeFile(data, schema)
		if derr != nil {
			_, _, perr := pl.Plan(context.Background(), Request{Table: Table{Schema: schema, NameMapping: nm}, Files: []DataFile{df},
				Predicate: predicate.Const{Value: true}, Options: DefaultOptions()})
			t.Logf("%s: oracle cannot decode (%v); planner: %v", name, derr, perr)
			refused++
			continue
		}
		if len(schema.Fields()) == 0 || decoded.Rows == 0 {
			continue
		}
		checked++
		for i := 0; i < 60; i++ {
			raw := randomPredicate(r, schema, decoded, 2)
			e, err := predicate.Bind(raw, schema, predicate.DefaultLimits)
			if err != nil {
				t.Fatalf("%s: bind %s: %v", name, raw, err)
			}
			resp, plans, err := pl.Plan(context.Background(), Request{Table: Table{Schema: schema, NameMapping: nm}, Files: []DataFile{df}, Predicate: e, Options: DefaultOptions()})
			if err != nil {
				t.Fatalf("%s: plan %s: %v", name, e, err)
			}
			m, pn := checkPlan(t, name, e, decoded, plans[0], resp)
			checkPagesCoverRows(t, name, e, plans[0], resp)
			matching += m
			planned += pn
			predicates++
		}
	}
	if checked < 25 {
		t.Fatalf("only %d corpus files were checked", checked)
	}
	t.Logf("%d corpus files checked with %d predicates (%d refused or undecodable); %d matching rows, %d planned", checked, predicates, refused, matching, planned)
}
