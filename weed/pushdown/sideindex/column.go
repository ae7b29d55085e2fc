package sideindex

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// checkInput refuses inputs no kind can index.
func checkInput(in Input, k Kind) error {
	if in.Footer == nil || in.Footer.Meta == nil || in.Footer.Meta.Schema == nil {
		return fmt.Errorf("%s: no parsed footer for %s", k.Name(), short(in.File))
	}
	if in.Source == nil {
		return fmt.Errorf("%s: no source for %s", k.Name(), short(in.File))
	}
	if in.Type == nil || !k.Supports(in.Type) {
		return fmt.Errorf("%s index cannot index field %d of type %v", k.Name(), in.FieldID, in.Type)
	}
	if in.Column < 0 || in.Column >= in.Footer.Meta.Schema.NumColumns() {
		return fmt.Errorf("%s: column %d is not a leaf of %s", k.Name(), in.Column, short(in.File))
	}
	col := in.Footer.Meta.Schema.Column(in.Column)
	if col.MaxRepetitionLevel() > 0 {
		return fmt.Errorf("%s: column %s is repeated; only flat columns can be indexed", k.Name(), short(col.Path()))
	}
	if _, err := value.NewStatDecoder(col, in.Type); err != nil {
		return fmt.Errorf("%s: %v", k.Name(), err)
	}
	return nil
}

// openData opens the data file with arrow-go over its source, reusing the
// parsed footer.
func openData(in Input, sr *sourceReader) (rdr *file.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			rdr, err = nil, fmt.Errorf("open %s: %v", short(in.File), p)
		}
	}()
	return file.NewParquetReader(sr, file.WithMetadata(in.Footer.Meta))
}

// columnDescr is what an evaluator needs of the data file's column (its
// physical and logical type) to decode statistics and hash literals as
// the file stores them; recorded in the payload.
type columnDescr struct {
	Physical  string `json:"physical"`
	Length    int    `json:"length,omitempty"`
	Logical   string `json:"logical,omitempty"`
	BitWidth  int8   `json:"bit-width,omitempty"`
	Signed    bool   `json:"signed,omitempty"`
	Unit      string `json:"unit,omitempty"`
	UTC       bool   `json:"utc,omitempty"`
	Precision int32  `json:"precision,omitempty"`
	Scale     int32  `json:"scale,omitempty"`
	MaxDef    int16  `json:"max-def"`
	MaxRep    int16  `json:"max-rep,omitempty"`
}

var physicalTypes = map[string]parquet.Type{}

func init() {
	for _, t := range []parquet.Type{parquet.Types.Boolean, parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Int96,
		parquet.Types.Float, parquet.Types.Double, parquet.Types.ByteArray, parquet.Types.FixedLenByteArray} {
		physicalTypes[t.String()] = t
	}
}

var timeUnits = map[string]schema.TimeUnitType{"millis": schema.TimeUnitMillis, "micros": schema.TimeUnitMicros, "nanos": schema.TimeUnitNanos}

func unitName(u schema.TimeUnitType) string {
	for n, x := range timeUnits {
		if x == u {
			return n
		}
	}
	return "?"
}

func describeColumn(col *schema.Column) (columnDescr, error) {
	d := columnDescr{Physical: col.PhysicalType().String(), MaxDef: col.MaxDefinitionLevel(), MaxRep: col.MaxRepetitionLevel()}
	if col.PhysicalType() == parquet.Types.FixedLenByteArray {
		d.Length = col.TypeLength()
	}
	switch l := col.LogicalType().(type) {
	case nil, schema.NoLogicalType:
	case schema.IntLogicalType:
		d.Logical, d.BitWidth, d.Signed = "int", l.BitWidth(), l.IsSigned()
	case schema.DateLogicalType:
		d.Logical = "date"
	case schema.TimeLogicalType:
		d.Logical, d.Unit, d.UTC = "time", unitName(l.TimeUnit()), l.IsAdjustedToUTC()
	case schema.TimestampLogicalType:
		d.Logical, d.Unit, d.UTC = "timestamp", unitName(l.TimeUnit()), l.IsAdjustedToUTC()
	case schema.DecimalLogicalType:
		d.Logical, d.Precision, d.Scale = "decimal", l.Precision(), l.Scale()
	case schema.StringLogicalType:
		d.Logical = "string"
	case schema.EnumLogicalType:
		d.Logical = "enum"
	case schema.JSONLogicalType:
		d.Logical = "json"
	case schema.BSONLogicalType:
		d.Logical = "bson"
	case schema.UUIDLogicalType:
		d.Logical = "uuid"
	case schema.Float16LogicalType:
		d.Logical = "float16"
	default:
		return d, fmt.Errorf("column %s: logical type %s is not supported by side indexes", short(col.Path()), l)
	}
	return d, nil
}

func (d columnDescr) encode() string {
	b, _ := json.Marshal(d)
	return string(b)
}

// column rebuilds the descriptor of the data file's column.
func (d columnDescr) column() (col *schema.Column, err error) {
	defer func() {
		if p := recover(); p != nil {
			col, err = nil, fmt.Errorf("column descriptor not understood: %v", p)
		}
	}()
	phys, ok := physicalTypes[d.Physical]
	if !ok {
		return nil, fmt.Errorf("physical type %s not understood", short(d.Physical))
	}
	var lt schema.LogicalType = schema.NoLogicalType{}
	unit, unitOK := timeUnits[d.Unit]
	switch d.Logical {
	case "":
	case "int":
		lt = schema.NewIntLogicalType(d.BitWidth, d.Signed)
	case "date":
		lt = schema.DateLogicalType{}
	case "time":
		lt = schema.NewTimeLogicalType(d.UTC, unit)
	case "timestamp":
		lt = schema.NewTimestampLogicalTypeForce(d.UTC, unit)
	case "decimal":
		lt = schema.NewDecimalLogicalType(d.Precision, d.Scale)
	case "string":
		lt = schema.StringLogicalType{}
	case "enum":
		lt = schema.EnumLogicalType{}
	case "json":
		lt = schema.JSONLogicalType{}
	case "bson":
		lt = schema.BSONLogicalType{}
	case "uuid":
		lt = schema.UUIDLogicalType{}
	case "float16":
		lt = schema.Float16LogicalType{}
	default:
		return nil, fmt.Errorf("logical type %s not understood", short(d.Logical))
	}
	if (d.Logical == "time" || d.Logical == "timestamp") && !unitOK {
		return nil, fmt.Errorf("time unit %s not understood", short(d.Unit))
	}
	length := -1
	if phys == parquet.Types.FixedLenByteArray {
		length = d.Length
	}
	node, err := schema.NewPrimitiveNodeLogical("value", parquet.Repetitions.Optional, lt, phys, length, -1)
	if err != nil {
		return nil, err
	}
	return schema.NewColumn(node, d.MaxDef, 0), nil
}

func parseDescr(s string) (*schema.Column, error) {
	col, _, err := parseDescrRep(s)
	return col, err
}

// parseDescrRep is parseDescr with the column's maximum repetition level.
func parseDescrRep(s string) (*schema.Column, int16, error) {
	var d columnDescr
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, 0, fmt.Errorf("column descriptor not readable: %v", err)
	}
	col, err := d.column()
	return col, d.MaxRep, err
}

// parseType parses an Iceberg primitive type as Type.String() renders it
// (the same spelling as its JSON form).
func parseType(s string) (iceberg.Type, error) {
	b, _ := json.Marshal(map[string]any{"id": 1, "name": "f", "required": false, "type": s})
	var f iceberg.NestedField
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if _, ok := value.KindOf(f.Type); !ok {
		return nil, fmt.Errorf("type %s has no order", short(s))
	}
	return f.Type, nil
}
