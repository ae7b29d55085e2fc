package sqlexec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sqlstmt"
)

// Schema is the Arrow schema of st's answer, from the table's schema
// alone (nothing is read): what a Flight SQL client is told before it
// fetches the rows (Conform makes every record of the answer carry it).
func Schema(ctx context.Context, conn *connector.Connector, st *sqlstmt.Statement, o Options) (*arrow.Schema, error) {
	if st.Params > 0 && st.Table == "" {
		return nil, perr.New(perr.InvalidArgument, "SQL: the statement takes %d parameters; bind them first", st.Params)
	}
	schema, err := tableSchema(ctx, conn, st.Table, o.Snapshot)
	if err != nil {
		return nil, err
	}
	if st.Star {
		return table.SchemaToArrowSchema(schema, nil, true, false)
	}
	st, err = canonical(st, schema)
	if err != nil {
		return nil, err
	}
	columnType := func(name string) (arrow.Field, error) {
		if name == connector.DistanceColumn && st.Vector != nil {
			return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Float32}, nil
		}
		f, ok := schema.FindFieldByName(name)
		if !ok {
			return arrow.Field{}, perr.New(perr.InvalidArgument, "SQL: no column %s", perr.Quote(name))
		}
		as, err := table.SchemaToArrowSchema(iceberg.NewSchema(schema.ID, f), nil, true, false)
		if err != nil {
			return arrow.Field{}, err
		}
		return as.Field(0), nil
	}
	var fields []arrow.Field
	for _, it := range st.Items {
		if it.Hidden {
			continue
		}
		var f arrow.Field
		switch {
		case it.Agg == nil:
			if f, err = columnType(it.Column); err != nil {
				return nil, err
			}
			if st.Aggregate {
				f.Nullable = true
			}
			f.Metadata = arrow.Metadata{}
		default:
			var arg arrow.DataType
			if it.Agg.Column != "" {
				af, err := columnType(it.Agg.Column)
				if err != nil {
					return nil, err
				}
				arg = af.Type
			}
			f = arrow.Field{Type: it.Agg.ResultType(arg), Nullable: it.Agg.Func != sqlstmt.Count}
		}
		f.Name = it.Name
		fields = append(fields, f)
	}
	return arrow.NewSchema(fields, nil), nil
}

// Conform gives rec the schema want (the same columns in the same order):
// field names, nullability and metadata from want, columns cast where a
// type differs (a dictionary of strings, say). The caller releases the
// result.
func Conform(ctx context.Context, rec arrow.RecordBatch, want *arrow.Schema) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != want.NumFields() {
		return nil, perr.New(perr.InvalidArgument, "an answer of %d columns where %d were announced", rec.NumCols(), want.NumFields())
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		col := rec.Column(i)
		if arrow.TypeEqual(col.DataType(), want.Field(i).Type) {
			col.Retain()
			cols[i] = col
			continue
		}
		cast, err := compute.CastArray(ctx, col, compute.SafeCastOptions(want.Field(i).Type))
		if err != nil {
			return nil, perr.New(perr.InvalidArgument, "column %s is %s, announced as %s: %v", perr.Quote(want.Field(i).Name), col.DataType(), want.Field(i).Type, err)
		}
		cols[i] = cast
	}
	return array.NewRecordBatch(want, cols, rec.NumRows()), nil
}
