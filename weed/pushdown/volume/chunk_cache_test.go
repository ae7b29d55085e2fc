package volume

import (
	"bytes"
	"context"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

func TestReadsInsideAColumnChunkComeFromTheChunkCacheAfterTheFirstAndEqualTheFile(t *testing.T) {
	data, _ := demoRowGroup(t, 5000)
	src := &countingReaderAt{r: bytes.NewReader(data)}
	ft, err := footer.Load(context.Background(), footer.Identity{Path: "f.parquet", Size: int64(len(data))}, source{src})
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{}
	s.SetChunkCacheBytes(4 << 20)
	cs := s.cachedChunks(source{src}, "f.parquet", ft.IdentityDir(), ft)
	ch := ft.Chunks[0][3] // message
	read := func(off, n int64) []byte {
		t.Helper()
		p := make([]byte, n)
		if _, err := cs.ReadAt(context.Background(), p, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p, data[off:off+n]) {
			t.Fatalf("[%d, +%d) differs from the file", off, n)
		}
		return p
	}
	before := src.n.Load()
	read(ch.Start+10, 100) // the whole chunk read once
	if got := src.n.Load() - before; got != ch.Length {
		t.Fatalf("first read inside the chunk read %d bytes, want the chunk's %d", got, ch.Length)
	}
	before = src.n.Load()
	read(ch.Start, ch.Length)
	read(ch.Start+ch.Length-7, 7)
	if got := src.n.Load() - before; got != 0 {
		t.Errorf("warm reads inside the chunk read %d bytes from the file", got)
	}
	// the footer's bytes and a read across two chunks are read as asked
	before = src.n.Load()
	read(int64(len(data))-8, 8)
	next := ft.Chunks[0][2]
	read(next.Start+next.Length-4, 8)
	if got := src.n.Load() - before; got != 16 {
		t.Errorf("reads outside one chunk read %d bytes, want the 16 asked", got)
	}
	// a chunk over 1/8 of the cache is read as asked (182 KB against 1 MiB)
	s.SetChunkCacheBytes(1 << 20)
	small := s.cachedChunks(source{src}, "f.parquet", ft.IdentityDir(), ft)
	if ch.Length <= (1<<20)/8 {
		t.Fatalf("the message chunk is %d bytes: the test needs one over 1/8 of 1 MiB", ch.Length)
	}
	for range 2 {
		before = src.n.Load()
		p := make([]byte, 100)
		if _, err := small.ReadAt(context.Background(), p, ch.Start+10); err != nil || !bytes.Equal(p, data[ch.Start+10:ch.Start+110]) {
			t.Fatalf("read through a small cache: %v", err)
		}
		if got := src.n.Load() - before; got != 100 {
			t.Errorf("a chunk over 1/8 of the cache: read %d bytes, want the 100 asked", got)
		}
	}
	// no cache: every read as asked
	s.SetChunkCacheBytes(0)
	if c := s.cachedChunks(source{src}, "f.parquet", ft.IdentityDir(), ft); c != (source{src}) {
		t.Errorf("with no chunk cache the source is wrapped")
	}
}
