package connector

import (
	"bytes"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// A read may cross fetched ranges that touch or overlap, in any order of
// their ends (a plan's coalesced range holding smaller cached ones); a
// byte not fetched fails the read.
func TestSparseFileReadsAcrossTouchingAndOverlappingRanges(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	sf := &sparseFile{path: "mem", size: int64(len(data))}
	for _, r := range []byteRange{{Off: 100, Len: 400}, {Off: 150, Len: 50}, {Off: 480, Len: 20}, {Off: 500, Len: 100}, {Off: 700, Len: 10}} {
		sf.add(r.Off, data[r.Off:r.Off+r.Len])
	}
	for _, r := range []byteRange{{Off: 100, Len: 500}, {Off: 210, Len: 300}, {Off: 160, Len: 10}, {Off: 599, Len: 1}, {Off: 700, Len: 10}} {
		b := make([]byte, r.Len)
		if _, err := sf.ReadAt(b, r.Off); err != nil || !bytes.Equal(b, data[r.Off:r.Off+r.Len]) {
			t.Errorf("read [%d, %d): err %v, equal %v", r.Off, r.Off+r.Len, err, bytes.Equal(b, data[r.Off:r.Off+r.Len]))
		}
	}
	for _, r := range []byteRange{{Off: 50, Len: 60}, {Off: 590, Len: 20}, {Off: 650, Len: 10}, {Off: 705, Len: 10}} {
		if _, err := sf.ReadAt(make([]byte, r.Len), r.Off); err == nil {
			t.Errorf("read [%d, %d) of bytes not fetched succeeded", r.Off, r.Off+r.Len)
		}
	}
}

// An evicted span's bytes are not kept alive by the range cache: not in
// the file's list (nor past its end, in the list's backing array), and a
// file whose spans are all evicted leaves the cache (the bytes of every
// row group of a million-row SELECT * stayed reachable: 200 MB of heap).
func TestTheRangeCacheKeepsNoEvictedBytes(t *testing.T) {
	ft := &fetcher{capacity: 100}
	a := fileVersion{footer.Identity{Path: "s3://b/a", Size: 1000}, ""}
	b := fileVersion{footer.Identity{Path: "s3://b/b", Size: 1000}, ""}
	ft.remember(a, span{0, make([]byte, 40)})
	ft.remember(a, span{100, make([]byte, 40)})
	ft.remember(b, span{0, make([]byte, 40)}) // evicts a@0
	spans := ft.spans[a]
	if len(spans) != 1 || spans[0].off != 100 {
		t.Fatalf("file a keeps %d spans, want the one at 100", len(spans))
	}
	for _, sp := range spans[len(spans):cap(spans)] {
		if sp.data != nil {
			t.Fatalf("an evicted span of %d bytes is still referenced past the list's end", len(sp.data))
		}
	}
	ft.remember(b, span{100, make([]byte, 40)}) // evicts a@100: a has none left
	if _, ok := ft.spans[a]; ok || ft.heldBytes() != 80 {
		t.Fatalf("file a is still in the cache (%v) or %d bytes held, want 80", ok, ft.heldBytes())
	}
}
