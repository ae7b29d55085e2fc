package connector

// Filter stage: the residual predicate evaluated column by column over a
// batch of candidate rows, giving the rows where it is TRUE.
//
//	candidates (rows of a row group, minus deletes)
//	   │ per predicate field: a vector — a typed Arrow leaf array with each
//	   │ candidate's position in it and the NULLs of its enclosing structs,
//	   │ or a constant (an initial-default, an identity-partition value, NULL)
//	   ▼
//	And / Or over active sets: a child is evaluated only on the rows whose
//	outcome it can still change (as predicate.Eval short-circuits per row)
//	   ▼
//	leaf kernels per Arrow type (ints, timestamps, floats, strings, binary,
//	decimals; dictionaries through their values), everything else through
//	value.FromArrow + predicate.Eval on that leaf
//
// predicate.Eval under IEEE semantics is the definition; the kernels are
// checked against it by a differential test (filter_test.go). A value that
// does not convert fails the read, as the row-wise evaluation did.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// vector is one predicate field over a batch of n candidates.
type vector struct {
	typ iceberg.Type // the field's Iceberg type
	// arr (nil: a constant) is the leaf array; pos[i] the position of
	// candidate i in it (-1: not decoded there, see errAt).
	arr arrow.Array
	pos []int32
	// null[i]: candidate i is NULL through an enclosing struct (nil: none).
	null []bool
	// constant: every candidate reads val, or NULL when isNull.
	val    value.Value
	isNull bool
	// errAt is the error of reading candidate i: at pos -1 (outside
	// says why), or at every candidate when broken is set.
	errAt   func(i int, err error) error
	outside string
	broken  error
}

// batch hands the filter its vectors.
type batch struct {
	n      int
	vector func(id int) *vector // memoized by the caller
}

// filter evaluates a bound predicate over batches.
type filter struct {
	expr predicate.Expr
	// free holds scratch buffers of the current batch.
	free [][]predicate.Tri
	sels [][]int32
	// scratch: the batch's buffers come from the scratch pools and go back
	// when selectRows returns, but for the selection, which its caller
	// releases (posScratch.put) when done with it
	scratch bool
}

// selectRows returns the candidates (indices 0..n-1) where e is TRUE.
func (f *filter) selectRows(b *batch) ([]int32, error) {
	if c, ok := f.expr.(predicate.Const); ok {
		if !c.Value {
			return nil, nil
		}
		return iota32(b.n), nil
	}
	var all []int32
	var res []predicate.Tri
	vs := map[int]*vector{}
	if f.scratch {
		all, res = posScratch.get(b.n), triScratch.get(b.n)
		for i := range all {
			all[i] = int32(i)
		}
		defer func() {
			triScratch.put(res)
			for _, v := range vs {
				posScratch.put(v.pos)
			}
		}()
	} else {
		all, res = iota32(b.n), make([]predicate.Tri, b.n)
	}
	ev := &evaluation{f: f, b: b, vectors: vs}
	if err := ev.eval(f.expr, all, res); err != nil {
		if f.scratch {
			posScratch.put(all)
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

func iota32(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

type evaluation struct {
	f       *filter
	b       *batch
	vectors map[int]*vector
}

func (ev *evaluation) tris() []predicate.Tri {
	if n := len(ev.f.free); n > 0 {
		t := ev.f.free[n-1]
		ev.f.free = ev.f.free[:n-1]
		if len(t) >= ev.b.n {
			return t[:ev.b.n]
		}
	}
	return make([]predicate.Tri, ev.b.n)
}

func (ev *evaluation) sel() []int32 {
	if n := len(ev.f.sels); n > 0 {
		s := ev.f.sels[n-1]
		ev.f.sels = ev.f.sels[:n-1]
		return s[:0]
	}
	return make([]int32, 0, ev.b.n)
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
		v = ev.b.vector(l.FieldID)
		ev.vectors[l.FieldID] = v
	}
	if v.broken != nil && len(sel) > 0 {
		return v.errAt(int(sel[0]), v.broken)
	}
	for _, i := range sel {
		if v.pos != nil && v.pos[i] < 0 {
			return v.errAt(int(i), errors.New(v.outside))
		}
	}
	ifNull := leafOn(l, value.Value{}, true)
	if v.arr == nil {
		t := ifNull
		if !v.isNull {
			t = leafOn(l, v.val, false)
		}
		for _, i := range sel {
			if v.null != nil && v.null[i] {
				res[i] = ifNull
			} else {
				res[i] = t
			}
		}
		return nil
	}
	arr := v.arr
	if ext, ok := arr.(array.ExtensionArray); ok {
		arr = ext.Storage() // a UUID's bytes, as value.FromArrow reads them
	}
	if d, ok := arr.(*array.Dictionary); ok {
		// the leaf on each dictionary value once, then by index
		dres, derr := dictionaryResults(l, v.typ, d)
		index := dictIndex(d)
		for _, i := range sel {
			p := int(v.pos[i])
			switch {
			case (v.null != nil && v.null[i]) || d.IsNull(p):
				res[i] = ifNull
			case derr != nil:
				return v.errAt(int(i), derr)
			default:
				res[i] = dres[index(p)]
			}
		}
		return nil
	}
	match := kernel(l, arr, v.typ)
	var convErr error
	perValue := match == nil // the definition, which can fail on a value
	if match == nil {
		// no kernel for this type or operator: the definition, per value
		base := *l
		base.Negated = false
		match = func(p int) bool {
			val, err := value.FromArrow(arr, p, v.typ)
			if err != nil {
				if convErr == nil {
					convErr = fmt.Errorf("%s value as %s: %w", arr.DataType(), v.typ, err)
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
	if v.null == nil && arr.NullN() == 0 && convErr == nil && !perValue {
		// no NULLs, a kernel that cannot fail: one test per candidate
		for _, i := range sel {
			if match(int(v.pos[i])) {
				res[i] = whenTrue
			} else {
				res[i] = whenFalse
			}
		}
		return nil
	}
	for _, i := range sel {
		p := int(v.pos[i])
		if (v.null != nil && v.null[i]) || arr.IsNull(p) {
			res[i] = ifNull
			continue
		}
		if match(p) {
			res[i] = whenTrue
		} else {
			res[i] = whenFalse
		}
		if convErr != nil {
			return v.errAt(int(i), convErr)
		}
	}
	return nil
}

// kernel returns the test of a non-NULL value at a position against l's
// operator and literals (before negation: a non-NULL value never makes a
// leaf UNKNOWN), or nil when arr's type or the operator has none.
func kernel(l *predicate.Leaf, arr arrow.Array, typ iceberg.Type) func(p int) bool {
	switch l.Op {
	case predicate.OpEq, predicate.OpLt, predicate.OpLtEq, predicate.OpGt, predicate.OpGtEq, predicate.OpIn,
		predicate.OpIsNull, predicate.OpIsNaN, predicate.OpStartsWith:
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

// decodedBatch is the batch of candidate rows (rg-local, ascending) of one
// row group's decoded columns: the vectors of the predicate's fields, with
// a field the file lacks read as its default (NULL where an enclosing
// struct the file stores is NULL) or NULL.
func decodedBatch(fl *fileLayout, rg int, cols map[int]*column, s *iceberg.Schema, parents map[int]int, rows []int64) *batch {
	memo := map[int]*vector{}
	b := &batch{n: len(rows)}
	b.vector = func(id int) *vector {
		if v, ok := memo[id]; ok {
			return v
		}
		f, _ := s.FindFieldByID(id)
		v := &vector{typ: f.Type, errAt: func(i int, err error) error {
			name, _ := s.FindColumnName(id)
			return fmt.Errorf("%s row group %d row %d: column %s: %w", fl.path, rg, rows[i], name, err)
		}}
		memo[id] = v
		if _, stored := fl.topFieldOf(id); stored {
			v.outside = "the row is outside the decoded pages"
			structVector(v, cols, pathIn(fl, id), rows, true)
			return v
		}
		// a field the file lacks: its default, NULL under a NULL struct
		v.isNull = true
		if d, ok := fl.defaults[id]; ok && !d.null {
			v.val, v.isNull = d.val, false
		}
		var anchor []int
		for p, has := parents[id]; has; p, has = parents[p] {
			if _, stored := fl.topFieldOf(p); stored {
				anchor = pathIn(fl, p)
				break
			}
			if pf, _ := s.FindFieldByID(p); pf.InitialDefault == nil {
				// under a struct the file lacks too, without a default
				v.val, v.isNull = value.Value{}, true
				return v
			}
		}
		if anchor != nil {
			v.outside = "the row is outside the decoded pages of its enclosing struct"
			structVector(v, cols, anchor, rows, false)
		}
		return v
	}
	return b
}

// structVector follows path (top-level field, struct children) in the
// decoded columns: the candidates' positions, the NULLs of the structs
// along it and, when leaf, the array at its end (otherwise the path ends
// at a struct whose NULLs make a field the file lacks NULL).
func structVector(v *vector, cols map[int]*column, path []int, rows []int64, leaf bool) {
	c := cols[path[0]]
	if c == nil {
		v.broken = fmt.Errorf("the column was not decoded")
		if !leaf {
			v.broken = fmt.Errorf("its enclosing struct was not decoded")
		}
		return
	}
	v.pos = positions(c, rows)
	arr := c.arr
	var structs []arrow.Array
	for _, j := range path[1:] {
		st, ok := arr.(*array.Struct)
		if !ok {
			v.broken = fmt.Errorf("the file stores %s where the table has a struct", arr.DataType())
			return
		}
		structs = append(structs, st)
		arr = st.Field(j)
	}
	if leaf {
		v.arr = arr
	} else {
		structs = append(structs, arr)
	}
	if len(structs) == 0 {
		return
	}
	v.null = make([]bool, len(rows))
	for i, p := range v.pos {
		if p < 0 {
			continue
		}
		for _, a := range structs {
			if a.IsNull(int(p)) {
				v.null[i] = true
				break
			}
		}
	}
}

// positions maps candidate rows (ascending) to their positions in c (-1:
// not decoded).
func positions(c *column, rows []int64) []int32 {
	pos := posScratch.get(len(rows))
	if c.rows == nil {
		n := int64(c.arr.Len())
		for i, r := range rows {
			if r -= c.first; r >= 0 && r < n {
				pos[i] = int32(r)
			} else {
				pos[i] = -1
			}
		}
		return pos
	}
	j := 0
	for i, r := range rows {
		for j < len(c.rows) && c.rows[j] < r {
			j++
		}
		if j < len(c.rows) && c.rows[j] == r {
			pos[i] = int32(j)
		} else {
			pos[i] = -1
		}
	}
	return pos
}

// pathIn is the path of top-level index and struct child positions to
// field id in the file (as far as the file's structs reach).
func pathIn(fl *fileLayout, id int) []int {
	top, _ := fl.topFieldOf(id)
	path := []int{top}
	node := fl.md.Schema.Root().Field(top)
	for node.FieldID() != int32(id) {
		g, isGroup := node.(*schema.GroupNode)
		if !isGroup {
			break
		}
		found := false
		for j := 0; j < g.NumFields(); j++ {
			if containsID(g.Field(j), id) {
				path = append(path, j)
				node = g.Field(j)
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return path
}

// recordBatch is the batch of every row of a record read by iceberg-go's
// scan (columns by top-level name; a field it lacks reads NULL).
func recordBatch(rec arrow.RecordBatch, s *iceberg.Schema, table string) *batch {
	byName := map[string]int{}
	for i, f := range rec.Schema().Fields() {
		byName[f.Name] = i
	}
	n := int(rec.NumRows())
	memo := map[int]*vector{}
	return &batch{n: n, vector: func(id int) *vector {
		if v, ok := memo[id]; ok {
			return v
		}
		f, _ := s.FindFieldByID(id)
		name, _ := s.FindColumnName(id)
		v := &vector{typ: f.Type, isNull: true, errAt: func(i int, err error) error {
			return fmt.Errorf("plain read of %s: column %s: %w", table, name, err)
		}}
		if col, ok := byName[name]; ok {
			v.arr, v.pos = rec.Column(col), iota32(n)
		}
		memo[id] = v
		return v
	}}
}

// dictIndex reads a dictionary array's index at a position (int32
// indices, as Parquet dictionaries decode, without a type switch per row).
// dictionaryResults is leaf l on each value of d's dictionary.
func dictionaryResults(l *predicate.Leaf, typ iceberg.Type, d *array.Dictionary) ([]predicate.Tri, error) {
	dict := d.Dictionary()
	dv := &vector{typ: typ, arr: dict, pos: iota32(dict.Len()), errAt: func(_ int, err error) error { return err }}
	dres := make([]predicate.Tri, dict.Len())
	dev := &evaluation{f: &filter{}, b: &batch{n: dict.Len()}, vectors: map[int]*vector{l.FieldID: dv}}
	return dres, dev.leaf(l, dv.pos, dres)
}

// denseLeafRows is the filter's shortcut for the commonest shapes: the
// predicate one leaf, or an And of leaves, on top-level fields decoded
// whole, every row of the row group a candidate (the plan did not narrow
// it, no row deleted). The first leaf's kernel tests its column in place
// and appends the rows it keeps, each further leaf drops kept rows: no
// candidate list, positions, three-valued results or selection (five
// passes over the row group, a fifth of a point lookup's CPU on files
// without blooms). ok is false when the shape does not hold or no kernel
// applies: the general evaluation then runs, with its errors. The rows
// are rowScratch's.
func denseLeafRows(p *prepared, fl *fileLayout, r *rowGroupRead, cols map[int]*column) (keep []int64, ok bool) {
	if r.rows != nil || r.deleted != nil {
		return nil, false
	}
	var leaves []*predicate.Leaf
	switch x := p.expr.(type) {
	case *predicate.Leaf:
		leaves = []*predicate.Leaf{x}
	case predicate.And:
		for _, k := range x.Kids {
			l, isLeaf := k.(*predicate.Leaf)
			if !isLeaf {
				return nil, false
			}
			leaves = append(leaves, l)
		}
	}
	if len(leaves) == 0 {
		return nil, false
	}
	arrs := make([]arrow.Array, len(leaves))
	typs := make([]iceberg.Type, len(leaves))
	for i, l := range leaves {
		top, stored := fl.topFieldOf(l.FieldID)
		if !stored || fl.md.Schema.Root().Field(top).FieldID() != int32(l.FieldID) {
			return nil, false // nested: its structs' NULLs count
		}
		col := cols[top]
		if col == nil || col.rows != nil || col.first != 0 || int64(col.arr.Len()) != r.numRows {
			return nil, false
		}
		f, found := p.schema.FindFieldByID(l.FieldID)
		if !found {
			return nil, false
		}
		arrs[i], typs[i] = col.arr, f.Type
	}
	return leavesRowsOf(leaves, typs, arrs)
}

// leavesRowsOf are the positions where every leaf (leaves[i] on arrs[i],
// read as typs[i], arrays of one length) is TRUE, tested in place
// (rowScratch's); ok is false when no kernel applies to one of them, or a
// dictionary value does not convert.
func leavesRowsOf(leaves []*predicate.Leaf, typs []iceberg.Type, arrs []arrow.Array) (keep []int64, ok bool) {
	tests := make([]func(p int) bool, len(leaves))
	for i := 1; i < len(leaves); i++ {
		if tests[i] = leafTest(leaves[i], typs[i], arrs[i]); tests[i] == nil {
			return nil, false
		}
	}
	if keep, ok = leafRowsOf(leaves[0], typs[0], arrs[0]); !ok {
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
		index := dictIndex(d)
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

// leafRowsOf are the positions of arr (read as typ) where leaf l is TRUE,
// tested in place (rowScratch's); ok is false when no kernel applies to
// arr, or a dictionary value does not convert.
func leafRowsOf(l *predicate.Leaf, typ iceberg.Type, arr arrow.Array) (keep []int64, ok bool) {
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
			return rowScratch.get(0), true // no value of the dictionary matches
		}
		if ix, isInt32 := d.Indices().(*array.Int32); isInt32 && d.NullN() == 0 {
			// the hot case: each row's index looked up, no call per row
			keep = rowScratch.get(n)[:0]
			for p, k := range ix.Int32Values() {
				if dres[k] == predicate.True {
					keep = append(keep, int64(p))
				}
			}
			return keep, true
		}
	}
	if x, isInt64 := arr.(*array.Int64); isInt64 && x.NullN() == 0 && !l.Negated && l.Op == predicate.OpEq && len(l.Lits) == 1 && l.Lits[0].K == value.Int {
		// a point lookup's scan of a whole id column: one comparison a
		// value, no call
		c := l.Lits[0].I
		keep = rowScratch.get(n)[:0]
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
	keep = rowScratch.get(n)[:0]
	for p := 0; p < n; p++ {
		if test(p) {
			keep = append(keep, int64(p))
		}
	}
	return keep, true
}

func dictIndex(d *array.Dictionary) func(p int) int {
	if ix, ok := d.Indices().(*array.Int32); ok {
		vals := ix.Int32Values()
		return func(p int) int { return int(vals[p]) }
	}
	return d.GetValueIndex
}
