package footer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
)

func TestAFileRewrittenWithTheSameSizeIsReloadedOnceTheTrackerSaysItChanged(t *testing.T) {
	v1 := parquetFile(t, 1000, 500, false)
	files := map[string][]byte{"s3://w/a.parquet": v1}
	c, reads, _ := newTestCache(files, 64<<20)
	c.Tracker = freshness.New(16)
	id := Identity{Path: "s3://w/a.parquet", Size: int64(len(v1))}
	f1, _, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, hit, _ := c.Get(context.Background(), id); !hit {
		t.Fatalf("an unchanged file was not served from the cache")
	}
	// Rewritten in place (same size): only the tracker can tell, and it
	// names the file by its filer path.
	time.Sleep(time.Millisecond)
	c.Tracker.Changed("/buckets/w/a.parquet")
	before := reads.Load()
	f2, hit, err := c.Get(context.Background(), id)
	if err != nil || hit || reads.Load() == before || f2 == f1 {
		t.Fatalf("after the change: hit=%v err=%v reads %d→%d same footer=%v", hit, err, before, reads.Load(), f2 == f1)
	}
	if f2.gen == f1.gen {
		t.Fatalf("a reloaded footer kept the old generation, so its bloom filters would be the old ones")
	}
	// A reset (events may have been missed) reloads everything.
	c.Tracker.Reset()
	if _, hit, _ := c.Get(context.Background(), id); hit {
		t.Fatalf("an entry loaded before a reset was served")
	}
}

func TestAFooterHashNamesTheFooterBytes(t *testing.T) {
	a := parquetFile(t, 1000, 500, false)
	b := parquetFile(t, 1001, 500, false)
	fa, err := Load(context.Background(), Identity{Path: "a", Size: int64(len(a))}, countingSource{data: a, reads: &atomic.Int64{}, bytes: &atomic.Int64{}})
	if err != nil {
		t.Fatal(err)
	}
	fa2, _ := Load(context.Background(), Identity{Path: "a", Size: int64(len(a))}, countingSource{data: a, reads: &atomic.Int64{}, bytes: &atomic.Int64{}})
	fb, _ := Load(context.Background(), Identity{Path: "b", Size: int64(len(b))}, countingSource{data: b, reads: &atomic.Int64{}, bytes: &atomic.Int64{}})
	if len(fa.Hash) != 32 || fa.Hash != fa2.Hash || fa.Hash == fb.Hash {
		t.Fatalf("hashes %q %q %q: want 32 hex digits, equal for equal footers, different otherwise", fa.Hash, fa2.Hash, fb.Hash)
	}
	if got := IdentityDir(10, 3, fa.Hash); got != "10-3-"+fa.Hash {
		t.Fatalf("IdentityDir = %q", got)
	}
}

// blockingSource blocks reads until release is closed.
type blockingSource struct {
	countingSource
	release chan struct{}
}

func (s blockingSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return s.countingSource.ReadAt(ctx, p, off)
}

func TestACanceledPlanDoesNotFailConcurrentPlansOfTheSameFile(t *testing.T) {
	data := parquetFile(t, 1000, 500, false)
	release := make(chan struct{})
	opened := make(chan struct{}, 4)
	c := NewCache("test", 64<<20, func(_ context.Context, id Identity) (Source, error) {
		opened <- struct{}{}
		return blockingSource{countingSource{data: data, reads: &atomic.Int64{}, bytes: &atomic.Int64{}}, release}, nil
	})
	id := Identity{Path: "a", Size: int64(len(data))}
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, _, err := c.Get(first, id)
		firstErr <- err
	}()
	<-opened // the first caller's load is under way
	secondDone := make(chan error, 1)
	go func() {
		_, _, err := c.Get(context.Background(), id)
		secondDone <- err
	}()
	time.Sleep(20 * time.Millisecond) // the second caller joins the same load
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("the canceled caller got %v, want context.Canceled", err)
	}
	close(release)
	select {
	case err := <-secondDone:
		if err != nil {
			t.Fatalf("a concurrent plan of the same file failed because another was canceled: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second caller never got its footer")
	}
	if len(opened) != 0 {
		t.Fatalf("the file was opened %d more times; want one shared load", len(opened))
	}
}

func TestPeekManyServesOnlyFreshCachedFootersAndCountsTheirHits(t *testing.T) {
	a, b := parquetFile(t, 100, 50, false), parquetFile(t, 120, 50, false)
	files := map[string][]byte{"s3://w/a.parquet": a, "s3://w/b.parquet": b}
	c, _, _ := newTestCache(files, 64<<20)
	c.Tracker = freshness.New(16)
	ida, idb := Identity{Path: "s3://w/a.parquet", Size: int64(len(a))}, Identity{Path: "s3://w/b.parquet", Size: int64(len(b))}
	fa, _, err := c.Get(context.Background(), ida)
	if err != nil {
		t.Fatal(err)
	}
	ids := []Identity{ida, idb, {Path: ida.Path, Size: ida.Size + 1}}
	out := make([]*Footer, len(ids))
	hits := c.Stats().Hits
	if n := c.PeekMany(ids, out); n != 1 || out[0] != fa || out[1] != nil || out[2] != nil {
		t.Fatalf("PeekMany found %d: %v; want only a's footer (b not loaded, a of another size is another file)", n, out)
	}
	if got := c.Stats().Hits - hits; got != 1 {
		t.Fatalf("PeekMany counted %d hits, want 1", got)
	}
	time.Sleep(time.Millisecond)
	c.Tracker.Changed("/buckets/w/a.parquet")
	if n := c.PeekMany(ids[:1], out[:1]); n != 0 || out[0] != nil {
		t.Fatalf("PeekMany served a footer of a file changed since it was loaded")
	}
}
