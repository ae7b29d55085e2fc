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
	switch x := e.(type) {
	case *predicate.Leaf:
		a := answer(x)
		if a.Unknown || a.Positions == nil {
			return nil, false
		}
		return a.Positions, true
	case predicate.And:
		var acc *roaring64.Bitmap
		for _, k := range x.Kids {
			p, ok := Combine(k, answer)
			if !ok {
				continue
			}
			if acc == nil {
				acc = p.Clone()
			} else {
				acc.And(p)
			}
		}
		return acc, acc != nil
	case predicate.Or:
		acc := roaring64.New()
		for _, k := range x.Kids {
			p, ok := Combine(k, answer)
			if !ok {
				return nil, false
			}
			acc.Or(p)
		}
		return acc, true
	case predicate.Const:
		if !x.Value {
			return roaring64.New(), true
		}
	}
	return nil, false
}
