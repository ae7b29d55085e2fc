package sideindex

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// keyCodec turns Values of one Iceberg type into order-preserving bytes
// ("memcomparable"): bytes.Compare of two encodings orders them as a
// total order of the type — for floats -Inf < … < -0 < +0 < … < +Inf <
// NaN (every NaN one key) — so sorted keys and literal ranges meet in one
// byte order.
type keyCodec struct {
	kind  value.Kind
	scale int32 // decimals: the table's scale
}

func newKeyCodec(t iceberg.Type) (keyCodec, error) {
	k, ok := value.KindOf(t)
	if !ok {
		return keyCodec{}, fmt.Errorf("type %s has no order", t)
	}
	c := keyCodec{kind: k}
	if d, ok := t.(iceberg.DecimalType); ok {
		c.scale = int32(d.Scale())
	}
	return c, nil
}

var (
	decMax = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1))
	decMin = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))
	two128 = new(big.Int).Lsh(big.NewInt(1), 128)
)

// appendKey appends the encoding of v; ok is false for a value outside
// the type's domain (which the caller treats per its side: a literal is
// clamped by clampKey, a stored value is an error).
func (c keyCodec) appendKey(dst []byte, v value.Value) ([]byte, bool) {
	if v.K != c.kind {
		return dst, false
	}
	switch c.kind {
	case value.Bool:
		return append(dst, byte(v.I&1)), true
	case value.Int:
		return binary.BigEndian.AppendUint64(dst, uint64(v.I)^(1<<63)), true
	case value.Float:
		f := v.F
		if math.IsNaN(f) {
			f = math.NaN()
		}
		b := math.Float64bits(f)
		if b>>63 == 1 {
			b = ^b
		} else {
			b ^= 1 << 63
		}
		return binary.BigEndian.AppendUint64(dst, b), true
	case value.Bytes:
		return append(dst, v.B...), true
	case value.Decimal:
		if v.D == nil || v.Scale > c.scale {
			return dst, false
		}
		x := v.D
		if v.Scale < c.scale {
			x = new(big.Int).Mul(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.scale-v.Scale)), nil))
		}
		if x.Cmp(decMax) > 0 || x.Cmp(decMin) < 0 {
			return dst, false
		}
		y := new(big.Int).Set(x)
		if y.Sign() < 0 {
			y.Add(y, two128)
		}
		var b [16]byte
		y.FillBytes(b[:])
		b[0] ^= 0x80
		return append(dst, b[:]...), true
	}
	return dst, false
}

// literalKey encodes a literal for a range bound, clamping decimals
// beyond the stored domain to its ends (every stored key lies between).
func (c keyCodec) literalKey(v value.Value) []byte {
	if b, ok := c.appendKey(nil, v); ok {
		return b
	}
	if c.kind == value.Decimal && v.D != nil {
		if v.D.Sign() < 0 {
			return make([]byte, 16)
		}
		b := make([]byte, 16)
		for i := range b {
			b[i] = 0xff
		}
		return b
	}
	return nil
}

// columnValues reads column in.Column of every row group through arrow-go
// and calls fn with each row's file-absolute position and Value (the
// oracle's conversion, so the index sees exactly what a reader sees).
func columnValues(ctx context.Context, in Input, rdr *file.Reader, fn func(pos int64, v value.Value, null bool) error) error {
	return columnChunks(ctx, in, rdr, func(first int64, leaf arrow.Array, nulls func(int) bool) error {
		for r := 0; r < leaf.Len(); r++ {
			if nulls(r) {
				if err := fn(first+int64(r), value.Value{}, true); err != nil {
					return err
				}
				continue
			}
			v, err := value.FromArrow(leaf, r, in.Type)
			if err != nil {
				return err
			}
			if err := fn(first+int64(r), v, false); err != nil {
				return err
			}
		}
		return nil
	})
}

// columnChunks reads column in.Column of every row group through arrow-go
// and calls fn with each decoded leaf array, the file-absolute position of
// its first row and its row nullness.
func columnChunks(ctx context.Context, in Input, rdr *file.Reader, fn func(first int64, leaf arrow.Array, nulls func(int) bool) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decode %s: %v", short(in.File), p)
		}
	}()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	field, err := fr.Manifest.GetColumnField(in.Column)
	if err != nil {
		return err
	}
	for p := fr.Manifest.GetParent(field); p != nil; p = fr.Manifest.GetParent(p) {
		field = p
	}
	top := -1
	for i := range fr.Manifest.Fields {
		if &fr.Manifest.Fields[i] == field {
			top = i
		}
	}
	if top < 0 {
		return fmt.Errorf("column %d has no top-level field", in.Column)
	}
	pos := int64(0)
	for rg := 0; rg < rdr.NumRowGroups(); rg++ {
		cr, err := fr.GetFieldReader(ctx, top, map[int]bool{in.Column: true}, []int{rg})
		if err != nil {
			return err
		}
		chunked, err := cr.NextBatch(rdr.MetaData().RowGroup(rg).NumRows())
		cr.Release()
		if err != nil {
			return err
		}
		for _, a := range chunked.Chunks() {
			leaf, nulls := leafOf(a)
			if leaf.Len() != a.Len() {
				chunked.Release()
				return fmt.Errorf("column %d: leaf of %d rows in a chunk of %d", in.Column, leaf.Len(), a.Len())
			}
			if err := fn(pos, leaf, nulls); err != nil {
				chunked.Release()
				return err
			}
			pos += int64(a.Len())
		}
		chunked.Release()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if pos != in.Footer.NumRows() {
		return fmt.Errorf("read %d rows of column %d, the footer says %d", pos, in.Column, in.Footer.NumRows())
	}
	return nil
}

// leafOf descends a struct array read with one included leaf to that
// leaf; a row is null when the leaf or any enclosing struct is.
func leafOf(a arrow.Array) (arrow.Array, func(int) bool) {
	s, ok := a.(*array.Struct)
	if !ok || s.NumField() != 1 {
		return a, a.IsNull
	}
	leaf, inner := leafOf(s.Field(0))
	return leaf, func(i int) bool { return s.IsNull(i) || inner(i) }
}
