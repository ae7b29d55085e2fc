package connector

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Iceberg's column projection (spec, "Column Projection"): a field id a
// data file does not store reads, in this order,
//
//	1. its identity-partition value from the manifest entry's partition
//	   struct (writers such as DuckDB and Hive migrations leave identity
//	   partition columns out of the data files)
//	2. the column the table's name mapping finds (files without field ids)
//	3. its initial-default (defaults.go)
//	4. NULL
//
//	manifest entry {spec id, partition {1000: "eu"}} ──identity(region)──▶ region = "eu"
//	  (read lazily, once per query, only when a file lacks such a field)
//
// Rule 1 applies to a file that does not store the field by Parquet field
// id, so it precedes the name mapping.

// identityFields maps, per partition spec id, the source field ids of
// identity partition fields to their partition field.
type identityFields map[int]map[int]iceberg.PartitionField

func identityFieldsOf(md table.Metadata) identityFields {
	out := identityFields{}
	for _, spec := range md.PartitionSpecs() {
		for _, pf := range spec.Fields() {
			if _, ok := pf.Transform.(iceberg.IdentityTransform); !ok {
				continue
			}
			if out[spec.ID()] == nil {
				out[spec.ID()] = map[int]iceberg.PartitionField{}
			}
			out[spec.ID()][pf.SourceID()] = pf
		}
	}
	return out
}

// any reports whether some spec partitions on one of ids by identity.
func (idf identityFields) any(ids []int) bool {
	for _, bySource := range idf {
		for _, id := range ids {
			if _, ok := bySource[id]; ok {
				return true
			}
		}
	}
	return false
}

// filePartition is a data file's partition as its manifest entry has it.
type filePartition struct {
	spec   int
	values map[int]any // partition field id → value (iceberg-go's Go types)
}

// partitionIndex is the manifest view of the query's snapshot, by data
// file path, read on first use.
type partitionIndex struct {
	once  sync.Once
	files map[string]filePartition
	err   error
}

func (p *prepared) partitionOf(ctx context.Context, path string) (filePartition, error) {
	ix := p.partitions
	ix.once.Do(func() {
		var opts []table.ScanOption
		if p.snapshot != 0 {
			opts = append(opts, table.WithSnapshotID(p.snapshot))
		} else if cur := p.tbl.CurrentSnapshot(); cur != nil {
			opts = append(opts, table.WithSnapshotID(cur.SnapshotID)) // the snapshot the query loaded
		}
		tasks, err := p.tbl.Scan(opts...).PlanFiles(ctx)
		if err != nil {
			ix.err = fmt.Errorf("%s: manifests (for identity partition values): %w", p.q.Table, err)
			return
		}
		ix.files = make(map[string]filePartition, len(tasks))
		for _, t := range tasks {
			ix.files[t.File.FilePath()] = filePartition{spec: int(t.File.SpecID()), values: t.File.Partition()}
		}
	})
	if ix.err != nil {
		return filePartition{}, ix.err
	}
	fp, ok := ix.files[path]
	if !ok {
		return filePartition{}, fmt.Errorf("%s is not a data file of %s at the planned snapshot", path, p.q.Table)
	}
	return fp, nil
}

// partitionConstants are the identity-partition values of the fields in
// ids a file does not store (stored: by Parquet field id), as literals of
// the fields' types; a NULL partition value is a NULL constant. A value
// that does not convert is an error naming the field.
func (p *prepared) partitionConstants(fp filePartition, ids []int, stored func(id int) bool) (map[int]fieldDefault, error) {
	bySource := p.identity[fp.spec]
	var out map[int]fieldDefault
	var decoded map[string]any
	for _, id := range ids {
		pf, ok := bySource[id]
		if !ok || stored(id) {
			continue
		}
		if _, dup := out[id]; dup {
			continue
		}
		if decoded == nil {
			var err error
			if decoded, err = p.partitionJSON(fp); err != nil {
				return nil, err
			}
		}
		raw, present := decoded[strconv.Itoa(pf.FieldID)]
		if !present {
			continue // not in the partition struct: the next rules apply
		}
		if out == nil {
			out = map[int]fieldDefault{}
		}
		if raw == nil {
			out[id] = fieldDefault{null: true}
			continue
		}
		f, _ := p.schema.FindFieldByID(id)
		lit, err := DefaultLiteral(f.Type, raw)
		if err != nil {
			return nil, fmt.Errorf("column %s: identity partition value %v: %w", f.Name, raw, err)
		}
		v, err := value.FromLiteral(f.Type, lit)
		if err != nil {
			return nil, fmt.Errorf("column %s: identity partition value %v: %w", f.Name, raw, err)
		}
		out[id] = fieldDefault{lit: lit, val: v}
	}
	return out, nil
}

// partitionJSON is the partition in Iceberg's single-value JSON form (the
// form initial-defaults have), keyed by partition field id.
func (p *prepared) partitionJSON(fp filePartition) (map[string]any, error) {
	md := p.tbl.Metadata()
	spec := md.PartitionSpecByID(fp.spec)
	if spec == nil {
		return nil, fmt.Errorf("partition spec %d is not a spec of %s", fp.spec, p.q.Table)
	}
	b, err := descriptor.EncodePartition(*spec, descriptor.SchemasSourceType(md.Schemas()), fp.values)
	if err != nil {
		return nil, fmt.Errorf("partition values under spec %d: %w", fp.spec, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// withConstants is defaults overlaid with a file's partition constants.
func withConstants(defaults, consts map[int]fieldDefault) map[int]fieldDefault {
	if len(consts) == 0 {
		return defaults
	}
	out := make(map[int]fieldDefault, len(defaults)+len(consts))
	for id, d := range defaults {
		out[id] = d
	}
	for id, d := range consts {
		out[id] = d
	}
	return out
}

// applyPartitionConstants sets fl's constants for the fields of ids the
// file does not store by field id but its identity partition holds.
func (c *Connector) applyPartitionConstants(ctx context.Context, p *prepared, fl *fileLayout, ids []int) error {
	fl.defaults = p.defaults
	stored := func(id int) bool { return !fl.columns.ByName && len(fl.columns.Leaves(id)) > 0 }
	var lacking []int
	for _, id := range ids {
		if !stored(id) {
			lacking = append(lacking, id)
		}
	}
	if !p.identity.any(lacking) {
		return nil
	}
	fp, err := p.partitionOf(ctx, fl.path)
	if err != nil {
		return err
	}
	consts, err := p.partitionConstants(fp, lacking, stored)
	if err != nil {
		return fmt.Errorf("%s: %w", fl.path, err)
	}
	fl.consts, fl.defaults = consts, withConstants(p.defaults, consts)
	return nil
}

// plainWithConstants is the plain read of a table partitioned by identity
// on a field the query needs. iceberg-go's scan reads such a field as NULL
// (or fails, when it is required) in files that do not store it, so each
// file task is read on its own: the fields the file lacks are left out of
// iceberg-go's projection and filled with the file's partition values,
// and the predicate is evaluated here, on the filled rows. iceberg-go
// still plans (partition and metrics pruning) and applies deletes.
func (c *Connector) plainWithConstants(ctx context.Context, p *prepared, tbl *table.Table, tasks []table.FileScanTask, reason string, t0 time.Time) (*Result, error) {
	ids := uniqueIDs(append(append([]int{}, p.selectIDs...), predicate.FieldIDs(p.expr)...))
	snapOpts := []table.ScanOption{table.WithCaseSensitive(true)}
	if p.snapshot != 0 {
		snapOpts = append(snapOpts, table.WithSnapshotID(p.snapshot))
	}
	f := newFiltered(p, reason)
	done, files := false, 0
	for _, task := range tasks {
		if done {
			break
		}
		files++
		consts := map[int]fieldDefault{}
		var cm *plan.ColumnMap // nil: the footer was not needed
		fp := filePartition{spec: int(task.File.SpecID()), values: task.File.Partition()}
		if (identityFields{fp.spec: p.identity[fp.spec]}).any(ids) {
			var err error
			if cm, err = c.columnMapOf(ctx, p, task.File.FilePath()); err != nil {
				return nil, err
			}
			stored := func(id int) bool { return !cm.ByName && len(cm.Leaves(id)) > 0 }
			if consts, err = p.partitionConstants(fp, ids, stored); err != nil {
				return nil, fmt.Errorf("%s: %w", task.File.FilePath(), err)
			}
		}
		names := topNames(p, ids, consts)
		if len(names) == 0 {
			// every needed field is a constant: read one stored column for
			// the row count (and deletes)
			for _, f := range p.schema.Fields() {
				if _, isConst := consts[f.ID]; !isConst && (cm == nil || len(cm.Leaves(f.ID)) > 0) {
					names = []string{f.Name}
					break
				}
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("%s stores none of the columns of %s", task.File.FilePath(), p.q.Table)
			}
		}
		t := task
		t.Residual = nil // the predicate is evaluated below, on the filled rows
		_, records, err := tbl.Scan(append([]table.ScanOption{table.WithSelectedFields(names...)}, snapOpts...)...).
			ReadTasks(ctx, []table.FileScanTask{t})
		if err != nil {
			return nil, fmt.Errorf("plain read of %s: %w", task.File.FilePath(), err)
		}
		for rec, err := range records {
			if err != nil {
				return nil, fmt.Errorf("plain read of %s: %w", task.File.FilePath(), err)
			}
			filled, err := fillConstants(rec, p, consts)
			rec.Release()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", task.File.FilePath(), err)
			}
			if done, err = f.add(ctx, filled); err != nil {
				return nil, err
			}
			if done {
				break
			}
		}
	}
	res := f.finish(t0)
	res.Stats.Files = files
	return res, nil
}

func uniqueIDs(ids []int) []int {
	var out []int
	seen := map[int]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// topNames are the names of the top-level fields holding ids, except
// constants.
func topNames(p *prepared, ids []int, consts map[int]fieldDefault) []string {
	var names []string
	seen := map[string]bool{}
	for _, id := range ids {
		if _, ok := consts[id]; ok {
			continue
		}
		for a, ok := p.parents[id]; ok; a, ok = p.parents[a] {
			id = a
		}
		if n, ok := p.schema.FindColumnName(id); ok && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// fillConstants appends the constant columns to rec (named like the table's
// fields, typed from the table schema).
func fillConstants(rec arrow.RecordBatch, p *prepared, consts map[int]fieldDefault) (arrow.RecordBatch, error) {
	fields := append([]arrow.Field{}, rec.Schema().Fields()...)
	cols := append([]arrow.Array{}, rec.Columns()...)
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for _, id := range p.selectIDsAndPredicate() {
		d, ok := consts[id]
		if !ok {
			continue
		}
		name, _ := p.schema.FindColumnName(id)
		if len(rec.Schema().FieldIndices(name)) > 0 {
			continue
		}
		dt := emptySchemaOf(p, id)
		if dt == nil {
			return nil, fmt.Errorf("column %s has no Arrow type", name)
		}
		a, err := defaultArray(d, dt, int(rec.NumRows()))
		if err != nil {
			return nil, fmt.Errorf("column %s, from the identity partition: %w", name, err)
		}
		made = append(made, a)
		fields = append(fields, arrow.Field{Name: name, Type: dt, Nullable: true})
		cols = append(cols, a)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

func (p *prepared) selectIDsAndPredicate() []int {
	return uniqueIDs(append(append([]int{}, p.selectIDs...), predicate.FieldIDs(p.expr)...))
}

// columnMapOf reads a data file's footer (one suffix GET through the S3
// gateway, a second when the footer is larger) and maps its columns to
// field ids.
func (c *Connector) columnMapOf(ctx context.Context, p *prepared, location string) (*plan.ColumnMap, error) {
	bucket, key, err := splitS3(location)
	if err != nil {
		return nil, err
	}
	tail := func(n int64) ([]byte, error) {
		obj, err := c.plainS3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Range: aws.String(fmt.Sprintf("bytes=-%d", n))})
		if err != nil {
			return nil, fmt.Errorf("footer of %s: %w", location, err)
		}
		defer obj.Body.Close()
		b, err := io.ReadAll(obj.Body)
		if err != nil {
			return nil, fmt.Errorf("footer of %s: %w", location, err)
		}
		return b, nil
	}
	b, err := tail(64 << 10)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[len(b)-4:]) != "PAR1" {
		return nil, fmt.Errorf("%s is not a Parquet file (no PAR1 trailer)", location)
	}
	metaLen := int64(binary.LittleEndian.Uint32(b[len(b)-8:]))
	if metaLen+8 > int64(len(b)) {
		if b, err = tail(metaLen + 8); err != nil {
			return nil, err
		}
		if int64(len(b)) < metaLen+8 {
			return nil, fmt.Errorf("%s: footer of %d bytes, the file has %d", location, metaLen, len(b))
		}
	}
	md, err := footer.ParseFooterBytes(b[int64(len(b))-metaLen-8:])
	if err != nil {
		return nil, fmt.Errorf("%s: footer: %w", location, err)
	}
	return plan.NewColumnMap(md.Schema, p.mapping), nil
}
