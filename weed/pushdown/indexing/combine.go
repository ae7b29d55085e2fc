package indexing

import (
	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Answer is what an index said of one leaf over one file: the positions
// that might match (a superset of the matching rows) unless Unknown.
type Answer struct {
	Unknown   bool
	Exact     bool
	Positions *roaring64.Bitmap
}

// Combine evaluates a bound predicate over one file from the answers of
// its leaves: AND intersects what is known (an unknown child is the
// identity), OR unions and is unknown as soon as one child is, constants
// and residuals are unknown (TRUE) or empty (FALSE). known is false when
// nothing can be said; positions is then nil.
func Combine(e predicate.Expr, answer func(*predicate.Leaf) Answer) (positions *roaring64.Bitmap, known bool) {
	r := CombineExact(e, answer)
	return r.Positions, !r.Unknown
}

// CombineExact is Combine with exactness: the result is Exact — its
// positions are exactly the rows matching e — when every leaf was
// answered exactly (an AND or OR is exact only if every child is known
// and exact; FALSE is exact, TRUE and residuals are unknown).
func CombineExact(e predicate.Expr, answer func(*predicate.Leaf) Answer) Answer {
	unknown := Answer{Unknown: true}
	switch x := e.(type) {
	case *predicate.Leaf:
		a := answer(x)
		if a.Unknown || a.Positions == nil {
			return unknown
		}
		return a
	case predicate.And:
		var acc *roaring64.Bitmap
		exact := true
		for _, k := range x.Kids {
			a := CombineExact(k, answer)
			if a.Unknown {
				exact = false
				continue
			}
			exact = exact && a.Exact
			if acc == nil {
				acc = a.Positions.Clone()
			} else {
				acc.And(a.Positions)
			}
		}
		if acc == nil {
			return unknown
		}
		return Answer{Positions: acc, Exact: exact}
	case predicate.Or:
		acc := roaring64.New()
		exact := true
		for _, k := range x.Kids {
			a := CombineExact(k, answer)
			if a.Unknown {
				return unknown
			}
			exact = exact && a.Exact
			acc.Or(a.Positions)
		}
		return Answer{Positions: acc, Exact: exact}
	case predicate.Const:
		if !x.Value {
			return Answer{Positions: roaring64.New(), Exact: true}
		}
	}
	return unknown
}
