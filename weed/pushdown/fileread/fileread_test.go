package fileread

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

func TestFilerPathTakesTheKeyLiterallyAndRefusesWhatIsNotABucketObject(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"s3://warehouse/t/data/a.parquet", "/buckets/warehouse/t/data/a.parquet"},
		{"s3a://warehouse/t/data/a.parquet", "/buckets/warehouse/t/data/a.parquet"},
		{"S3N://warehouse/t/a.parquet", "/buckets/warehouse/t/a.parquet"},
		// percent escapes are part of the key, as in S3 and S3FileIO
		{"s3://warehouse/t/data/partition_col=08%3A21%3A09/f.parquet", "/buckets/warehouse/t/data/partition_col=08%3A21%3A09/f.parquet"},
		{"s3://warehouse/t/data/p=a b/100%/f.parquet", "/buckets/warehouse/t/data/p=a b/100%/f.parquet"},
		{"s3://warehouse/t/q?x=1#frag", "/buckets/warehouse/t/q?x=1#frag"},
		{"/buckets/warehouse/t/../t/a.parquet", "/buckets/warehouse/t/a.parquet"},
	} {
		got, err := FilerPath(c.in)
		if err != nil || got != c.want {
			t.Errorf("FilerPath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"", "warehouse/t/a.parquet", "file:///tmp/a.parquet", "gs://b/k", "s3://", "s3://bucket",
		"s3://bucket/", "s3:///key", "s3://b/t/../../etc/passwd", "s3://b/./k",
	} {
		if got, err := FilerPath(bad); !errors.Is(err, ErrBadLocation) {
			t.Errorf("FilerPath(%q) = %q, %v; want ErrBadLocation", bad, got, err)
		}
	}
}

func TestARangeIsWithinAFileOnlyWhenNoArithmeticOverflows(t *testing.T) {
	const size = 100
	for _, tc := range []struct {
		r    Range
		want bool
	}{
		{Range{0, 100}, true}, {Range{100, 0}, true}, {Range{99, 1}, true},
		{Range{99, 2}, false}, {Range{101, 0}, false}, {Range{-1, 1}, false}, {Range{0, -1}, false},
		{Range{math.MaxInt64, 1}, false}, {Range{1, math.MaxInt64}, false}, {Range{math.MaxInt64, math.MaxInt64}, false},
	} {
		if got := tc.r.Within(size); got != tc.want {
			t.Errorf("%+v within %d: %v, want %v", tc.r, size, got, tc.want)
		}
	}
}

func TestAnInlineFileAnswersARangePastItsEndOutOfRangeInsteadOfPanicking(t *testing.T) {
	r := NewWithLookup(nil, nil, nil, "")
	f, err := r.OpenEntry(context.Background(), "/buckets/b/k", &filer_pb.Entry{Name: "k", Content: []byte("hello"),
		Attributes: &filer_pb.FuseAttributes{FileSize: 5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range []Range{{math.MaxInt64, 1}, {6, 0}, {4, 2}, {1, math.MaxInt64}} {
		if _, err := f.ReadRanges(context.Background(), []Range{rg}); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("range %+v: %v, want ErrOutOfRange", rg, err)
		}
	}
	got, err := f.ReadRanges(context.Background(), []Range{{1, 3}, {5, 0}})
	if err != nil || string(got[0]) != "ell" || len(got[1]) != 0 {
		t.Fatalf("in-range reads: %q, %v", got, err)
	}
	// an entry claiming more bytes than it holds reads zeros past them
	f.Size = 8
	got, err = f.ReadRanges(context.Background(), []Range{{3, 5}, {7, 1}})
	if err != nil || string(got[0]) != "lo\x00\x00\x00" || got[1][0] != 0 {
		t.Fatalf("reads past the inline content: %q, %v", got, err)
	}
}
