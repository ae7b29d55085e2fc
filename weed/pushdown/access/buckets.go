package access

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3tables"

	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// TableBucketTTL is how long a bucket's kind is remembered.
const TableBucketTTL = 10 * time.Second

// TableBuckets answers whether a bucket is an S3 table bucket (the
// s3tables marker on its /buckets entry), remembering answers briefly.
type TableBuckets struct {
	filer FilerFunc
	known *expirable.LRU[string, bool]
}

// NewTableBuckets looks buckets up through filer.
func NewTableBuckets(filer FilerFunc) *TableBuckets {
	return &TableBuckets{filer: filer, known: expirable.NewLRU[string, bool](4096, nil, TableBucketTTL)}
}

// IsTableBucket reports whether bucket is a table bucket (false when it
// does not exist).
func (t *TableBuckets) IsTableBucket(ctx context.Context, bucket string) (bool, error) {
	if t == nil {
		return false, perr.New(perr.Internal, "no table bucket lookup configured")
	}
	if ok, hit := t.known.Get(bucket); hit {
		return ok, nil
	}
	var is bool
	err := t.filer(func(c filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, c, &filer_pb.LookupDirectoryEntryRequest{Directory: fileread.BucketsDir, Name: bucket})
		if err != nil {
			if errors.Is(err, filer_pb.ErrNotFound) {
				return nil
			}
			return err
		}
		is = resp.Entry.GetIsDirectory() && s3tables.IsTableBucketEntry(resp.Entry)
		return nil
	})
	if err != nil {
		return false, perr.Wrap(perr.Unavailable, fmt.Errorf("look up bucket %s: %w", perr.Quote(bucket), err))
	}
	t.known.Add(bucket, is)
	return is, nil
}
