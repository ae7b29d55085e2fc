package tableimport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/pierrec/lz4/v4"
)

// rewritePositionDeletes copies a Parquet position-delete file with every
// file_path value moved onto the new root. Row groups, row order, the other
// columns, field ids, per-column compression and the file's key-value
// metadata stay as they were. It returns the rewritten file_path bounds and
// how many distinct paths it rewrote.
func rewritePositionDeletes(src string, dst io.Writer, rl *relocator) (lower, upper []byte, distinct int, err error) {
	defer func() {
		// arrow-go panics on some malformed files; refuse them instead.
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed Parquet file: %v", r)
		}
	}()
	f, err := os.Open(src)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	rdr, err := file.NewParquetReader(f)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("read Parquet: %w", err)
	}
	defer rdr.Close()
	mem := memory.DefaultAllocator
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("read Parquet: %w", err)
	}
	readSchema, err := fr.Schema()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("Parquet schema: %w", err)
	}
	col := filePathColumn(readSchema)
	if col < 0 {
		return nil, nil, 0, errors.New("no file_path column (field id 2147483546) in the position-delete file")
	}
	if t := readSchema.Field(col).Type.ID(); t != arrow.STRING && t != arrow.LARGE_STRING {
		return nil, nil, 0, fmt.Errorf("file_path column has type %s, want string", readSchema.Field(col).Type)
	}
	schema := arrow.NewSchema(readSchema.Fields(), nil)

	md := rdr.MetaData()
	opts := []parquet.WriterProperty{parquet.WithVersion(md.Version()), parquet.WithAllocator(mem)}
	if md.NumRowGroups() > 0 {
		rg := md.RowGroup(0)
		for i := 0; i < rg.NumColumns(); i++ {
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				return nil, nil, 0, err
			}
			opts = append(opts, parquet.WithCompressionFor(cc.PathInSchema().String(), cc.Compression()))
		}
	}
	// The Parquet writer closes a destination that is an io.Closer; the
	// caller owns dst.
	fw, err := pqarrow.NewFileWriter(schema, struct{ io.Writer }{dst}, parquet.NewWriterProperties(opts...), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("write Parquet: %w", err)
	}
	kv := md.KeyValueMetadata()
	for i, k := range kv.Keys() {
		if err := fw.AppendKeyValueMetadata(k, kv.Values()[i]); err != nil {
			return nil, nil, 0, err
		}
	}

	moved := map[string]string{}
	var lo, hi string
	seen := false
	for rgi := 0; rgi < rdr.NumRowGroups(); rgi++ {
		all := make([]int, len(readSchema.Fields()))
		for i := range all {
			all[i] = i
		}
		tbl, err := fr.RowGroup(rgi).ReadTable(context.Background(), all)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("row group %d: %w", rgi, err)
		}
		cols := make([]arrow.Column, tbl.NumCols())
		for c := 0; c < int(tbl.NumCols()); c++ {
			if c != col {
				cols[c] = *tbl.Column(c)
				cols[c].Retain()
				continue
			}
			var chunks []arrow.Array
			for _, chunk := range tbl.Column(c).Data().Chunks() {
				out, err := rewriteStringArray(chunk, mem, func(p string) (string, error) {
					if np, ok := moved[p]; ok {
						return np, nil
					}
					np, err := rl.rewrite(p)
					if err != nil {
						return "", err
					}
					moved[p] = np
					return np, nil
				})
				if err != nil {
					for _, a := range chunks {
						a.Release()
					}
					tbl.Release()
					return nil, nil, 0, err
				}
				for i := 0; i < out.Len(); i++ {
					if out.IsNull(i) {
						continue
					}
					s := stringAt(out, i)
					if !seen || s < lo {
						lo = s
					}
					if !seen || s > hi {
						hi = s
					}
					seen = true
				}
				chunks = append(chunks, out)
			}
			chunked := arrow.NewChunked(schema.Field(c).Type, chunks)
			for _, a := range chunks {
				a.Release()
			}
			cols[c] = *arrow.NewColumn(schema.Field(c), chunked)
			chunked.Release()
		}
		nt := array.NewTable(schema, cols, tbl.NumRows())
		for i := range cols {
			cols[i].Release()
		}
		tbl.Release()
		if nt.NumRows() > 0 {
			err = fw.WriteTable(nt, nt.NumRows())
		}
		nt.Release()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("write row group %d: %w", rgi, err)
		}
	}
	if err := fw.Close(); err != nil {
		return nil, nil, 0, fmt.Errorf("close Parquet: %w", err)
	}
	if !seen {
		return nil, nil, len(moved), nil
	}
	return []byte(lo), []byte(hi), len(moved), nil
}

// filePathColumn finds the top-level file_path column by field id, else by
// name.
func filePathColumn(s *arrow.Schema) int {
	want := strconv.Itoa(posDeleteFilePathFieldID)
	for i, f := range s.Fields() {
		if v, ok := f.Metadata.GetValue("PARQUET:field_id"); ok && v == want {
			return i
		}
	}
	for i, f := range s.Fields() {
		if f.Name == "file_path" {
			return i
		}
	}
	return -1
}

func stringAt(a arrow.Array, i int) string {
	switch t := a.(type) {
	case *array.String:
		return t.Value(i)
	case *array.LargeString:
		return t.Value(i)
	}
	return ""
}

func rewriteStringArray(a arrow.Array, mem memory.Allocator, fn func(string) (string, error)) (arrow.Array, error) {
	in, ok := a.(interface {
		arrow.Array
		Value(int) string
	})
	if !ok || (a.DataType().ID() != arrow.STRING && a.DataType().ID() != arrow.LARGE_STRING) {
		return nil, fmt.Errorf("file_path column is %s, want string", a.DataType())
	}
	b := array.NewBuilder(mem, a.DataType()).(interface {
		array.Builder
		Append(string)
	})
	defer b.Release()
	for i := 0; i < in.Len(); i++ {
		if in.IsNull(i) {
			b.AppendNull()
			continue
		}
		s, err := fn(in.Value(i))
		if err != nil {
			return nil, err
		}
		b.Append(s)
	}
	return b.NewArray(), nil
}

var puffinMagic = []byte{'P', 'F', 'A', '1'}

const puffinFooterCompressed = 1 // flag bit 0 of the footer's first flag byte

// puffinFooter locates and decodes a Puffin file's footer payload.
type puffinFooter struct {
	start   int64 // offset of the footer's leading magic
	payload []byte
	flags   [4]byte
}

func readPuffinFooter(f *os.File, size int64) (*puffinFooter, error) {
	if size < int64(len(puffinMagic))*2+12 {
		return nil, fmt.Errorf("%d bytes is too short for a Puffin file", size)
	}
	head := make([]byte, 4)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, err
	}
	if !bytes.Equal(head, puffinMagic) {
		return nil, errors.New("not a Puffin file (bad leading magic)")
	}
	tail := make([]byte, 12)
	if _, err := f.ReadAt(tail, size-12); err != nil {
		return nil, err
	}
	if !bytes.Equal(tail[8:], puffinMagic) {
		return nil, errors.New("not a Puffin file (bad trailing magic)")
	}
	payloadSize := int64(binary.LittleEndian.Uint32(tail[:4]))
	start := size - 12 - payloadSize - 4
	if start < 4 {
		return nil, fmt.Errorf("Puffin footer payload size %d does not fit the %d-byte file", payloadSize, size)
	}
	buf := make([]byte, 4+payloadSize)
	if _, err := f.ReadAt(buf, start); err != nil {
		return nil, err
	}
	if !bytes.Equal(buf[:4], puffinMagic) {
		return nil, errors.New("Puffin footer does not start with the magic")
	}
	pf := &puffinFooter{start: start, payload: buf[4:]}
	copy(pf.flags[:], tail[4:8])
	if pf.flags[0]&puffinFooterCompressed != 0 {
		dec, err := io.ReadAll(lz4.NewReader(bytes.NewReader(pf.payload)))
		if err != nil {
			return nil, fmt.Errorf("LZ4 Puffin footer: %w", err)
		}
		pf.payload = dec
	}
	return pf, nil
}

// startsWithPuffinMagic reports whether the file begins with the Puffin
// magic. A deletion-vector file that does not is an older writer's blob
// stored on its own, outside any Puffin container.
func startsWithPuffinMagic(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len(puffinMagic))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Equal(head[:n], puffinMagic), nil
}

// bareDeletionVectorNote tells the user a deletion-vector file outside a
// Puffin container was copied as it is.
func bareDeletionVectorNote(orig string) string {
	return fmt.Sprintf("deletion-vector file %q is not a Puffin file (it does not begin with the PFA1 magic): copied byte for byte, "+
		"as it has no footer and no referenced-data-file property to rewrite; readers will refuse it unless they accept bare deletion vectors "+
		"(lakeweed's pushdown: -pushdown.allowBareDeletionVectors)", orig)
}

// rewritePuffin copies a Puffin file (deletion vectors) with the
// referenced-data-file property of each blob moved onto the new root. Blobs
// keep their bytes and offsets: only the footer changes (a compressed footer
// is written uncompressed). It returns how many paths it rewrote.
func rewritePuffin(src string, dst io.Writer, rl *relocator) (int, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	pf, err := readPuffinFooter(f, st.Size())
	if err != nil {
		return 0, err
	}
	doc, err := parseJSON(pf.payload)
	if err != nil {
		return 0, fmt.Errorf("Puffin footer JSON: %w", err)
	}
	root, ok := doc.(*jsonObject)
	if !ok {
		return 0, errors.New("Puffin footer is not a JSON object")
	}
	count := 0
	blobs, _ := root.getArray("blobs")
	for i, b := range blobs {
		blob, ok := b.(*jsonObject)
		if !ok {
			continue
		}
		props, ok := blob.getObject("properties")
		if !ok {
			continue
		}
		ref, ok := props.getString("referenced-data-file")
		if !ok {
			continue
		}
		nref, err := rl.rewrite(ref)
		if err != nil {
			return count, fmt.Errorf("blob %d: %w", i, err)
		}
		props.set("referenced-data-file", nref)
		count++
	}
	payload, err := encodeJSON(root)
	if err != nil {
		return count, err
	}
	if _, err := io.Copy(dst, io.NewSectionReader(f, 0, pf.start)); err != nil {
		return count, err
	}
	flags := pf.flags
	flags[0] &^= puffinFooterCompressed
	var footer bytes.Buffer
	footer.Write(puffinMagic)
	footer.Write(payload)
	footer.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(payload))))
	footer.Write(flags[:])
	footer.Write(puffinMagic)
	_, err = dst.Write(footer.Bytes())
	return count, err
}
