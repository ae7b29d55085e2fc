// Package colfilter evaluates a bound predicate column by column over a
// batch of candidate rows, giving the rows where it is TRUE: the one
// vectorized evaluator of the connector (pages it decoded) and the volume
// servers (ScanRows, filtered vector search: row groups decoded next to
// the data).
//
//	candidates (rows of a row group, minus deletes)
//	   │ per predicate field: a Vector — a typed Arrow leaf array with each
//	   │ candidate's position in it and the NULLs of its enclosing structs,
//	   │ or a constant (an initial-default, an identity-partition value, NULL)
//	   ▼
//	Filter.SelectRows: And / Or over active sets — a child is evaluated
//	only on the rows whose outcome it can still change (as predicate.Eval
//	short-circuits per row)
//	   ▼
//	leaf kernels per Arrow type (ints, timestamps, floats, strings, binary,
//	decimals; dictionaries through their values), everything else through
//	value.FromArrow + predicate.Eval on that leaf
//	   ▼
//	selection: the candidates' indices where the predicate is TRUE
//
// LeafRowsOf / LeavesRowsOf are the shortcut for one leaf or an And of
// leaves over whole arrays (every row a candidate): tested in place.
//
// predicate.Eval under IEEE semantics is the definition; the kernels are
// checked against it by a differential test (filter_test.go). A value that
// does not convert fails the evaluation (Vector.ErrAt says where), as a
// row-wise evaluation would.
package colfilter

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// Vector is one predicate field over a batch of n candidates.
type Vector struct {
	Type iceberg.Type // the field's Iceberg type
	// Arr (nil: a constant) is the leaf array; Pos[i] the position of
	// candidate i in it (-1: not decoded there, see ErrAt).
	Arr arrow.Array
	Pos []int32
	// Null[i]: candidate i is NULL through an enclosing struct (nil: none).
	Null []bool
	// constant: every candidate reads Val, or NULL when IsNull.
	Val    value.Value
	IsNull bool
	// ErrAt is the error of reading candidate i: at Pos -1 (Outside
	// says why), or at every candidate when Broken is set, or when a
	// value does not convert.
	ErrAt   func(i int, err error) error
	Outside string
	Broken  error
}

// Batch hands the filter its vectors.
type Batch struct {
	N      int                  // candidates
	Vector func(id int) *Vector // the vector of a field id, memoized by the caller
}

// Filter evaluates a bound predicate over batches (one goroutine at a time).
type Filter struct {
	Expr predicate.Expr
	// Scratch: the batch's buffers come from the scratch pools and go
	// back when SelectRows returns (the vectors' Pos slices too), but for
	// the selection, which its caller releases (PosScratch.Put) when done
	// with it
	Scratch bool
	// free holds scratch buffers of the current batch.
	free [][]predicate.Tri
	sels [][]int32
}

// SelectRows returns the candidates (indices 0..N-1) where the predicate is TRUE.
func (f *Filter) SelectRows(b *Batch) ([]int32, error) {
	if c, ok := f.Expr.(predicate.Const); ok {
		if !c.Value {
			return nil, nil
		}
		return Positions(b.N), nil
	}
	var all []int32
	var res []predicate.Tri
	vs := map[int]*Vector{}
	if f.Scratch {
		all, res = PosScratch.Get(b.N), triScratch.Get(b.N)
		for i := range all {
			all[i] = int32(i)
		}
		defer func() {
			triScratch.Put(res)
			for _, v := range vs {
				PosScratch.Put(v.Pos)
			}
		}()
	} else {
		all, res = Positions(b.N), make([]predicate.Tri, b.N)
	}
	ev := &evaluation{f: f, b: b, vectors: vs}
	if err := ev.eval(f.Expr, all, res); err != nil {
		if f.Scratch {
			PosScratch.Put(all)
		}
		return nil, err
	}
	out := all[:0]
	for i, t := range res {
		if t == predicate.True {
			out = append(out, int32(i))
		}
	}
	return out, nil
}

// Positions are 0..n-1 (the positions of a whole array).
func Positions(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

type evaluation struct {
	f       *Filter
	b       *Batch
	vectors map[int]*Vector
}

func (ev *evaluation) tris() []predicate.Tri {
	if n := len(ev.f.free); n > 0 {
		t := ev.f.free[n-1]
		ev.f.free = ev.f.free[:n-1]
		if len(t) >= ev.b.N {
			return t[:ev.b.N]
		}
	}
	return make([]predicate.Tri, ev.b.N)
}

func (ev *evaluation) sel() []int32 {
	if n := len(ev.f.sels); n > 0 {
		s := ev.f.sels[n-1]
		ev.f.sels = ev.f.sels[:n-1]
		return s[:0]
	}
	return make([]int32, 0, ev.b.N)
}

// eval writes res[i] = e(candidate i) for every i in sel.
func (ev *evaluation) eval(e predicate.Expr, sel []int32, res []predicate.Tri) error {
	switch x := e.(type) {
	case predicate.Const:
		fill(res, sel, tri(x.Value))
		return nil
	case predicate.Residual:
		fill(res, sel, predicate.True)
		return nil
	case predicate.Not:
		if err := ev.eval(x.Kid, sel, res); err != nil {
			return err
		}
		for _, i := range sel {
			res[i] = not(res[i])
		}
		return nil
	case predicate.And:
		return ev.junction(x.Kids, sel, res, predicate.True, predicate.False)
	case predicate.Or:
		return ev.junction(x.Kids, sel, res, predicate.False, predicate.True)
	case *predicate.Leaf:
		return ev.leaf(x, sel, res)
	}
	fill(res, sel, predicate.Unknown)
	return nil
}

// junction is And (start TRUE, decided by FALSE) or Or (start FALSE,
// decided by TRUE): each child runs on the rows not yet decided.
func (ev *evaluation) junction(kids []predicate.Expr, sel []int32, res []predicate.Tri, start, decides predicate.Tri) error {
	fill(res, sel, start)
	tmp := ev.tris()
	defer func() { ev.f.free = append(ev.f.free, tmp) }()
	active := sel
	var owned []int32
	for _, k := range kids {
		if len(active) == 0 {
			break
		}
		if err := ev.eval(k, active, tmp); err != nil {
			return err
		}
		next := ev.sel()
		for _, i := range active {
			switch tmp[i] {
			case decides:
				res[i] = decides
				continue
			case predicate.Unknown:
				res[i] = predicate.Unknown
			}
			next = append(next, i)
		}
		if owned != nil {
			ev.f.sels = append(ev.f.sels, owned)
		}
		owned, active = next, next
	}
	if owned != nil {
		ev.f.sels = append(ev.f.sels, owned)
	}
	return nil
}

func fill(res []predicate.Tri, sel []int32, t predicate.Tri) {
	for _, i := range sel {
		res[i] = t
	}
}

func tri(b bool) predicate.Tri {
	if b {
		return predicate.True
	}
	return predicate.False
}

func not(t predicate.Tri) predicate.Tri {
	switch t {
	case predicate.True:
		return predicate.False
	case predicate.False:
		return predicate.True
	}
	return predicate.Unknown
}

// leafOn evaluates l (its operator, literals and negation) on one value:
// the definition every kernel agrees with.
func leafOn(l *predicate.Leaf, v value.Value, null bool) predicate.Tri {
	return predicate.Eval(l, func(int) (value.Value, bool) { return v, null }, predicate.IEEE)
}

func (ev *evaluation) leaf(l *predicate.Leaf, sel []int32, res []predicate.Tri) error {
	v, ok := ev.vectors[l.FieldID]
	if !ok {
		v = ev.b.Vector(l.FieldID)
		ev.vectors[l.FieldID] = v
	}
	if v.Broken != nil && len(sel) > 0 {
		return v.ErrAt(int(sel[0]), v.Broken)
	}
	for _, i := range sel {
		if v.Pos != nil && v.Pos[i] < 0 {
			return v.ErrAt(int(i), errors.New(v.Outside))
		}
	}
	ifNull := leafOn(l, value.Value{}, true)
	if v.Arr == nil {
		t := ifNull
		if !v.IsNull {
			t = leafOn(l, v.Val, false)
		}
		for _, i := range sel {
			if v.Null != nil && v.Null[i] {
				res[i] = ifNull
			} else {
				res[i] = t
			}
		}
		return nil
	}
	arr := v.Arr
	if ext, ok := arr.(array.ExtensionArray); ok {
		arr = ext.Storage() // a UUID's bytes, as value.FromArrow reads them
	}
	if d, ok := arr.(*array.Dictionary); ok {
		// the leaf on each dictionary value once, then by index
		dres, derr := dictionaryResults(l, v.Type, d)
		index := DictIndex(d)
		for _, i := range sel {
			p := int(v.Pos[i])
			switch {
			case (v.Null != nil && v.Null[i]) || d.IsNull(p):
				res[i] = ifNull
			case derr != nil:
				return v.ErrAt(int(i), derr)
			default:
				res[i] = dres[index(p)]
			}
		}
		return nil
	}
	match := kernel(l, arr, v.Type)
	var convErr error
	perValue := match == nil // the definition, which can fail on a value
	if match == nil {
		// no kernel for this type or operator: the definition, per value
		base := *l
		base.Negated = false
		match = func(p int) bool {
			val, err := valueAt(arr, p, v.Type)
			if err != nil {
				if convErr == nil {
					convErr = fmt.Errorf("%s value as %s: %w", arr.DataType(), v.Type, err)
				}
				return false
			}
			return leafOn(&base, val, false) == predicate.True
		}
	}
	whenTrue, whenFalse := predicate.True, predicate.False
	if l.Negated {
		whenTrue, whenFalse = predicate.False, predicate.True
	}
	if v.Null == nil && arr.NullN() == 0 && convErr == nil && !perValue {
		// no NULLs, a kernel that cannot fail: one test per candidate
		for _, i := range sel {
			if match(int(v.Pos[i])) {
				res[i] = whenTrue
			} else {
				res[i] = whenFalse
			}
		}
		return nil
	}
	for _, i := range sel {
		p := int(v.Pos[i])
		if (v.Null != nil && v.Null[i]) || arr.IsNull(p) {
			res[i] = ifNull
			continue
		}
		if match(p) {
			res[i] = whenTrue
		} else {
			res[i] = whenFalse
		}
		if convErr != nil {
			return v.ErrAt(int(i), convErr)
		}
	}
	return nil
}

// valueAt is value.FromArrow, but a string or binary value read as one
// views the array's bytes instead of copying them: it lives only while
// one leaf is evaluated on it (the copy was a fifth of a row-wise scan's
// evaluation time).
func valueAt(arr arrow.Array, p int, typ iceberg.Type) (value.Value, error) {
	if typ.Equals(iceberg.PrimitiveTypes.String) || typ.Equals(iceberg.PrimitiveTypes.Binary) {
		switch x := arr.(type) {
		case *array.String:
			s := x.Value(p)
			return value.OfBytes(unsafe.Slice(unsafe.StringData(s), len(s))), nil
		case *array.Binary:
			return value.OfBytes(x.Value(p)), nil
		}
	}
	return value.FromArrow(arr, p, typ)
}

// kernel returns the test of a non-NULL value at a position against l's
// operator and literals (before negation: a non-NULL value never makes a
// leaf UNKNOWN), or nil when arr's type or the operator has none.
func kernel(l *predicate.Leaf, arr arrow.Array, typ iceberg.Type) func(p int) bool {
	switch l.Op {
	case predicate.OpEq, predicate.OpLt, predicate.OpLtEq, predicate.OpGt, predicate.OpGtEq, predicate.OpIn,
		predicate.OpIsNull, predicate.OpIsNaN, predicate.OpStartsWith, predicate.OpLike:
	default:
		return nil
	}
	if l.Op == predicate.OpIsNull {
		if kernel(&predicate.Leaf{Op: predicate.OpIsNaN}, arr, typ) == nil {
			return nil // the value must convert (value.FromArrow), NULL or not
		}
		return func(int) bool { return false }
	}
	if len(l.Lits) == 0 && l.Op != predicate.OpIsNaN {
		return nil
	}
	switch x := arr.(type) {
	case *array.Int8:
		return intKernel(l, x.Int8Values(), 1)
	case *array.Int16:
		return intKernel(l, x.Int16Values(), 1)
	case *array.Int32:
		return intKernel(l, x.Int32Values(), 1)
	case *array.Int64:
		return intKernel(l, x.Int64Values(), 1)
	case *array.Uint8:
		return intKernel(l, x.Uint8Values(), 1)
	case *array.Uint16:
		return intKernel(l, x.Uint16Values(), 1)
	case *array.Uint32:
		return intKernel(l, x.Uint32Values(), 1)
	case *array.Date32:
		return intKernel(l, x.Date32Values(), 1)
	case *array.Time32:
		mul := int64(1_000_000)
		if x.DataType().(*arrow.Time32Type).Unit == arrow.Millisecond {
			mul = 1000
		}
		return intKernel(l, x.Time32Values(), mul)
	case *array.Time64:
		if x.DataType().(*arrow.Time64Type).Unit != arrow.Microsecond {
			return nil
		}
		return intKernel(l, x.Time64Values(), 1)
	case *array.Timestamp:
		nanos := value.IsNanosecond(typ)
		mul := int64(1)
		switch x.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			mul = 1_000_000
		case arrow.Millisecond:
			mul = 1000
		case arrow.Nanosecond:
			if !nanos {
				return nil // floor division: the definition
			}
		}
		if nanos && x.DataType().(*arrow.TimestampType).Unit != arrow.Nanosecond {
			mul *= 1000
		}
		return intKernel(l, x.TimestampValues(), mul)
	case *array.Boolean:
		if !litsOf(l, value.Bool) {
			return nil
		}
		return cmpKernel(l, func(p int) int64 {
			if x.Value(p) {
				return 1
			}
			return 0
		}, func(v value.Value) int64 { return v.I })
	case *array.Float32:
		vals := x.Float32Values()
		return floatKernel(l, func(p int) float64 { return float64(vals[p]) })
	case *array.Float64:
		vals := x.Float64Values()
		return floatKernel(l, func(p int) float64 { return vals[p] })
	case *array.String:
		return stringKernel(l, x.Value)
	case *array.LargeString:
		return stringKernel(l, x.Value)
	case *array.Binary:
		return bytesKernel(l, x.Value)
	case *array.LargeBinary:
		return bytesKernel(l, x.Value)
	case *array.FixedSizeBinary:
		return bytesKernel(l, x.Value)
	case *array.Decimal128:
		return decimalKernel(l, x)
	}
	return nil
}

// litsOf reports whether every literal of l is of kind k.
func litsOf(l *predicate.Leaf, k value.Kind) bool {
	for _, v := range l.Lits {
		if v.K != k {
			return false
		}
	}
	return true
}

func intKernel[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | arrow.Date32 | arrow.Time32 | arrow.Time64 | arrow.Timestamp](l *predicate.Leaf, vals []T, mul int64) func(int) bool {
	if l.Op == predicate.OpIsNaN || l.Op == predicate.OpStartsWith {
		return func(int) bool { return false }
	}
	if !litsOf(l, value.Int) {
		return nil
	}
	if mul == 1 && len(l.Lits) > 0 {
		// one call per value (the hot case: a scan of a whole column)
		c := l.Lits[0].I
		switch l.Op {
		case predicate.OpEq:
			return func(p int) bool { return int64(vals[p]) == c }
		case predicate.OpLt:
			return func(p int) bool { return int64(vals[p]) < c }
		case predicate.OpLtEq:
			return func(p int) bool { return int64(vals[p]) <= c }
		case predicate.OpGt:
			return func(p int) bool { return int64(vals[p]) > c }
		case predicate.OpGtEq:
			return func(p int) bool { return int64(vals[p]) >= c }
		}
	}
	if mul == 1 {
		return cmpKernel(l, func(p int) int64 { return int64(vals[p]) }, func(v value.Value) int64 { return v.I })
	}
	return cmpKernel(l, func(p int) int64 { return int64(vals[p]) * mul }, func(v value.Value) int64 { return v.I })
}

// cmpKernel compares ordered values: get reads position p, lit a literal.
func cmpKernel[V int64 | float64 | string](l *predicate.Leaf, get func(p int) V, lit func(value.Value) V) func(int) bool {
	if l.Op == predicate.OpIsNaN {
		return func(int) bool { return false }
	}
	if l.Op == predicate.OpIn {
		set := make(map[V]struct{}, len(l.Lits))
		for _, v := range l.Lits {
			set[lit(v)] = struct{}{}
		}
		if len(set) <= 4 {
			lits := make([]V, 0, len(set))
			for v := range set {
				lits = append(lits, v)
			}
			return func(p int) bool {
				g := get(p)
				for _, v := range lits {
					if g == v {
						return true
					}
				}
				return false
			}
		}
		return func(p int) bool { _, ok := set[get(p)]; return ok }
	}
	c := lit(l.Lits[0])
	switch l.Op {
	case predicate.OpEq:
		return func(p int) bool { return get(p) == c }
	case predicate.OpLt:
		return func(p int) bool { return get(p) < c }
	case predicate.OpLtEq:
		return func(p int) bool { return get(p) <= c }
	case predicate.OpGt:
		return func(p int) bool { return get(p) > c }
	case predicate.OpGtEq:
		return func(p int) bool { return get(p) >= c }
	}
	return nil
}

// floatKernel is IEEE: NaN fails every comparison, -0 equals +0.
func floatKernel(l *predicate.Leaf, get func(p int) float64) func(int) bool {
	switch l.Op {
	case predicate.OpIsNaN:
		return func(p int) bool { return math.IsNaN(get(p)) }
	case predicate.OpStartsWith:
		return func(int) bool { return false }
	}
	if !litsOf(l, value.Float) {
		return nil
	}
	// Go's == and < are IEEE (a map lookup of NaN finds nothing, -0 finds +0)
	return cmpKernel(l, get, func(v value.Value) float64 { return v.F })
}

func stringKernel(l *predicate.Leaf, get func(p int) string) func(int) bool {
	switch l.Op {
	case predicate.OpIsNaN:
		return func(int) bool { return false }
	case predicate.OpLike:
		if !litsOf(l, value.Bytes) {
			return nil
		}
		m := compileLike(l.Lits[0].B)
		if m == nil {
			return nil
		}
		return func(p int) bool { return m.match(get(p)) }
	case predicate.OpStartsWith:
		if !litsOf(l, value.Bytes) {
			return nil
		}
		prefix := string(l.Lits[0].B)
		return func(p int) bool { return strings.HasPrefix(get(p), prefix) }
	}
	if !litsOf(l, value.Bytes) {
		return nil
	}
	return cmpKernel(l, get, func(v value.Value) string { return string(v.B) })
}

func bytesKernel(l *predicate.Leaf, get func(p int) []byte) func(int) bool {
	switch l.Op {
	case predicate.OpIsNaN:
		return func(int) bool { return false }
	}
	if !litsOf(l, value.Bytes) {
		return nil
	}
	if l.Op == predicate.OpLike {
		m := compileLike(l.Lits[0].B)
		if m == nil {
			return nil
		}
		return func(p int) bool {
			b := get(p)
			return m.match(unsafe.String(unsafe.SliceData(b), len(b)))
		}
	}
	c := l.Lits[0].B
	switch l.Op {
	case predicate.OpStartsWith:
		return func(p int) bool { return bytes.HasPrefix(get(p), c) }
	case predicate.OpIn:
		return func(p int) bool {
			g := get(p)
			for _, v := range l.Lits {
				if bytes.Equal(g, v.B) {
					return true
				}
			}
			return false
		}
	case predicate.OpEq:
		return func(p int) bool { return bytes.Equal(get(p), c) }
	case predicate.OpLt:
		return func(p int) bool { return bytes.Compare(get(p), c) < 0 }
	case predicate.OpLtEq:
		return func(p int) bool { return bytes.Compare(get(p), c) <= 0 }
	case predicate.OpGt:
		return func(p int) bool { return bytes.Compare(get(p), c) > 0 }
	case predicate.OpGtEq:
		return func(p int) bool { return bytes.Compare(get(p), c) >= 0 }
	}
	return nil
}

// decimalKernel compares 128-bit unscaled values when every literal has
// the column's scale after an exact rescale and fits 128 bits.
func decimalKernel(l *predicate.Leaf, x *array.Decimal128) func(int) bool {
	switch l.Op {
	case predicate.OpIsNaN, predicate.OpStartsWith:
		return func(int) bool { return false }
	}
	if !litsOf(l, value.Decimal) {
		return nil
	}
	scale := x.DataType().(*arrow.Decimal128Type).Scale
	lits := make([]decimal128.Num, len(l.Lits))
	for i, v := range l.Lits {
		if v.D == nil || v.Scale > scale {
			return nil
		}
		d := v.D
		if v.Scale < scale {
			d = new(big.Int).Mul(d, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-v.Scale)), nil))
		}
		if d.BitLen() > 126 {
			return nil
		}
		lits[i] = decimal128.FromBigInt(d)
	}
	vals := x.Values()
	if l.Op == predicate.OpIn {
		return func(p int) bool {
			for _, v := range lits {
				if vals[p] == v {
					return true
				}
			}
			return false
		}
	}
	c := lits[0]
	switch l.Op {
	case predicate.OpEq:
		return func(p int) bool { return vals[p] == c }
	case predicate.OpLt:
		return func(p int) bool { return vals[p].Less(c) }
	case predicate.OpLtEq:
		return func(p int) bool { return vals[p].LessEqual(c) }
	case predicate.OpGt:
		return func(p int) bool { return vals[p].Greater(c) }
	case predicate.OpGtEq:
		return func(p int) bool { return vals[p].GreaterEqual(c) }
	}
	return nil
}

// dictionaryResults is leaf l on each value of d's dictionary.
func dictionaryResults(l *predicate.Leaf, typ iceberg.Type, d *array.Dictionary) ([]predicate.Tri, error) {
	dict := d.Dictionary()
	dv := &Vector{Type: typ, Arr: dict, Pos: Positions(dict.Len()), ErrAt: func(_ int, err error) error { return err }}
	dres := make([]predicate.Tri, dict.Len())
	dev := &evaluation{f: &Filter{}, b: &Batch{N: dict.Len()}, vectors: map[int]*Vector{l.FieldID: dv}}
	return dres, dev.leaf(l, dv.Pos, dres)
}

// LeavesOf are e's leaves when e is one leaf or an And of leaves (the
// shape LeavesRowsOf tests in place), nil otherwise.
func LeavesOf(e predicate.Expr) []*predicate.Leaf {
	switch x := e.(type) {
	case *predicate.Leaf:
		return []*predicate.Leaf{x}
	case predicate.And:
		leaves := make([]*predicate.Leaf, 0, len(x.Kids))
		for _, k := range x.Kids {
			l, isLeaf := k.(*predicate.Leaf)
			if !isLeaf {
				return nil
			}
			leaves = append(leaves, l)
		}
		if len(leaves) > 0 {
			return leaves
		}
	}
	return nil
}

// LeavesRowsOf are the positions where every leaf (leaves[i] on arrs[i],
// read as typs[i], arrays of one length) is TRUE, tested in place
// (RowScratch's); ok is false when no kernel applies to one of them, or a
// dictionary value does not convert.
func LeavesRowsOf(leaves []*predicate.Leaf, typs []iceberg.Type, arrs []arrow.Array) (keep []int64, ok bool) {
	tests := make([]func(p int) bool, len(leaves))
	for i := 1; i < len(leaves); i++ {
		if tests[i] = leafTest(leaves[i], typs[i], arrs[i]); tests[i] == nil {
			return nil, false
		}
	}
	if keep, ok = LeafRowsOf(leaves[0], typs[0], arrs[0]); !ok {
		return nil, false
	}
	for _, test := range tests[1:] {
		kept := keep[:0]
		for _, row := range keep {
			if test(int(row)) {
				kept = append(kept, row)
			}
		}
		keep = kept
	}
	return keep, true
}

// leafTest is leaf l as a test of a position of arr (read as typ): TRUE or
// not. nil when no kernel applies, or a dictionary value does not convert.
func leafTest(l *predicate.Leaf, typ iceberg.Type, arr arrow.Array) func(p int) bool {
	if ext, isExt := arr.(array.ExtensionArray); isExt {
		arr = ext.Storage()
	}
	whenTrue := !l.Negated
	var match func(p int) bool
	if d, isDict := arr.(*array.Dictionary); isDict {
		dres, err := dictionaryResults(l, typ, d)
		if err != nil {
			return nil
		}
		index := DictIndex(d)
		match = func(p int) bool { return dres[index(p)] == predicate.True }
		whenTrue = true // dres holds the negated leaf's outcome
	} else if match = kernel(l, arr, typ); match == nil {
		return nil
	}
	switch {
	case arr.NullN() > 0:
		nullKept := leafOn(l, value.Value{}, true) == predicate.True
		return func(p int) bool {
			if arr.IsNull(p) {
				return nullKept
			}
			return match(p) == whenTrue
		}
	case whenTrue:
		return match
	}
	return func(p int) bool { return !match(p) }
}

// LeafRowsOf are the positions of arr (read as typ) where leaf l is TRUE,
// tested in place (RowScratch's); ok is false when no kernel applies to
// arr, or a dictionary value does not convert.
func LeafRowsOf(l *predicate.Leaf, typ iceberg.Type, arr arrow.Array) (keep []int64, ok bool) {
	if ext, isExt := arr.(array.ExtensionArray); isExt {
		arr = ext.Storage()
	}
	n := arr.Len()
	if d, isDict := arr.(*array.Dictionary); isDict {
		dres, err := dictionaryResults(l, typ, d)
		if err != nil {
			return nil, false
		}
		nullKept := leafOn(l, value.Value{}, true) == predicate.True
		if !slices.Contains(dres, predicate.True) && !(nullKept && d.NullN() > 0) {
			return RowScratch.Get(0), true // no value of the dictionary matches
		}
		if ix, isInt32 := d.Indices().(*array.Int32); isInt32 && d.NullN() == 0 {
			// the hot case: each row's index looked up, no call and no
			// branch per row (every position is written, the next slot
			// taken only when it matched: a mispredicted branch a row
			// cost more than the store)
			hit := make([]int, len(dres))
			for k, v := range dres {
				if v == predicate.True {
					hit[k] = 1
				}
			}
			keep = RowScratch.Get(n)
			j := 0
			for p, k := range ix.Int32Values() {
				keep[j] = int64(p)
				j += hit[k]
			}
			return keep[:j], true
		}
	}
	if x, isInt64 := arr.(*array.Int64); isInt64 && x.NullN() == 0 && !l.Negated && l.Op == predicate.OpEq && len(l.Lits) == 1 && l.Lits[0].K == value.Int {
		// a point lookup's scan of a whole id column: one comparison a
		// value, no call
		c := l.Lits[0].I
		keep = RowScratch.Get(n)[:0]
		for p, v := range x.Int64Values() {
			if v == c {
				keep = append(keep, int64(p))
			}
		}
		return keep, true
	}
	test := leafTest(l, typ, arr)
	if test == nil {
		return nil, false
	}
	keep = RowScratch.Get(n)[:0]
	for p := 0; p < n; p++ {
		if test(p) {
			keep = append(keep, int64(p))
		}
	}
	return keep, true
}

// DictIndex reads a dictionary array's index at a position (int32
// indices, as Parquet dictionaries decode, without a type switch per row).
func DictIndex(d *array.Dictionary) func(p int) int {
	if ix, ok := d.Indices().(*array.Int32); ok {
		vals := ix.Int32Values()
		return func(p int) int { return int(vals[p]) }
	}
	return d.GetValueIndex
}

// likeMatcher is a LIKE pattern of literal runs and '%' only, valid UTF-8
// (no '_', no ILIKE): on valid UTF-8 literals a byte search finds exactly
// the rune sequences predicate.Like finds (UTF-8 is self-synchronizing,
// and an invalid byte of the value, a rune of its own there, never equals
// a literal's byte at a rune start).
type likeMatcher struct {
	runs        []string // literal runs between '%'
	start, end  bool     // the pattern starts / ends with a literal
	hasWildcard bool
}

// compileLike is pattern's matcher, or nil when it has a '_' or is not
// valid UTF-8 (predicate.Like then decides per value).
func compileLike(pattern []byte) *likeMatcher {
	if !utf8.Valid(pattern) {
		return nil
	}
	m := &likeMatcher{}
	var cur []byte
	first, last := -1, -1 // the first and last token: 0 a literal, 1 '%'
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\' && i+1 < len(pattern): // escaped (a trailing '\\' is itself)
			_, n := utf8.DecodeRune(pattern[i+1:])
			cur = append(cur, pattern[i+1:i+1+n]...)
			i += n
			last = 0
		case c == '%':
			if len(cur) > 0 {
				m.runs = append(m.runs, string(cur))
				cur = cur[:0]
			}
			m.hasWildcard, last = true, 1
		case c == '_':
			return nil
		default:
			cur = append(cur, c)
			last = 0
		}
		if first < 0 {
			first = last
		}
	}
	if len(cur) > 0 {
		m.runs = append(m.runs, string(cur))
	}
	m.start, m.end = first == 0, last == 0
	return m
}

func (m *likeMatcher) match(s string) bool {
	if !m.hasWildcard {
		return len(m.runs) == 0 && s == "" || len(m.runs) == 1 && s == m.runs[0]
	}
	runs := m.runs
	pos, end := 0, len(s)
	if m.start {
		if !strings.HasPrefix(s, runs[0]) {
			return false
		}
		pos, runs = len(runs[0]), runs[1:]
	}
	if m.end {
		last := runs[len(runs)-1]
		if end-len(last) < pos || !strings.HasSuffix(s, last) {
			return false
		}
		end, runs = end-len(last), runs[:len(runs)-1]
	}
	for _, r := range runs {
		i := strings.Index(s[pos:end], r)
		if i < 0 {
			return false
		}
		pos += i + len(r)
	}
	return true
}

// CountByValue is how many rows a predicate on one field keeps, given the
// rows holding each of the field's values (counts[i] rows hold values[i],
// a column's dictionary) and its NULL rows: the predicate is evaluated
// once on each value and once on NULL, as on rows, and the counts of the
// kept ones summed. dt is the values' Arrow type (string or binary).
func CountByValue(e predicate.Expr, typ iceberg.Type, dt arrow.DataType, values [][]byte, counts []int64, nulls int64) (int64, error) {
	if len(counts) != len(values) {
		return 0, fmt.Errorf("%d counts for %d values", len(counts), len(values))
	}
	var vals arrow.Array
	switch dt.ID() {
	case arrow.STRING:
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		for _, v := range values {
			b.BinaryBuilder.Append(v)
		}
		b.AppendNull()
		vals = b.NewArray()
	case arrow.BINARY:
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		defer b.Release()
		for _, v := range values {
			b.Append(v)
		}
		b.AppendNull()
		vals = b.NewArray()
	default:
		return 0, fmt.Errorf("values of type %s", dt)
	}
	defer vals.Release()
	pos := make([]int32, vals.Len())
	for i := range pos {
		pos[i] = int32(i)
	}
	v := &Vector{Type: typ, Arr: vals, Pos: pos, ErrAt: func(_ int, err error) error { return err }}
	sel, err := (&Filter{Expr: e}).SelectRows(&Batch{N: vals.Len(), Vector: func(int) *Vector { return v }})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, i := range sel {
		if int(i) < len(counts) {
			n += counts[i]
		} else {
			n += nulls
		}
	}
	return n, nil
}
