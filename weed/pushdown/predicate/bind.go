package predicate

import (
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Limits bound the shape of a predicate a request may carry.
type Limits struct {
	MaxDepth    int // nesting depth of AND/OR/NOT
	MaxLeaves   int // comparisons in the whole predicate
	MaxLiterals int // literals in the whole predicate (IN lists)
}

// DefaultLimits are generous for real queries and stop pathological ones.
var DefaultLimits = Limits{MaxDepth: 64, MaxLeaves: 10_000, MaxLiterals: 100_000}

// BindError is a predicate that does not bind to the schema.
type BindError struct{ Msg string }

func (e *BindError) Error() string { return e.Msg }

func bindErr(format string, args ...any) error {
	return &BindError{Msg: fmt.Sprintf(format, args...)}
}

// fieldInfo describes where a field sits in a schema.
type fieldInfo struct {
	field    iceberg.NestedField
	path     string
	repeated bool // inside a list or map: not filterable
}

func indexSchema(s *iceberg.Schema) map[int]fieldInfo {
	out := map[int]fieldInfo{}
	var walk func(fields []iceberg.NestedField, prefix string, repeated bool)
	walk = func(fields []iceberg.NestedField, prefix string, repeated bool) {
		for _, f := range fields {
			p := f.Name
			if prefix != "" {
				p = prefix + "." + f.Name
			}
			out[f.ID] = fieldInfo{field: f, path: p, repeated: repeated}
			switch t := f.Type.(type) {
			case *iceberg.StructType:
				walk(t.FieldList, p, repeated)
			case *iceberg.ListType:
				walk([]iceberg.NestedField{t.ElementField()}, p, true)
			case *iceberg.MapType:
				walk([]iceberg.NestedField{t.KeyField(), t.ValueField()}, p, true)
			}
		}
	}
	walk(s.Fields(), "", false)
	return out
}

// Bind checks e against schema s and converts its literals to the fields'
// types. It refuses unknown field ids, fields inside lists or maps, types a
// predicate cannot compare, literal type mismatches and shapes beyond lim.
// The result has every NOT pushed to the leaves.
func Bind(e Expr, s *iceberg.Schema, lim Limits) (Expr, error) {
	if e == nil {
		return Const{Value: true}, nil
	}
	if d := Depth(e); lim.MaxDepth > 0 && d > lim.MaxDepth {
		return nil, bindErr("predicate nests %d levels deep, the limit is %d", d, lim.MaxDepth)
	}
	idx := indexSchema(s)
	leaves, lits := 0, 0
	var bind func(Expr) (Expr, error)
	bind = func(e Expr) (Expr, error) {
		switch x := e.(type) {
		case And:
			kids, err := bindAll(x.Kids, bind)
			return And{Kids: kids}, err
		case Or:
			kids, err := bindAll(x.Kids, bind)
			return Or{Kids: kids}, err
		case Not:
			k, err := bind(x.Kid)
			return Not{Kid: k}, err
		case Const, Residual:
			return x, nil
		case *Leaf:
			leaves++
			lits += len(x.Raw)
			if lim.MaxLeaves > 0 && leaves > lim.MaxLeaves {
				return nil, bindErr("predicate has more than %d comparisons", lim.MaxLeaves)
			}
			if lim.MaxLiterals > 0 && lits > lim.MaxLiterals {
				return nil, bindErr("predicate has more than %d literals", lim.MaxLiterals)
			}
			return bindLeaf(x, idx, s.ID)
		}
		return nil, bindErr("unsupported expression %T", e)
	}
	out, err := bind(e)
	if err != nil {
		return nil, err
	}
	return Normalize(out), nil
}

func bindAll(kids []Expr, bind func(Expr) (Expr, error)) ([]Expr, error) {
	out := make([]Expr, len(kids))
	for i, k := range kids {
		b, err := bind(k)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func bindLeaf(l *Leaf, idx map[int]fieldInfo, schemaID int) (Expr, error) {
	fi, ok := idx[l.FieldID]
	if !ok {
		return nil, bindErr("field id %d is not in schema %d", l.FieldID, schemaID)
	}
	if fi.repeated {
		return nil, bindErr("field %s (id %d) is inside a list or map; predicates can only reference top-level or struct fields", fi.path, l.FieldID)
	}
	t := fi.field.Type
	if l.Op == OpArrayContains {
		return bindArrayContains(l, fi)
	}
	if _, ok := value.KindOf(t); !ok {
		return nil, bindErr("field %s (id %d) has type %s, which a predicate cannot compare", fi.path, l.FieldID, t)
	}
	out := &Leaf{FieldID: l.FieldID, Name: fi.path, Op: l.Op, Negated: l.Negated, Type: t, Raw: l.Raw}
	switch l.Op {
	case OpIsNull:
		if len(l.Raw) != 0 {
			return nil, bindErr("IS NULL on %s takes no literal", fi.path)
		}
		return out, nil
	case OpIsNaN:
		if len(l.Raw) != 0 {
			return nil, bindErr("IS NAN on %s takes no literal", fi.path)
		}
		if !value.IsFloat(t) {
			return nil, bindErr("IS NAN on %s: the field has type %s, not float or double", fi.path, t)
		}
		return out, nil
	case OpStartsWith, OpLike, OpILike:
		if _, ok := t.(iceberg.StringType); !ok {
			return nil, bindErr("%s on %s: the field has type %s, not string", l.Op, fi.path, t)
		}
		if len(l.Raw) != 1 {
			return nil, bindErr("%s on %s takes one literal", l.Op, fi.path)
		}
	case OpIn:
		if len(l.Raw) == 0 {
			return nil, bindErr("IN on %s has an empty list", fi.path)
		}
	case OpEq, OpLt, OpLtEq, OpGt, OpGtEq:
		if len(l.Raw) != 1 {
			return nil, bindErr("%s on %s takes one literal, got %d", l.Op, fi.path, len(l.Raw))
		}
	default:
		return nil, bindErr("unknown operator %d on %s", l.Op, fi.path)
	}
	for _, raw := range l.Raw {
		if raw == nil {
			return nil, bindErr("%s on %s has a NULL literal; use IS NULL", l.Op, fi.path)
		}
		v, err := value.FromLiteral(t, raw)
		if err != nil {
			return nil, bindErr("%s on %s: %v", l.Op, fi.path, err)
		}
		if v.IsNaN() && l.Op != OpEq && l.Op != OpIn {
			// Ordering against NaN differs between engines; evaluate on rows.
			return Residual{Reason: fmt.Sprintf("%s on %s with a NaN literal", l.Op, fi.path)}, nil
		}
		out.Lits = append(out.Lits, v)
	}
	if out.Op == OpIn {
		out.in = newSortedIn(out.Lits)
	}
	return out, nil
}

// bindArrayContains binds ARRAY_CONTAINS(list, v): the field is a list of
// a comparable primitive and v converts to the element type.
func bindArrayContains(l *Leaf, fi fieldInfo) (Expr, error) {
	lt, ok := fi.field.Type.(*iceberg.ListType)
	if !ok {
		return nil, bindErr("ARRAY_CONTAINS on %s: the field has type %s, not a list", fi.path, fi.field.Type)
	}
	if _, ok := value.KindOf(lt.Element); !ok {
		return nil, bindErr("ARRAY_CONTAINS on %s: elements of type %s cannot be compared", fi.path, lt.Element)
	}
	if len(l.Raw) != 1 || l.Raw[0] == nil {
		return nil, bindErr("ARRAY_CONTAINS on %s takes one non-NULL literal", fi.path)
	}
	v, err := value.FromLiteral(lt.Element, l.Raw[0])
	if err != nil {
		return nil, bindErr("ARRAY_CONTAINS on %s: %v", fi.path, err)
	}
	if v.IsNaN() {
		return Residual{Reason: fmt.Sprintf("ARRAY_CONTAINS on %s with a NaN literal", fi.path)}, nil
	}
	return &Leaf{FieldID: l.FieldID, Name: fi.path, Op: l.Op, Negated: l.Negated, Type: fi.field.Type, Raw: l.Raw, Lits: []value.Value{v}}, nil
}
