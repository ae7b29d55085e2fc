package cli

// Query output, streamed: each record is written as it arrives and
// dropped, so printing a million rows takes the memory of a few records.
//
//	connector.Stream ─▶ record ─▶ rowWriter.write ─▶ bufio ─▶ stdout
//	                                                  table: the first
//	                                                  tableWidthRows rows set
//	                                                  the column widths
//	end ─▶ rowWriter.finish(schema): header if no row came, "(N rows)"

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// tableWidthRows is how many rows the table format holds back to size its
// columns; later rows are padded to those widths (a longer value widens
// only its own line).
const tableWidthRows = 1000

// rowWriter writes a query's rows in one format as they arrive.
type rowWriter struct {
	format string
	w      *bufio.Writer
	csv    *csv.Writer
	names  []string
	keys   [][]byte // json: the quoted column names
	line   []byte
	row    []string // csv: the cells of one row
	rows   int64
	// table: rows held back until the widths are known
	held   [][]string
	widths []int
	sized  bool
}

func newRowWriter(w io.Writer, format string) *rowWriter {
	rw := &rowWriter{format: format, w: bufio.NewWriterSize(w, 256<<10)}
	if format == "csv" {
		rw.csv = csv.NewWriter(rw.w)
	}
	return rw
}

// start takes the column names from the first record (or, with no rows,
// the result's schema) and writes what comes before the rows.
func (rw *rowWriter) start(sch *arrow.Schema) error {
	if rw.names != nil {
		return nil
	}
	rw.names = make([]string, sch.NumFields())
	for i, f := range sch.Fields() {
		rw.names[i] = f.Name
	}
	switch rw.format {
	case "csv":
		return rw.csv.Write(rw.names)
	case "json":
		rw.keys = make([][]byte, len(rw.names))
		for c, n := range rw.names {
			rw.keys[c], _ = json.Marshal(n)
		}
	case "table":
		rw.held = append(rw.held, rw.names)
	}
	return nil
}

// write writes rec's rows (the caller keeps rec).
func (rw *rowWriter) write(rec arrow.RecordBatch) error {
	if err := rw.start(rec.Schema()); err != nil {
		return err
	}
	for r := 0; r < int(rec.NumRows()); r++ {
		var err error
		switch rw.format {
		case "csv":
			if len(rw.row) != int(rec.NumCols()) {
				rw.row = make([]string, rec.NumCols())
			}
			for c := range rw.row {
				rw.row[c] = ""
				if !rec.Column(c).IsNull(r) {
					rw.row[c] = valueStr(rec.Column(c), r)
				}
			}
			err = rw.csv.Write(rw.row)
		case "json":
			err = rw.writeJSON(rec, r)
		default:
			err = rw.writeTableRow(rec, r)
		}
		if err != nil {
			return err
		}
		rw.rows++
	}
	if rw.csv != nil {
		return rw.csv.Error()
	}
	return nil
}

// writeJSON writes row r as one object, keys in column order (a Go map
// would sort them).
func (rw *rowWriter) writeJSON(rec arrow.RecordBatch, r int) error {
	rw.line = append(rw.line[:0], '{')
	for c := 0; c < int(rec.NumCols()); c++ {
		if c > 0 {
			rw.line = append(rw.line, ',')
		}
		rw.line = append(append(rw.line, rw.keys[c]...), ':')
		col := rec.Column(c)
		if b, ok := appendNumberList(rw.line, col, r); ok {
			rw.line = b
			continue
		}
		v, err := json.Marshal(col.GetOneForMarshal(r))
		if err != nil {
			return fmt.Errorf("column %s row %d as JSON: %w", rw.names[c], r, err)
		}
		rw.line = append(rw.line, v...)
	}
	_, err := rw.w.Write(append(rw.line, '}', '\n'))
	return err
}

func (rw *rowWriter) writeTableRow(rec arrow.RecordBatch, r int) error {
	if rw.sized {
		// straight into the line buffer: a million rows of a 64-float
		// embedding would otherwise leave gigabytes of cell strings for
		// the collector (the process's RSS grew with them under load)
		rw.line = rw.line[:0]
		last := int(rec.NumCols()) - 1
		for c := 0; c <= last; c++ {
			start := len(rw.line)
			rw.line = appendCell(rw.line, rec.Column(c), r)
			if c < last {
				rw.line = appendPad(rw.line, rw.widths[c]-utf8.RuneCount(rw.line[start:])+2)
			}
		}
		_, err := rw.w.Write(append(rw.line, '\n'))
		return err
	}
	row := make([]string, rec.NumCols())
	for c := range row {
		row[c] = string(appendCell(nil, rec.Column(c), r))
	}
	rw.held = append(rw.held, row)
	if len(rw.held) > tableWidthRows {
		return rw.flushHeld()
	}
	return nil
}

// appendCell appends row r of arr as the table format shows it.
func appendCell(b []byte, arr arrow.Array, r int) []byte {
	if arr.IsNull(r) {
		return append(b, "NULL"...)
	}
	if out, ok := appendNumberList(b, arr, r); ok {
		return out
	}
	return append(b, arr.ValueStr(r)...)
}

// appendPad appends n spaces (at least one).
func appendPad(b []byte, n int) []byte {
	for range max(n, 1) {
		b = append(b, ' ')
	}
	return b
}

// flushHeld fixes the column widths from the rows held back and writes
// them.
func (rw *rowWriter) flushHeld() error {
	rw.sized = true
	rw.widths = make([]int, len(rw.names))
	for _, row := range rw.held {
		for c, v := range row {
			rw.widths[c] = max(rw.widths[c], utf8.RuneCountInString(v))
		}
	}
	for _, row := range rw.held {
		if err := rw.tableLine(row); err != nil {
			return err
		}
	}
	rw.held = nil
	return nil
}

// tableLine writes one row, cells padded to the column widths and two
// spaces apart (the last cell unpadded).
func (rw *rowWriter) tableLine(row []string) error {
	rw.line = rw.line[:0]
	for c, v := range row {
		rw.line = append(rw.line, v...)
		if c < len(row)-1 {
			rw.line = appendPad(rw.line, rw.widths[c]-utf8.RuneCountInString(v)+2)
		}
	}
	_, err := rw.w.Write(append(rw.line, '\n'))
	return err
}

// finish writes what follows the rows (the header when no row came,
// from sch) and flushes.
func (rw *rowWriter) finish(sch *arrow.Schema) error {
	if sch == nil {
		sch = arrow.NewSchema(nil, nil)
	}
	if err := rw.start(sch); err != nil {
		return err
	}
	switch rw.format {
	case "csv":
		rw.csv.Flush()
		if err := rw.csv.Error(); err != nil {
			return err
		}
	case "table":
		if !rw.sized {
			if err := rw.flushHeld(); err != nil {
				return err
			}
		}
		fmt.Fprintf(rw.w, "(%d rows)\n", rw.rows)
	}
	return rw.w.Flush()
}

// valueStr is arr.ValueStr(i) (row i not NULL), a list of numbers written
// directly: arrow-go renders a list through its JSON encoder, compacting
// the JSON of the values after (80% of the CPU of a SELECT * on the
// demo, for its 64-float embedding).
func valueStr(arr arrow.Array, i int) string {
	if b, ok := appendNumberList(nil, arr, i); ok {
		return string(b)
	}
	return arr.ValueStr(i)
}

// appendNumberList appends row i of a list of numbers as the JSON array
// arrow-go's ValueStr and GetOneForMarshal give (floats as its encoder
// writes them, NaN and infinities as strings, NULL elements as null);
// ok false: arr is not a list of numbers, or row i is NULL.
func appendNumberList(b []byte, arr arrow.Array, i int) ([]byte, bool) {
	l, ok := arr.(array.ListLike)
	if !ok || l.IsNull(i) {
		return b, false
	}
	var each func(b []byte, j int) []byte
	switch v := l.ListValues().(type) {
	case *array.Float32:
		each = func(b []byte, j int) []byte { return appendJSONFloat(b, float64(v.Value(j)), 32) }
	case *array.Float64:
		each = func(b []byte, j int) []byte { return appendJSONFloat(b, v.Value(j), 64) }
	case *array.Int32:
		each = func(b []byte, j int) []byte { return strconv.AppendInt(b, int64(v.Value(j)), 10) }
	case *array.Int64:
		each = func(b []byte, j int) []byte { return strconv.AppendInt(b, v.Value(j), 10) }
	default:
		return b, false
	}
	vals := l.ListValues()
	start, end := l.ValueOffsets(i)
	b = append(b, '[')
	for j := start; j < end; j++ {
		if j > start {
			b = append(b, ',')
		}
		if vals.IsNull(int(j)) {
			b = append(b, "null"...)
		} else {
			b = each(b, int(j))
		}
	}
	return append(b, ']'), true
}

// appendJSONFloat writes f as arrow-go's JSON encoder does: 'f' notation,
// 'e' below 1e-6 or from 1e21 (compared at the value's own width), NaN
// and infinities as the strings "NaN", "+Inf", "-Inf".
func appendJSONFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Inf"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) || bits == 64 && (abs < 1e-6 || abs >= 1e21) {
			format = 'e'
		}
	}
	return strconv.AppendFloat(b, f, format, -1, bits)
}
