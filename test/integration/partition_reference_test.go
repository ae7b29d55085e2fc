package integration

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// referenceWithPartitionValues is iceberg-go's scan with the first rule of
// Iceberg's column projection, which iceberg-go lacks: a file that does
// not store an identity-partitioned column reads the file's partition
// value for it, where iceberg-go reads NULL. iceberg-go selects the right
// rows (its residuals decide predicates on identity-partitioned columns
// from the partition values); only the values are filled in here, file
// task by file task: a column that is NULL in every row of a file whose
// partition value is not NULL is not stored there.
func referenceWithPartitionValues(ctx context.Context, tbl *table.Table, snapshot int64, filter iceberg.BooleanExpression) (arrow.Table, error) {
	scan := tbl.Scan(table.WithSnapshotID(snapshot), table.WithRowFilter(filter))
	md := tbl.Metadata()
	identity := false
	for _, spec := range md.PartitionSpecs() {
		for _, pf := range spec.Fields() {
			if _, ok := pf.Transform.(iceberg.IdentityTransform); ok {
				identity = true
			}
		}
	}
	if !identity {
		return scan.ToArrowTable(ctx)
	}
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	sch, err := scan.Projection()
	if err != nil {
		return nil, err
	}
	as, err := table.SchemaToArrowSchema(sch, nil, false, false)
	if err != nil {
		return nil, err
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, task := range tasks {
		s, it, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			return nil, err
		}
		as = s
		for rec, err := range it {
			if err != nil {
				return nil, err
			}
			filled, err := fillPartitionValues(rec, md, task.File)
			rec.Release()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", task.File.FilePath(), err)
			}
			recs = append(recs, filled)
		}
	}
	return array.NewTableFromRecords(as, recs), nil
}

func fillPartitionValues(rec arrow.RecordBatch, md table.Metadata, df iceberg.DataFile) (arrow.RecordBatch, error) {
	spec := md.PartitionSpecByID(int(df.SpecID()))
	cols := append([]arrow.Array{}, rec.Columns()...)
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	part := df.Partition()
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.IdentityTransform); !ok {
			continue
		}
		src, ok := md.CurrentSchema().FindFieldByID(pf.SourceID())
		if !ok {
			continue
		}
		idx := rec.Schema().FieldIndices(src.Name)
		v := part[pf.FieldID]
		if len(idx) != 1 || v == nil || cols[idx[0]].NullN() != int(rec.NumRows()) {
			continue
		}
		a, err := constantArray(v, cols[idx[0]].DataType(), int(rec.NumRows()))
		if err != nil {
			return nil, fmt.Errorf("column %s: partition value %v: %w", src.Name, v, err)
		}
		made = append(made, a)
		cols[idx[0]] = a
	}
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()), nil
}

// constantArray is n copies of partition value v (iceberg-go's Go type) as
// Arrow type dt.
func constantArray(v any, dt arrow.DataType, n int) (arrow.Array, error) {
	if ext, ok := dt.(arrow.ExtensionType); ok {
		storage, err := constantArray(v, ext.StorageType(), n)
		if err != nil {
			return nil, err
		}
		defer storage.Release()
		return array.NewExtensionArrayWithStorage(ext, storage), nil
	}
	var sc scalar.Scalar
	switch x := v.(type) {
	case iceberg.Decimal:
		sc = scalar.NewDecimal128Scalar(x.Val, dt)
	case iceberg.DecimalLiteral:
		sc = scalar.NewDecimal128Scalar(x.Val, dt)
	case iceberg.Date:
		sc = scalar.NewDate32Scalar(arrow.Date32(x))
	case iceberg.Time:
		sc = scalar.NewTime64Scalar(arrow.Time64(x), dt)
	case iceberg.Timestamp:
		sc = scalar.NewTimestampScalar(arrow.Timestamp(x), dt)
	case uuid.UUID:
		sc = scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(x[:]), dt)
	default:
		var err error
		if sc, err = scalar.MakeScalarParam(v, dt); err != nil {
			return nil, err
		}
	}
	return scalar.MakeArrayFromScalar(sc, n, memory.DefaultAllocator)
}
