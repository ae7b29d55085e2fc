package fileread

import (
	"errors"
	"testing"
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
