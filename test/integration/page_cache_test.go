package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/pqcodec"
)

// A connector turns on its process's page cache (nothing in this test
// process sized it): a query read here a second and third time copies its
// zstd pages from the cache instead of decompressing them — the hits grow
// by at least the pages the third query decoded — and every run returns
// the plain read's rows.
//
// Not parallel: the cache and its counters are the process's, and no other
// test of this process runs beside a sequential one.
func TestAConnectorsRepeatedQueryCopiesItsPagesFromThePageCache(t *testing.T) {
	const name = "page_cache.events"
	c := sharedCluster(t)
	weed := pushdownCLI(t, c)
	weed("demo", "-table", name, "-rows", "6000", "-files", "2", "-rowGroupRows", "1500", "-indexed", "none")
	ctx := context.Background()
	plain := openConnector(t, c, connector.Options{NoPushdown: true})
	here := openConnector(t, c, connector.Options{Force: true, NoFallback: true, FilterAt: connector.FilterHere})
	st, _, _, on := pqcodec.PageCacheStats()
	if !on || st.Capacity != connector.DefaultPageCacheBytes {
		t.Fatalf("after connector.New the process's page cache is on %v with %d bytes, want %d", on, st.Capacity, connector.DefaultPageCacheBytes)
	}
	q := connector.Query{Table: name, Where: "tenant_id = 'tenant-003' OR message LIKE '%timeout%'", Select: strings.Split("id, tenant_id, status, message", ", ")}
	want := func() []string {
		res, err := plain.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		return rowsOf(t, res.Schema, res.Records)
	}()
	if len(want) == 0 {
		t.Fatal("the predicate matches no row of the demo: the test would prove nothing")
	}
	var hits []int64
	for run := range 3 {
		res, err := here.Query(ctx, q)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		got := rowsOf(t, res.Schema, res.Records)
		res.Release()
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: %d rows differ from the plain read's %d", run, len(got), len(want))
		}
		if res.Stats.FilterHereRowGroups == 0 {
			t.Fatalf("run %d filtered no row group here: %+v", run, res.Stats)
		}
		_, h, _, _ := pqcodec.PageCacheStats()
		hits = append(hits, h)
	}
	// The first run decodes each page once (its key remembered), the second
	// keeps them, the third copies them: the demo's columns are zstd pages.
	if hits[2]-hits[1] < 4 {
		t.Fatalf("page cache hits after each run %v: the third run copied %d pages from the cache", hits, hits[2]-hits[1])
	}
}
