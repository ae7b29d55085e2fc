package deletes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// sourceReader adapts a Source to the io.ReaderAt + io.Seeker arrow-go
// reads Parquet through, remembering the first I/O failure so a failed read
// is reported as unavailable rather than as a malformed file.
type sourceReader struct {
	ctx   context.Context
	src   Source
	pos   int64
	ioErr error
}

func (r *sourceReader) ReadAt(p []byte, off int64) (int, error) {
	if err := r.ctx.Err(); err != nil {
		r.fail(err)
		return 0, err
	}
	if off < 0 || off > r.src.Size() {
		return 0, fmt.Errorf("read at offset %d outside the file's %d bytes", off, r.src.Size())
	}
	n, err := r.src.ReadAt(r.ctx, p, off)
	if n == len(p) {
		return n, nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		r.fail(err)
	}
	return n, err
}

func (r *sourceReader) fail(err error) {
	if r.ioErr == nil {
		r.ioErr = err
	}
}

func (r *sourceReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.pos
	case io.SeekEnd:
		offset += r.src.Size()
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek to negative offset %d", offset)
	}
	r.pos = offset
	return offset, nil
}

// parquetFile is an open Parquet file.
type parquetFile struct {
	path string
	rd   *file.Reader
	sr   *sourceReader
}

// openParquet opens path (checking its size against the manifest's) and
// parses its footer.
func openParquet(ctx context.Context, open Opener, path string, size int64) (pf *parquetFile, err error) {
	src, err := openChecked(ctx, open, path, size)
	if err != nil {
		return nil, err
	}
	sr := &sourceReader{ctx: ctx, src: src}
	defer func() {
		if r := recover(); r != nil {
			pf, err = nil, perr.New(perr.Corrupt, "%s: Parquet footer is malformed (reader panicked: %v)", path, r)
		}
	}()
	rd, err := file.NewParquetReader(sr)
	if err != nil {
		return nil, classify(sr, err, "%s: open Parquet footer", path)
	}
	return &parquetFile{path: path, rd: rd, sr: sr}, nil
}

// classify names the file and gives err its kind: an I/O failure seen by
// the adapter is unavailable (or a cancellation), anything else is a
// malformed file.
func classify(sr *sourceReader, err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if sr != nil && sr.ioErr != nil {
		if perr.IsContext(sr.ioErr) {
			return fmt.Errorf("%s: %w", msg, sr.ioErr)
		}
		return perr.Wrap(perr.Unavailable, fmt.Errorf("%s: %w", msg, sr.ioErr))
	}
	if perr.IsContext(err) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	var pe *perr.Error
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return perr.New(perr.Corrupt, "%s: %w", msg, err)
}

// leaf is a usable (non-repeated) leaf column of a Parquet file.
type leaf struct {
	index int
	col   *schema.Column
}

// columnMap resolves Iceberg field ids to a file's leaf columns: by the
// Parquet field id when a node has one, else through the name mapping.
type columnMap struct {
	byID   map[int][]leaf
	hasIDs bool // some node of the file carries a field id
}

// mapColumns walks the leaves of sch. Leaves under a repeated node (lists,
// maps) are skipped: equality and position columns are never inside them.
func mapColumns(sch *schema.Schema, nm iceberg.NameMapping) columnMap {
	cm := columnMap{byID: map[int][]leaf{}}
	for i := 0; i < sch.NumColumns(); i++ {
		col := sch.Column(i)
		var chain []schema.Node // leaf up to (excluding) the root
		for n := col.SchemaNode(); n != nil && n.Parent() != nil; n = n.Parent() {
			chain = append(chain, n)
		}
		repeated := false
		for _, n := range chain {
			if n.FieldID() > 0 {
				cm.hasIDs = true
			}
			if n.RepetitionType() == parquet.Repetitions.Repeated {
				repeated = true
			}
		}
		if repeated || col.MaxRepetitionLevel() > 0 || len(chain) == 0 {
			continue
		}
		id := int(chain[0].FieldID())
		if id <= 0 {
			id = mappedID(nm, chain)
		}
		if id > 0 {
			cm.byID[id] = append(cm.byID[id], leaf{index: i, col: col})
		}
	}
	return cm
}

// mappedID follows the names of chain (leaf first) down the name mapping.
func mappedID(nm iceberg.NameMapping, chain []schema.Node) int {
	fields := []iceberg.MappedField(nm)
	var hit *iceberg.MappedField
	for i := len(chain) - 1; i >= 0; i-- {
		hit = nil
		for j := range fields {
			for _, name := range fields[j].Names {
				if name == chain[i].Name() {
					hit = &fields[j]
					break
				}
			}
			if hit != nil {
				break
			}
		}
		if hit == nil {
			return 0
		}
		fields = hit.Fields
	}
	if hit == nil || hit.FieldID == nil {
		return 0
	}
	return *hit.FieldID
}

// find returns the one leaf of field id, nil when absent.
func (cm columnMap) find(path string, id int, what string) (*leaf, error) {
	ls := cm.byID[id]
	switch len(ls) {
	case 0:
		return nil, nil
	case 1:
		return &ls[0], nil
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.col.Path()
	}
	return nil, perr.New(perr.Corrupt, "%s: %s field id %d is ambiguous: columns %s all carry it", path, what, id, strings.Join(names, ", "))
}

// column is a batched cursor over one leaf column chunk of a non-repeated
// column: next returns one row's value at a time.
type column[T any] struct {
	r interface {
		ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
	}
	vals         []T
	defs         []int16
	maxDef       int16
	have, li, vi int
}

var errColumnEnded = errors.New("column chunk ended before the row group's last row")

func (c *column[T]) next() (v T, null bool, err error) {
	if c.li == c.have {
		total, _, err := c.r.ReadBatch(int64(len(c.vals)), c.vals, c.defs, nil)
		if err != nil {
			return v, false, err
		}
		if total <= 0 {
			return v, false, errColumnEnded
		}
		c.have, c.li, c.vi = int(total), 0, 0
	}
	d := c.maxDef
	if c.maxDef > 0 {
		d = c.defs[c.li]
	}
	c.li++
	if d < c.maxDef {
		return v, true, nil
	}
	if c.vi >= len(c.vals) {
		return v, false, errors.New("column chunk holds fewer values than its definition levels announce")
	}
	v = c.vals[c.vi]
	c.vi++
	return v, false, nil
}

func newColumn[T any](r interface {
	ReadBatch(int64, []T, []int16, []int16) (int64, int, error)
}, maxDef int16, batch int) *column[T] {
	return &column[T]{r: r, vals: make([]T, batch), defs: make([]int16, batch), maxDef: maxDef}
}

// batchRows is how many levels a column cursor decodes at a time.
const batchRows = 4096

// guard turns a panic of arrow-go on malformed bytes into a corrupt-file
// error.
func guard(path string, err *error) {
	if r := recover(); r != nil {
		*err = perr.New(perr.Corrupt, "%s: Parquet data is malformed (reader panicked: %v)", path, r)
	}
}
