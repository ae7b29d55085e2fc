// Package value is the comparison domain shared by predicates and every
// statistic the planner reads (Iceberg manifest bounds, Parquet footer
// statistics, page indexes). Each Iceberg primitive type maps to one Kind;
// decoders turn literals and stored bounds into Values of that Kind, so a
// predicate literal and a bound compare with one function.
//
//	Iceberg type                     Kind     order
//	boolean                          Bool     false < true
//	int long date time timestamp*    Int      signed (unsigned Parquet ints decode into it)
//	(Parquet UINT_64)                Uint     unsigned
//	float double                     Float    IEEE numeric, -0 == +0; NaN is handled by callers
//	string binary fixed uuid         Bytes    unsigned lexicographic (UTF-8 byte order)
//	decimal(p, s)                    Decimal  by value, any scale
//	list<primitive>                  List     not ordered: only array_contains reads it
package value

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Kind is the comparison domain of a Value.
type Kind uint8

const (
	Invalid Kind = iota
	Bool
	Int
	Uint
	Float
	Bytes
	Decimal
	// List is a list of an element type (a row's value for
	// array_contains); a NULL element is the zero Value.
	List
)

func (k Kind) String() string {
	switch k {
	case Bool:
		return "bool"
	case Int:
		return "int"
	case Uint:
		return "uint"
	case Float:
		return "float"
	case Bytes:
		return "bytes"
	case Decimal:
		return "decimal"
	case List:
		return "list"
	}
	return "invalid"
}

// Value is one comparable value.
type Value struct {
	K     Kind
	I     int64    // Int, Bool (0/1)
	U     uint64   // Uint
	F     float64  // Float
	B     []byte   // Bytes
	D     *big.Int // Decimal, unscaled
	Scale int32    // Decimal
	L     []Value  // List elements (a NULL element: the zero Value)
}

// Constructors.
func OfBool(b bool) Value {
	if b {
		return Value{K: Bool, I: 1}
	}
	return Value{K: Bool}
}
func OfInt(i int64) Value        { return Value{K: Int, I: i} }
func OfUint(u uint64) Value      { return Value{K: Uint, U: u} }
func OfFloat(f float64) Value    { return Value{K: Float, F: f} }
func OfBytes(b []byte) Value     { return Value{K: Bytes, B: b} }
func OfString(s string) Value    { return Value{K: Bytes, B: []byte(s)} }
func OfList(elems []Value) Value { return Value{K: List, L: elems} }
func OfDecimal(unscaled *big.Int, scale int32) Value {
	return Value{K: Decimal, D: unscaled, Scale: scale}
}

// IsNaN reports whether v is a floating-point NaN.
func (v Value) IsNaN() bool { return v.K == Float && math.IsNaN(v.F) }

// IsZeroFloat reports whether v is +0.0 or -0.0.
func (v Value) IsZeroFloat() bool { return v.K == Float && v.F == 0 }

// Compare orders a and b. ok is false when they are not comparable (different
// domains, or a NaN).
func Compare(a, b Value) (c int, ok bool) {
	switch {
	case a.K == b.K:
	case a.K == Int && b.K == Uint:
		if a.I < 0 {
			return -1, true
		}
		return cmpU(uint64(a.I), b.U), true
	case a.K == Uint && b.K == Int:
		if b.I < 0 {
			return 1, true
		}
		return cmpU(a.U, uint64(b.I)), true
	default:
		return 0, false
	}
	switch a.K {
	case Bool, Int:
		switch {
		case a.I < b.I:
			return -1, true
		case a.I > b.I:
			return 1, true
		}
		return 0, true
	case Uint:
		return cmpU(a.U, b.U), true
	case Float:
		if math.IsNaN(a.F) || math.IsNaN(b.F) {
			return 0, false
		}
		switch {
		case a.F < b.F:
			return -1, true
		case a.F > b.F:
			return 1, true
		}
		return 0, true
	case Bytes:
		return bytes.Compare(a.B, b.B), true
	case Decimal:
		if a.D == nil || b.D == nil {
			return 0, false
		}
		x, y := a.D, b.D
		if a.Scale < b.Scale {
			x = rescale(a.D, b.Scale-a.Scale)
		} else if b.Scale < a.Scale {
			y = rescale(b.D, a.Scale-b.Scale)
		}
		return x.Cmp(y), true
	}
	return 0, false
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func rescale(d *big.Int, by int32) *big.Int {
	return new(big.Int).Mul(d, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(by)), nil))
}

// Equal reports whether a and b compare equal (false when not comparable).
func Equal(a, b Value) bool {
	c, ok := Compare(a, b)
	return ok && c == 0
}

// String renders v for messages and explain output.
func (v Value) String() string {
	switch v.K {
	case Bool:
		return strconv.FormatBool(v.I != 0)
	case Int:
		return strconv.FormatInt(v.I, 10)
	case Uint:
		return strconv.FormatUint(v.U, 10)
	case Float:
		return strconv.FormatFloat(v.F, 'g', -1, 64)
	case Bytes:
		if isPrintable(v.B) {
			return strconv.Quote(string(v.B))
		}
		return "0x" + hex.EncodeToString(v.B)
	case Decimal:
		if v.D == nil {
			return "decimal(nil)"
		}
		r := new(big.Rat).SetFrac(v.D, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(v.Scale)), nil))
		return r.FloatString(int(v.Scale))
	case List:
		parts := make([]string, len(v.L))
		for i, e := range v.L {
			parts[i] = e.String()
			if e.K == Invalid {
				parts[i] = "NULL"
			}
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "invalid"
}

func isPrintable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// GoString implements fmt.GoStringer for test output.
func (v Value) GoString() string { return fmt.Sprintf("%s(%s)", v.K, v.String()) }

// HasPrefix reports whether v (Bytes) starts with p.
func HasPrefix(v, p Value) bool { return v.K == Bytes && p.K == Bytes && bytes.HasPrefix(v.B, p.B) }

// TruncateBytes returns the first n bytes of v (Bytes).
func TruncateBytes(v Value, n int) Value {
	if v.K != Bytes || len(v.B) <= n {
		return v
	}
	return Value{K: Bytes, B: v.B[:n]}
}
