package connector

import (
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// A rewrite of the same size is another version: bytes cached from the
// version before are never served for it.
func TestCachedRangesAreServedOnlyToTheFileVersionTheyWereReadFrom(t *testing.T) {
	ft := &fetcher{capacity: 1 << 20}
	old := fileVersion{footer.Identity{Path: "s3://b/t/data/f.parquet", Size: 100}, "100-10-aaaa"}
	ft.remember(old, span{off: 0, data: []byte("0123456789")})
	if b, ok := ft.cached(old, byteRange{Off: 2, Len: 3}); !ok || string(b) != "234" {
		t.Fatalf("the version the bytes came from: got %q, %v", b, ok)
	}
	rewritten := old
	rewritten.identity = "100-10-bbbb"
	if b, ok := ft.cached(rewritten, byteRange{Off: 2, Len: 3}); ok {
		t.Fatalf("a same-size rewrite was served %q cached from the version before", b)
	}
}
