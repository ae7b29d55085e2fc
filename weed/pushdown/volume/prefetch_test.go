package volume

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

type countingSource struct {
	b     []byte
	reads int
}

func (c *countingSource) Size() int64 { return int64(len(c.b)) }
func (c *countingSource) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	c.reads++
	return copy(p, c.b[off:]), nil
}

func TestPrefetchedColumnReadsTheSameBytesAndGoesToTheFileOnlyOutsideItsChunks(t *testing.T) {
	data := make([]byte, 10_000)
	r := rand.New(rand.NewPCG(3, 3))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	ft := &footer.Footer{Chunks: [][]footer.Chunk{
		{{Start: 4, Length: 100}, {Start: 104, Length: 900}},
		{{Start: 5000, Length: 50}, {Start: 5050, Length: 3000}},
	}}
	src := &countingSource{b: data}
	p, err := prefetchColumn(context.Background(), src, ft, 1)
	if err != nil {
		t.Fatal(err)
	}
	if src.reads != 2 {
		t.Fatalf("prefetch made %d reads, want one per row group (2)", src.reads)
	}
	for _, tc := range []struct {
		off, n int64
		file   bool // served by the file, not memory
	}{{104, 900, false}, {500, 10, false}, {5050, 3000, false}, {8049, 1, false}, {0, 50, true}, {1000, 10, true}, {8049, 2, true}, {9000, 100, true}} {
		before := src.reads
		got := make([]byte, tc.n)
		if n, err := p.ReadAt(context.Background(), got, tc.off); err != nil || int64(n) != tc.n {
			t.Fatalf("read %d+%d: %d bytes, %v", tc.off, tc.n, n, err)
		}
		if !bytes.Equal(got, data[tc.off:tc.off+tc.n]) {
			t.Fatalf("read %d+%d: bytes differ from the file's", tc.off, tc.n)
		}
		if fromFile := src.reads > before; fromFile != tc.file {
			t.Fatalf("read %d+%d went to the file: %v, want %v", tc.off, tc.n, fromFile, tc.file)
		}
	}
	// A layout outside the file is not prefetched: the build's reader reports it.
	bad := &footer.Footer{Chunks: [][]footer.Chunk{{{Start: 9_990, Length: 100}}}}
	if q, _ := prefetchColumn(context.Background(), src, bad, 0); q != footer.Source(src) {
		t.Fatal("a chunk past the end of the file was prefetched")
	}
}
