// Package arrowmem is lakeweed's one pooled Arrow allocator (Pooled):
// buffers of 32 KiB and more recycled through power-of-two size classes.
//
//	Allocate(n) ─▶ a freed buffer of n's class, zeroed, or a new one of the class size
//	Free(b)     ─▶ back to the class of the largest power of two b holds (sync.Pool)
package arrowmem

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Pooled is the allocator of decoded data: the connector's column chunk
// buffers, decompressed pages, decoded arrays and projected results, and
// the volume service's aggregate decodes. Buffers of 32 KiB and more come
// from power-of-two size classes and go back to them when their array is
// released, so a scan of many row groups reuses a few dozen buffers
// instead of handing the collector a new one per page and column (GC was a
// quarter of a warm scan's CPU). Smaller buffers are Go's, as with
// memory.DefaultAllocator.
//
// A released buffer holds the next array's bytes: whoever keeps a value
// past its record's release (a string view, above all) copies it.
var Pooled memory.Allocator = newPooledAllocator()

const (
	minPooledShift = 15 // 32 KiB
	maxPooledShift = 28 // 256 MiB
)

// pooledAllocator hands out zeroed buffers like memory.GoAllocator, each
// exactly as long and as large (len = cap = size: arrow-go's kernels take
// a buffer's capacity for its length). A freed buffer of at least 32 KiB
// is kept in the class of the largest power of two it holds and serves any
// request up to that size (sync.Pool: what a collection finds unused is
// dropped).
type pooledAllocator struct {
	classes [maxPooledShift + 1]sync.Pool
}

func newPooledAllocator() *pooledAllocator { return &pooledAllocator{} }

// classFor is the class whose buffers hold size bytes (the smallest power
// of two at least size), or -1 outside the pooled sizes.
func classFor(size int) int {
	if size < 1<<minPooledShift || size > 1<<maxPooledShift {
		return -1
	}
	return bits.Len(uint(size - 1))
}

// classOf is the class a buffer of capacity n serves (the largest power of
// two at most n), or -1.
func classOf(n int) int {
	if n < 1<<minPooledShift {
		return -1
	}
	return min(bits.Len(uint(n))-1, maxPooledShift)
}

func (a *pooledAllocator) Allocate(size int) []byte {
	c := classFor(size)
	if c < 0 {
		return memory.DefaultAllocator.Allocate(size)
	}
	if p, ok := a.classes[c].Get().(*[]byte); ok {
		b := (*p)[:size:size]
		clear(b)
		return b
	}
	// Go allocates objects this large page-aligned: 64-byte alignment holds.
	// The class's full size, so the buffer serves the class when reused.
	return make([]byte, 1<<c)[:size:size]
}

func (a *pooledAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *pooledAllocator) Free(b []byte) {
	c := classOf(cap(b))
	if c < 0 {
		return // small: the collector's
	}
	b = b[:cap(b)]
	a.classes[c].Put(&b)
}
