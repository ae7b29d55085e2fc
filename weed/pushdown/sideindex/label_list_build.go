package sideindex

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// labelListKind maps every distinct element of a list column (tags,
// labels) to the rows whose list holds it, with classes of their own for
// a NULL list, an empty list, a list holding a NULL element and a NaN
// element (a postings payload, see postings.go; a row whose list holds an
// element twice is listed once). ARRAY_CONTAINS(list, v) and its negation
// are answered exactly under the predicate's three-valued semantics.
type labelListKind struct{}

func init() { register(labelListKind{}) }

func (labelListKind) Name() string { return "label_list" }

func (labelListKind) Supports(t iceberg.Type) bool {
	lt, ok := t.(*iceberg.ListType)
	if !ok {
		return false
	}
	_, ok = value.KindOf(lt.Element)
	return ok
}

// listElementType parses the element type of "list<…>".
func listElementType(s string) (iceberg.Type, error) {
	inner, ok := strings.CutPrefix(s, "list<")
	if inner, ok2 := strings.CutSuffix(inner, ">"); ok && ok2 {
		return parseType(inner)
	}
	return nil, fmt.Errorf("%s is not a list type", short(s))
}

// CheckParams: the kind takes no build parameters.
func (labelListKind) CheckParams(p map[string]string) error { return checkParams(p) }

func (k labelListKind) Build(ctx context.Context, in Input) ([]byte, error) {
	if in.Footer == nil || in.Footer.Meta == nil || in.Footer.Meta.Schema == nil || in.Source == nil {
		return nil, fmt.Errorf("label_list: no parsed footer or source for %s", short(in.File))
	}
	if in.Type == nil || !k.Supports(in.Type) {
		return nil, fmt.Errorf("label_list index cannot index field %d of type %v: it indexes lists of primitives", in.FieldID, in.Type)
	}
	if in.Column < 0 || in.Column >= in.Footer.Meta.Schema.NumColumns() || in.Footer.Meta.Schema.Column(in.Column).MaxRepetitionLevel() != 1 {
		return nil, fmt.Errorf("label_list: column %d of %s is not the element column of a flat list", in.Column, short(in.File))
	}
	if err := k.CheckParams(in.Params); err != nil {
		return nil, err
	}
	elemType := in.Type.(*iceberg.ListType).Element
	codec, err := newKeyCodec(elemType)
	if err != nil {
		return nil, err
	}
	rdr, err := openData(in, &sourceReader{ctx: ctx, src: in.Source})
	if err != nil {
		return nil, err
	}
	b := newPostingsBuilder(codec, 0)
	var scratch []byte
	err = columnChunks(ctx, in, rdr, func(first int64, leaf arrow.Array, isNull func(int) bool) error {
		list, ok := leaf.(array.ListLike)
		if !ok {
			return fmt.Errorf("column %d is stored as %s, not a list", in.Column, leaf.DataType())
		}
		elems := list.ListValues()
		for r := 0; r < list.Len(); r++ {
			pos := first + int64(r)
			if isNull(r) {
				b.addClass(classNull, pos)
				continue
			}
			lo, hi := list.ValueOffsets(r)
			if lo == hi {
				b.addClass(classEmpty, pos)
			}
			nullElem := false
			for i := lo; i < hi; i++ {
				if elems.IsNull(int(i)) {
					if !nullElem {
						b.addClass(classNullElem, pos)
						nullElem = true
					}
					continue
				}
				v, err := value.FromArrow(elems, int(i), elemType)
				if err != nil {
					return err
				}
				if scratch, ok = b.add(v, pos, scratch); !ok {
					return fmt.Errorf("row %d of %s holds %s, outside type %s", pos, short(in.File), short(v.String()), elemType)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("label_list: %w", err)
	}
	return writePostings(ctx, headerOf(in, k.Name()), elemType, b.postings())
}
