package arrowmem

import (
	"bytes"
	"testing"
)

func TestPooledAllocatorReusesFreedBuffersZeroed(t *testing.T) {
	a := newPooledAllocator()
	b := a.Allocate(100_000)
	if len(b) != 100_000 || cap(b) != 100_000 {
		t.Fatalf("len %d cap %d, want both 100000 (arrow-go's kernels take the capacity for the length)", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xff
	}
	a.Free(b)
	// a reused buffer (if the pool kept it) comes back zeroed
	for i := 0; i < 4; i++ {
		c := a.Allocate(120_000)
		if !bytes.Equal(c, make([]byte, 120_000)) {
			t.Fatal("a reallocated buffer is not zeroed")
		}
		for j := range c {
			c[j] = 0xee
		}
		a.Free(c)
	}
}

func TestPooledAllocatorReallocateKeepsContentAndZeroesGrowth(t *testing.T) {
	a := newPooledAllocator()
	b := a.Allocate(40_000)
	for i := range b {
		b[i] = byte(i)
	}
	b = b[:40_000]
	g := a.Reallocate(30_000, b) // shrinking: in place
	if &g[0] != &b[0] || len(g) != 30_000 {
		t.Error("shrinking moved the buffer")
	}
	g = a.Reallocate(40_000, g) // back within its capacity: in place, the grown part zeroed
	if &g[0] != &b[0] || g[29_999] != byte(29_999%256) || g[30_000] != 0 {
		t.Error("regrowth within the capacity did not keep the kept bytes and zero the rest")
	}
	for i := 30_000; i < 40_000; i++ {
		g[i] = byte(i)
	}
	h := a.Reallocate(300_000, g) // beyond it: a new buffer
	for i := 0; i < 40_000; i++ {
		if h[i] != byte(i) {
			t.Fatalf("byte %d: %d, want %d", i, h[i], byte(i))
		}
	}
	if !bytes.Equal(h[40_000:], make([]byte, 300_000-40_000)) {
		t.Fatal("grown bytes are not zero")
	}
}

func TestPooledAllocatorHandsOutNoBufferSmallerThanAsked(t *testing.T) {
	a := newPooledAllocator()
	a.Free(a.Allocate(100)) // small: Go's
	a.Free(make([]byte, 50_000))
	a.Free(a.Allocate(1 << 16)[8:]) // a sub-slice: serves a smaller class
	for _, size := range []int{32 << 10, 40_000, 50_000, 1 << 16, 70_000} {
		for i := 0; i < 4; i++ {
			b := a.Allocate(size)
			if len(b) != size || cap(b) != size {
				t.Fatalf("asked %d: len %d cap %d", size, len(b), cap(b))
			}
			b[size-1] = 1 // within the buffer
			a.Free(b)
		}
	}
}
