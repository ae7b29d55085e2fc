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
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
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
			row := make([]string, rec.NumCols())
			for c := range row {
				if !rec.Column(c).IsNull(r) {
					row[c] = rec.Column(c).ValueStr(r)
				}
			}
			err = rw.csv.Write(row)
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
		v, err := json.Marshal(rec.Column(c).GetOneForMarshal(r))
		if err != nil {
			return fmt.Errorf("column %s row %d as JSON: %w", rw.names[c], r, err)
		}
		if c > 0 {
			rw.line = append(rw.line, ',')
		}
		rw.line = append(append(append(rw.line, rw.keys[c]...), ':'), v...)
	}
	_, err := rw.w.Write(append(rw.line, '}', '\n'))
	return err
}

func (rw *rowWriter) writeTableRow(rec arrow.RecordBatch, r int) error {
	row := make([]string, rec.NumCols())
	for c := range row {
		if rec.Column(c).IsNull(r) {
			row[c] = "NULL"
		} else {
			row[c] = rec.Column(c).ValueStr(r)
		}
	}
	if !rw.sized {
		rw.held = append(rw.held, row)
		if len(rw.held) > tableWidthRows {
			return rw.flushHeld()
		}
		return nil
	}
	return rw.tableLine(row)
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
			pad := rw.widths[c] - utf8.RuneCountInString(v) + 2
			rw.line = append(rw.line, strings.Repeat(" ", max(pad, 1))...)
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
