package access

import (
	"strings"
	"testing"
)

// FuzzParseLocation: any client location is accepted as a bucket object or
// refused with a short message, never a panic; an accepted one has no
// traversal and stays inside /buckets.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"s3://warehouse/ns/t/data/a.parquet", "/buckets/w/k", "s3://w/../../etc/passwd", "s3://w/%2e%2e/x",
		"s3://vault@warehouse/x", "s3a://w/k/.index/f/x", "gs://w/k", "", "/etc/iam/identities.json", strings.Repeat("/a", 3000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		l, err := ParseLocation(loc)
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("a refusal of %d bytes for a location of %d", len(err.Error()), len(loc))
			}
			return
		}
		if !strings.HasPrefix(l.FilerPath, "/buckets/") || l.Bucket == "" || l.Key == "" {
			t.Fatalf("%q accepted as %+v", loc, l)
		}
		for _, seg := range strings.Split(l.FilerPath, "/")[1:] {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("%q accepted with segment %q", loc, seg)
			}
		}
	})
}
