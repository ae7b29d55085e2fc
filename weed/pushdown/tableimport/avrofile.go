package tableimport

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/linkedin/goavro/v2"
)

// avroFile is an Avro object container file (manifest list or manifest)
// decoded generically: the header metadata in file order, the schema text as
// written, the codec and sync marker, and every record in goavro's native
// form (records as map[string]any, unions as map{"branch": value}) so that
// encoding it again with the same schema loses no field.
type avroFile struct {
	meta       []avroMeta
	schema     string
	codecName  string
	sync       [16]byte
	records    []any
	blockSizes []int // records per block, as read
	codec      *goavro.Codec
}

type avroMeta struct {
	key   string
	value []byte
}

var avroMagic = []byte{'O', 'b', 'j', 1}

// metaValue returns a header entry's value.
func (f *avroFile) metaValue(key string) (string, bool) {
	for _, m := range f.meta {
		if m.key == key {
			return string(m.value), true
		}
	}
	return "", false
}

// readAvroFile decodes an object container file.
func readAvroFile(b []byte) (*avroFile, error) {
	if len(b) < 4 || !bytes.Equal(b[:4], avroMagic) {
		return nil, errors.New("not an Avro object container file (bad magic)")
	}
	r := &avroReader{b: b, pos: 4}
	f := &avroFile{codecName: "null"}
	for {
		count, err := r.long()
		if err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
		if count == 0 {
			break
		}
		if count < 0 {
			count = -count
			if _, err := r.long(); err != nil { // block byte size
				return nil, fmt.Errorf("header: %w", err)
			}
		}
		for i := int64(0); i < count; i++ {
			k, err := r.bytes()
			if err != nil {
				return nil, fmt.Errorf("header key: %w", err)
			}
			v, err := r.bytes()
			if err != nil {
				return nil, fmt.Errorf("header value: %w", err)
			}
			key := string(k)
			f.meta = append(f.meta, avroMeta{key: key, value: append([]byte(nil), v...)})
			switch key {
			case "avro.schema":
				f.schema = string(v)
			case "avro.codec":
				f.codecName = string(v)
			}
		}
	}
	if err := r.read(f.sync[:]); err != nil {
		return nil, fmt.Errorf("sync marker: %w", err)
	}
	if f.schema == "" {
		return nil, errors.New("no avro.schema in the header")
	}
	codec, err := rawCodec(f.schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	f.codec = codec
	for r.pos < len(b) {
		count, err := r.long()
		if err != nil {
			return nil, fmt.Errorf("block count: %w", err)
		}
		size, err := r.long()
		if err != nil {
			return nil, fmt.Errorf("block size: %w", err)
		}
		if count < 0 || size < 0 || size > int64(len(b)-r.pos) {
			return nil, fmt.Errorf("corrupt block header (count %d, size %d)", count, size)
		}
		raw := b[r.pos : r.pos+int(size)]
		r.pos += int(size)
		var sync [16]byte
		if err := r.read(sync[:]); err != nil {
			return nil, fmt.Errorf("block sync: %w", err)
		}
		if sync != f.sync {
			return nil, errors.New("block sync marker does not match the header's")
		}
		data, err := decompressAvroBlock(f.codecName, raw)
		if err != nil {
			return nil, err
		}
		for i := int64(0); i < count; i++ {
			native, rest, err := codec.NativeFromBinary(data)
			if err != nil {
				return nil, fmt.Errorf("record %d: %w", len(f.records), err)
			}
			f.records = append(f.records, native)
			data = rest
		}
		if len(data) != 0 {
			return nil, fmt.Errorf("%d bytes left over in a block", len(data))
		}
		f.blockSizes = append(f.blockSizes, int(count))
	}
	return f, nil
}

// encode writes the file again: same header entries in the same order, same
// codec, same sync marker, same records per block.
func (f *avroFile) encode() ([]byte, error) {
	var out bytes.Buffer
	out.Write(avroMagic)
	if len(f.meta) > 0 {
		out.Write(appendLong(nil, int64(len(f.meta))))
		for _, m := range f.meta {
			out.Write(appendBytes(nil, []byte(m.key)))
			out.Write(appendBytes(nil, m.value))
		}
	}
	out.Write(appendLong(nil, 0))
	out.Write(f.sync[:])
	next := 0
	blocks := f.blockSizes
	if sum(blocks) != len(f.records) {
		blocks = []int{len(f.records)}
	}
	for _, n := range blocks {
		if n == 0 {
			continue
		}
		var data []byte
		for _, rec := range f.records[next : next+n] {
			var err error
			data, err = f.codec.BinaryFromNative(data, rec)
			if err != nil {
				return nil, fmt.Errorf("encode record %d: %w", next, err)
			}
			next++
		}
		comp, err := compressAvroBlock(f.codecName, data)
		if err != nil {
			return nil, err
		}
		out.Write(appendLong(nil, int64(n)))
		out.Write(appendLong(nil, int64(len(comp))))
		out.Write(comp)
		out.Write(f.sync[:])
	}
	return out.Bytes(), nil
}

// rawCodec builds a codec that reads and writes values in their Avro
// physical form: logical types (decimal, date, timestamp...) are dropped
// from the schema it compiles, so bytes come back as they were written (a
// decimal in a fixed keeps its width). The file keeps the original schema
// text.
func rawCodec(schema string) (*goavro.Codec, error) {
	doc, err := parseJSON([]byte(schema))
	if err != nil {
		return nil, err
	}
	var strip func(v any)
	strip = func(v any) {
		switch t := v.(type) {
		case *jsonObject:
			kept := t.members[:0]
			for _, m := range t.members {
				if m.key == "logicalType" {
					continue
				}
				strip(m.value)
				kept = append(kept, m)
			}
			t.members = kept
		case []any:
			for _, e := range t {
				strip(e)
			}
		}
	}
	strip(doc)
	plain, err := encodeJSON(doc)
	if err != nil {
		return nil, err
	}
	return goavro.NewCodec(string(plain))
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

func decompressAvroBlock(codec string, raw []byte) ([]byte, error) {
	switch codec {
	case "", "null":
		return raw, nil
	case "deflate":
		out, err := io.ReadAll(flate.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return nil, fmt.Errorf("deflate block: %w", err)
		}
		return out, nil
	case "snappy":
		if len(raw) < 4 {
			return nil, errors.New("snappy block shorter than its checksum")
		}
		out, err := snappy.Decode(nil, raw[:len(raw)-4])
		if err != nil {
			return nil, fmt.Errorf("snappy block: %w", err)
		}
		if crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(raw[len(raw)-4:]) {
			return nil, errors.New("snappy block checksum mismatch")
		}
		return out, nil
	case "zstandard":
		dec, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer dec.Close()
		out, err := dec.DecodeAll(raw, nil)
		if err != nil {
			return nil, fmt.Errorf("zstandard block: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unsupported Avro codec %q", codec)
	}
}

func compressAvroBlock(codec string, data []byte) ([]byte, error) {
	switch codec {
	case "", "null":
		return data, nil
	case "deflate":
		var buf bytes.Buffer
		w, err := flate.NewWriter(&buf, flate.DefaultCompression)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case "snappy":
		out := snappy.Encode(nil, data)
		return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(data)), nil
	case "zstandard":
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			return nil, err
		}
		defer enc.Close()
		return enc.EncodeAll(data, nil), nil
	default:
		return nil, fmt.Errorf("unsupported Avro codec %q", codec)
	}
}

type avroReader struct {
	b   []byte
	pos int
}

func (r *avroReader) long() (int64, error) {
	var u uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, errors.New("varint too long")
		}
		if r.pos >= len(r.b) {
			return 0, io.ErrUnexpectedEOF
		}
		c := r.b[r.pos]
		r.pos++
		u |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

func (r *avroReader) bytes() ([]byte, error) {
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(r.b)-r.pos) {
		return nil, io.ErrUnexpectedEOF
	}
	v := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return v, nil
}

func (r *avroReader) read(dst []byte) error {
	if len(r.b)-r.pos < len(dst) {
		return io.ErrUnexpectedEOF
	}
	copy(dst, r.b[r.pos:])
	r.pos += len(dst)
	return nil
}

func appendLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

func appendBytes(dst, v []byte) []byte {
	dst = appendLong(dst, int64(len(v)))
	return append(dst, v...)
}

// Accessors for goavro's native form.

// unionValue unwraps {"branch": v}; nil stays nil.
func unionValue(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, inner := range m {
			return inner
		}
	}
	return v
}

// asInt64 reads an Avro int or long (possibly inside a union).
func asInt64(v any) (int64, bool) {
	switch t := unionValue(v).(type) {
	case int32:
		return int64(t), true
	case int64:
		return t, true
	case int:
		return int64(t), true
	}
	return 0, false
}

// asString reads an Avro string (possibly inside a union).
func asString(v any) (string, bool) {
	s, ok := unionValue(v).(string)
	return s, ok
}

// setUnionOrPlain stores v in field of rec, keeping the union wrapping the
// field had ({"string": old} stays {"string": new}).
func setUnionOrPlain(rec map[string]any, field string, v any) {
	if m, ok := rec[field].(map[string]any); ok && len(m) == 1 {
		for branch := range m {
			rec[field] = map[string]any{branch: v}
			return
		}
	}
	rec[field] = v
}
