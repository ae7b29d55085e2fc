package sideindex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Restamp rewrites a payload of kind under header h (kind and format
// version set to the current ones) with every checksum recomputed: the
// forgery anyone who can write a payload's file can make, since headers
// and checksums only catch accidents. The result passes every check
// Kind.Open makes for h; only the registry's Commit tells it from the
// committed payload. Tests and fuzz seeds forge payloads with it.
func Restamp(ctx context.Context, kind string, payload []byte, h Header) ([]byte, error) {
	k, ok := Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("unknown side-index kind %s", short(kind))
	}
	old, err := RecordedHeader(payload)
	if err != nil {
		return nil, err
	}
	h.Kind, h.FormatVersion = kind, FormatVersion
	switch k.(type) {
	case bloomKind, pageIndexKind:
		_, props, blobs, err := readPuffin(payload, old)
		if err != nil {
			return nil, err
		}
		fileProps := map[string]string{}
		for key, v := range props {
			if strings.HasPrefix(key, "lakeweed.") && key != headerKey && key != checksumKey {
				fileProps[key] = v
			}
		}
		return writePuffin(h, fileProps, blobs)
	}
	idx, err := k.Open(ctx, payload, old)
	if err != nil {
		return nil, err
	}
	switch x := idx.(type) {
	case *ivfIndex:
		return writeIVF(h, x.ix)
	case *btreeIndex:
		return x.restamp(ctx, h)
	case interface{ postings() *postingsIndex }:
		return x.postings().restamp(ctx, h)
	}
	return nil, fmt.Errorf("%s payloads cannot be restamped", k.Name())
}

// RecordedHeader is the header a payload records (unchecked).
func RecordedHeader(payload []byte) (Header, error) {
	var raw string
	switch {
	case bytes.HasPrefix(payload, []byte("PFA1")):
		r, err := openPuffin(payload)
		if err != nil {
			return Header{}, err
		}
		raw = r.Properties()[headerKey]
	case bytes.HasPrefix(payload, []byte("PAR1")):
		rdr, err := openPayloadParquet(payload)
		if err != nil {
			return Header{}, err
		}
		if v := rdr.MetaData().KeyValueMetadata().FindValue(headerKey); v != nil {
			raw = *v
		}
	case bytes.HasPrefix(payload, []byte("ARROW1")):
		r, err := ipc.NewFileReader(bytes.NewReader(payload))
		if err != nil {
			return Header{}, fmt.Errorf("not an Arrow IPC file: %v", err)
		}
		md := r.Schema().Metadata()
		if i := md.FindKey(headerKey); i >= 0 {
			raw = md.Values()[i]
		}
		r.Close()
	default:
		return Header{}, fmt.Errorf("not a side-index payload")
	}
	var h Header
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return Header{}, fmt.Errorf("side index header is not readable: %v", err)
	}
	return h, nil
}

func (i bitmapIndex) postings() *postingsIndex    { return i.postingsIndex }
func (i ngramIndex) postings() *postingsIndex     { return i.postingsIndex }
func (i labelListIndex) postings() *postingsIndex { return i.postingsIndex }

// restamp writes the index's rows under h.
func (p *postingsIndex) restamp(ctx context.Context, h Header) ([]byte, error) {
	codec, err := newKeyCodec(p.keyType)
	if err != nil {
		return nil, err
	}
	rows := append([]posting(nil), p.values...)
	for c := int32(1); c < classCount; c++ {
		if bm := p.classes[c]; bm != nil {
			r := posting{class: c, bm: bm}
			if c == classNaN {
				r.key = value.OfFloat(math.NaN())
				r.enc, _ = codec.appendKey(nil, r.key)
			}
			rows = append(rows, r)
		}
	}
	return writePostings(ctx, h, p.keyType, rows)
}

// restamp decodes every row group and writes them again under h.
func (b *btreeIndex) restamp(ctx context.Context, h Header) ([]byte, error) {
	type row struct {
		dg *decodedGroup
		r  int
	}
	var nulls []int64
	var keyed []row
	var fr *pqarrow.FileReader
	per := int64(1)
	for gi := range b.groups {
		dg, err := b.group(ctx, &fr, gi)
		if err != nil {
			return nil, err
		}
		per = max(per, b.groups[gi].Rows)
		for r := range dg.keys.Len() {
			if dg.keys.IsNull(r) {
				nulls = append(nulls, dg.pos[r])
			} else {
				keyed = append(keyed, row{dg, r})
			}
		}
	}
	rows := btreeRows{nulls: nulls, n: len(keyed),
		key: func(i int, dst []byte) []byte { return append(dst, keyed[i].dg.key(keyed[i].r)...) },
		pos: func(i int) int64 { return keyed[i].dg.pos[keyed[i].r] },
		appendKey: func(bld array.Builder, i int) error {
			v, err := value.FromArrow(keyed[i].dg.keys, keyed[i].r, b.typ)
			if err != nil {
				return err
			}
			return appendArrowKey(bld, v)
		}}
	return btreeKind{}.write(ctx, h, b.typ, per, rows)
}
