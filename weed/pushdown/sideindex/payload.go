package sideindex

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/puffin"
)

// FormatVersion is the payload format every kind writes; Open refuses
// any other.
const FormatVersion = 1

// Keys of the header and checksum, in Parquet key-value metadata (btree)
// and Puffin footer properties (bloom, page_index).
const (
	headerKey   = "lakeweed.sideindex.header"
	checksumKey = "lakeweed.sideindex.sha256"
)

// maxPayloadBytes refuses absurd payloads before parsing them.
const maxPayloadBytes = 1 << 30

func headerOf(in Input, kind string) Header {
	return Header{FormatVersion: FormatVersion, Kind: kind, FieldID: in.FieldID, IcebergType: in.Type.String(),
		DataFile: in.File, Identity: in.Identity, Params: in.Params, Rows: in.Footer.NumRows()}
}

func (h Header) encode() string {
	b, _ := json.Marshal(h) // map keys are sorted: canonical
	return string(b)
}

// checkHeader parses the recorded header and compares it with want.
func checkHeader(recorded string, want Header) (Header, error) {
	var got Header
	dec := json.NewDecoder(bytes.NewReader([]byte(recorded)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		return Header{}, fmt.Errorf("side index header is not readable: %v", err)
	}
	if got.FormatVersion != FormatVersion {
		return Header{}, fmt.Errorf("side index format version %d is not understood (this build reads %d)", got.FormatVersion, FormatVersion)
	}
	if want.FormatVersion == 0 {
		want.FormatVersion = FormatVersion
	}
	mismatch := func(what string, g, w any) error {
		return fmt.Errorf("side index %s is %s, expected %s", what, short(fmt.Sprint(g)), short(fmt.Sprint(w)))
	}
	switch {
	case got.FormatVersion != want.FormatVersion:
		return Header{}, mismatch("format version", got.FormatVersion, want.FormatVersion)
	case got.Kind != want.Kind:
		return Header{}, mismatch("kind", got.Kind, want.Kind)
	case got.FieldID != want.FieldID:
		return Header{}, mismatch("field id", got.FieldID, want.FieldID)
	case got.IcebergType != want.IcebergType:
		return Header{}, mismatch("type", got.IcebergType, want.IcebergType)
	case got.DataFile != want.DataFile:
		return Header{}, mismatch("data file", got.DataFile, want.DataFile)
	case got.Identity != want.Identity:
		return Header{}, mismatch("data file identity", got.Identity, want.Identity)
	case got.Rows != want.Rows:
		return Header{}, mismatch("row count", got.Rows, want.Rows)
	case !maps.Equal(nonNil(got.Params), nonNil(want.Params)):
		return Header{}, mismatch("build parameters", got.Params, want.Params)
	}
	return got, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// short quotes at most a short prefix of s (messages never echo
// unbounded input).
func short(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}

// digest is the hex SHA-256 of parts, each length-prefixed.
func digest(parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		putUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func putUint64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// intParam reads an integer build parameter, def when absent.
func intParam(p map[string]string, key string, def, lo, hi int64) (int64, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("build parameter %s=%s: want an integer in [%d, %d]", key, short(s), lo, hi)
	}
	return v, nil
}

// soleIntParam reads the one integer parameter of a kind that takes no
// other.
func soleIntParam(p map[string]string, key string, def, lo, hi int64) (int64, error) {
	if err := checkParams(p, key); err != nil {
		return 0, err
	}
	return intParam(p, key, def, lo, hi)
}

// floatParam reads a float build parameter in (lo, hi), def when absent.
func floatParam(p map[string]string, key string, def, lo, hi float64) (float64, error) {
	s, ok := p[key]
	if !ok {
		return def, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > lo && v < hi) {
		return 0, fmt.Errorf("build parameter %s=%s: want a number in (%g, %g)", key, short(s), lo, hi)
	}
	return v, nil
}

// checkParams refuses parameters a kind does not know, naming the ones
// it does.
func checkParams(p map[string]string, known ...string) error {
	for k := range p {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return fmt.Errorf("unknown build parameter %s: this kind takes none", short(k))
			}
			return fmt.Errorf("unknown build parameter %s: want %s", short(k), strings.Join(known, ", "))
		}
	}
	return nil
}

// puffinBlob is one blob of a Puffin payload.
type puffinBlob struct {
	typ   string
	props map[string]string
	data  []byte
}

// writePuffin writes blobs and the header; the checksum covers every
// blob's bytes and properties, in order.
func writePuffin(h Header, fileProps map[string]string, blobs []puffinBlob) ([]byte, error) {
	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		return nil, err
	}
	if err := w.SetCreatedBy("lakeweed sideindex"); err != nil {
		return nil, err
	}
	for _, b := range blobs {
		if _, err := w.AddBlob(puffin.BlobMetadataInput{Type: puffin.BlobType(b.typ), SnapshotID: -1, SequenceNumber: -1,
			Fields: []int32{int32(h.FieldID)}, Properties: b.props}, b.data); err != nil {
			return nil, err
		}
	}
	props := maps.Clone(fileProps)
	if props == nil {
		props = map[string]string{}
	}
	props[headerKey] = h.encode()
	props[checksumKey] = puffinDigest(props, blobs)
	if err := w.AddProperties(props); err != nil {
		return nil, err
	}
	if err := w.Finish(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// puffinDigest covers the file properties of lakeweed (but the checksum;
// the writer adds its own, e.g. created-by) and every
// blob (type, properties, bytes).
func puffinDigest(props map[string]string, blobs []puffinBlob) string {
	p := map[string]string{}
	for k, v := range props {
		if strings.HasPrefix(k, "lakeweed.") && k != checksumKey {
			p[k] = v
		}
	}
	pj, _ := json.Marshal(p)
	parts := [][]byte{pj}
	for _, b := range blobs {
		bj, _ := json.Marshal(b.props)
		parts = append(parts, []byte(b.typ), bj, b.data)
	}
	return digest(parts...)
}

// readPuffin opens a Puffin payload, checks its header against want and
// its checksum, and returns its file properties and blobs.
func readPuffin(payload []byte, want Header) (Header, map[string]string, []puffinBlob, error) {
	fail := func(err error) (Header, map[string]string, []puffinBlob, error) {
		return Header{}, nil, nil, fmt.Errorf("%s side index: %w", want.Kind, err)
	}
	if len(payload) > maxPayloadBytes {
		return fail(fmt.Errorf("payload of %d bytes is too large", len(payload)))
	}
	r, err := openPuffin(payload)
	if err != nil {
		return fail(err)
	}
	props := r.Properties()
	h, err := checkHeader(props[headerKey], want)
	if err != nil {
		return fail(err)
	}
	var blobs []puffinBlob
	for _, m := range r.Blobs() {
		if m.CompressionCodec != nil {
			return fail(fmt.Errorf("blob compression %s is not supported", short(*m.CompressionCodec)))
		}
		data, err := r.ReadBlobByMetadata(m)
		if err != nil {
			return fail(err)
		}
		blobs = append(blobs, puffinBlob{typ: string(m.Type), props: m.Properties, data: data})
	}
	if sum := puffinDigest(props, blobs); sum != props[checksumKey] {
		return fail(errors.New("checksum mismatch: the payload is corrupt"))
	}
	return h, props, blobs, nil
}

func openPuffin(payload []byte) (r *puffin.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("malformed Puffin file: %v", p)
		}
	}()
	return puffin.NewReader(bytes.NewReader(payload))
}

// blobInt reads an integer blob property.
func blobInt(b puffinBlob, key string) (int64, error) {
	v, err := strconv.ParseInt(b.props[key], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("blob %s: property %s=%s is not an integer", short(b.typ), key, short(b.props[key]))
	}
	return v, nil
}

// sourceReader adapts a footer.Source to io.ReaderAt + io.Seeker (what
// arrow-go's file reader takes), reading with ctx.
type sourceReader struct {
	ctx context.Context
	src interface {
		ReadAt(ctx context.Context, p []byte, off int64) (int, error)
		Size() int64
	}
	pos int64
}

func (s *sourceReader) ReadAt(p []byte, off int64) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	if off >= s.src.Size() {
		return 0, io.EOF
	}
	n, err := s.src.ReadAt(s.ctx, p, off)
	if n < len(p) && err == nil {
		err = io.EOF
	}
	return n, err
}

func (s *sourceReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		s.pos = offset
	case io.SeekCurrent:
		s.pos += offset
	case io.SeekEnd:
		s.pos = s.src.Size() + offset
	}
	return s.pos, nil
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.ReadAt(p, s.pos)
	s.pos += int64(n)
	return n, err
}
