package indexing

import (
	"context"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

type sizedIndex int64

func (s sizedIndex) Eval(context.Context, *predicate.Leaf) (sideindex.Answer, error) {
	return sideindex.Answer{Unknown: true}, nil
}
func (s sizedIndex) Bytes() int64 { return int64(s) }

func TestTheIndexCacheIsBoundedByBytesAndDropsIndexesWhosePayloadChanged(t *testing.T) {
	c := NewIndexCache(100)
	c.Tracker = freshness.New(16)
	c.Add("a", "s3://w/t/data/.index/a/x/btree.fid_1", freshness.Now(), sizedIndex(60), 60)
	c.Add("b", "s3://w/t/data/.index/b/x/btree.fid_1", freshness.Now(), sizedIndex(30), 30)
	if _, ok := c.Get("a"); !ok {
		t.Fatal("a was not cached")
	}
	c.Add("c", "s3://w/t/data/.index/c/x/btree.fid_1", freshness.Now(), sizedIndex(50), 50) // evicts b (least recent)
	if _, ok := c.Get("b"); ok {
		t.Fatal("b survived a cache over its byte bound")
	}
	c.Add("huge", "s3://w/t/data/.index/h/x/btree.fid_1", freshness.Now(), sizedIndex(500), 500)
	if _, ok := c.Get("huge"); ok {
		t.Fatal("an index larger than the whole cache was kept")
	}
	time.Sleep(time.Millisecond)
	c.Tracker.Changed("/buckets/w/t/data/.index/a/x/btree.fid_1") // the payload was rewritten or deleted
	if _, ok := c.Get("a"); ok {
		t.Fatal("an index whose payload changed was served")
	}
	entries, bytes, capacity, hits, misses, evictions := c.Stats()
	if entries != 1 || bytes != 50 || capacity != 100 || hits != 1 || misses != 3 || evictions != 2 {
		t.Fatalf("stats = %d entries, %d bytes, %d capacity, %d hits, %d misses, %d evictions", entries, bytes, capacity, hits, misses, evictions)
	}
}
