package deletes

import (
	"context"
	"fmt"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
)

// A persisted bitmap is trusted only while the data file and every delete
// file it was computed from still have the ETags they had then; nothing is
// persisted for a data file whose identity the service did not check.
func TestPersistedBitmapsAreTrustedOnlyWhileEveryInputIsUnchanged(t *testing.T) {
	fx := newFixture(t)
	store := newMemStore()
	etags := map[string]string{}
	stat := func(_ context.Context, loc string) (string, error) {
		if e, ok := etags[loc]; ok {
			return e, nil
		}
		return "", fmt.Errorf("%s: not found", loc)
	}
	for _, f := range []File{fx.pos1, fx.pos2, fx.eq1} {
		etags[f.Path] = "v1"
	}
	etags[fx.data.Path] = "v1"
	dels := []File{fx.pos1, fx.pos2, fx.eq1}
	opt := Options{Stat: stat, StoreKey: testStoreKey}

	unchecked := fx.data
	unchecked.FooterHash = ""
	if _, err := NewComputer(fx.fs.open, store, opt).Deleted(context.Background(), unchecked, dels, fx.schema, nil); err != nil {
		t.Fatal(err)
	}
	if store.saves != 0 {
		t.Fatalf("%d payloads saved for a data file whose identity was not checked", store.saves)
	}

	data := fx.data
	data.FooterHash = "0123456789abcdef0123456789abcdef"
	first, err := NewComputer(fx.fs.open, store, opt).Deleted(context.Background(), data, dels, fx.schema, nil)
	if err != nil || store.saves != 2 {
		t.Fatalf("first computation: %v, %d saves; want the position bitmap and one equality pair", err, store.saves)
	}
	served := func() Result {
		t.Helper()
		res, err := NewComputer(fx.fs.open, store, opt).Deleted(context.Background(), data, dels, fx.schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Deleted.Equals(first.Deleted) {
			t.Fatalf("deleted positions differ from the first computation")
		}
		return res
	}
	if res := served(); res.CacheHits != 2 {
		t.Fatalf("unchanged inputs: %+v; want both payloads served", res)
	}
	etags[fx.pos2.Path] = "v2" // a position delete file rewritten in place
	if res := served(); res.CacheHits != 1 || res.CacheMisses != 1 {
		t.Fatalf("a changed position delete file: %+v; want the position bitmap recomputed, the equality pair served", res)
	}
	etags[fx.data.Path] = "v2" // the data file rewritten in place
	if res := served(); res.CacheHits != 0 {
		t.Fatalf("a changed data file: %+v; want everything recomputed", res)
	}
	delete(etags, fx.eq1.Path) // an input that cannot be checked
	if res := served(); res.CacheHits != 1 || res.CacheMisses != 1 {
		t.Fatalf("an equality delete file that cannot be stat'ed: %+v; want its pair recomputed, the position bitmap served", res)
	}
}

// A cached bitmap whose delete file changed since it was computed is not
// served from memory.
func TestMemoryCachedBitmapsOfChangedDeleteFilesAreRecomputed(t *testing.T) {
	fx := newFixture(t)
	tr := freshness.New(16)
	c := NewComputer(fx.fs.open, nil, Options{Tracker: tr})
	dels := []File{fx.pos1}
	if _, err := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil); err != nil {
		t.Fatal(err)
	}
	if res, _ := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil); res.CacheHits != 1 {
		t.Fatalf("unchanged: %+v; want a memory hit", res)
	}
	tr.Changed(fx.pos1.Path)
	if res, _ := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil); res.CacheHits != 0 {
		t.Fatalf("after the delete file changed: %+v; want it recomputed", res)
	}
}
