package colfilter

import (
	"sync"

	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Scratch slices of the filter and of its callers (candidate rows, their
// positions in decoded columns, selections, three-valued results): one
// set per row group in flight, reused instead of collected. Not zeroed:
// every user writes each element before reading it.
var (
	RowScratch ScratchPool[int64] // rows: LeafRowsOf's and LeavesRowsOf's results
	PosScratch ScratchPool[int32] // positions: selections, Vector.Pos with Filter.Scratch
	triScratch ScratchPool[predicate.Tri]
)

// ScratchPool keeps released slices of at least minScratch elements.
type ScratchPool[T any] struct{ p sync.Pool }

const minScratch = 1024

// Get returns a slice of n elements (arbitrary contents).
func (s *ScratchPool[T]) Get(n int) []T {
	if v, ok := s.p.Get().(*[]T); ok && cap(*v) >= n {
		return (*v)[:n]
	}
	return make([]T, n, max(n, minScratch))
}

// Put releases b: its caller must not use it (or a slice of it) again.
func (s *ScratchPool[T]) Put(b []T) {
	if cap(b) >= minScratch {
		b = b[:0]
		s.p.Put(&b)
	}
}
