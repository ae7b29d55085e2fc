package footer

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

type countingSource struct {
	data  []byte
	reads *atomic.Int64
	bytes *atomic.Int64
}

func (s countingSource) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	s.reads.Add(1)
	s.bytes.Add(int64(len(p)))
	if off >= int64(len(s.data)) {
		return 0, fmt.Errorf("read past end")
	}
	return copy(p, s.data[off:]), nil
}
func (s countingSource) Size() int64 { return int64(len(s.data)) }

// parquetFile writes n rows of (x int64, s string) with page index and bloom
// filters; wide strings make the footer region large when wide is set.
func parquetFile(t testing.TB, n int, rowGroup int64, wide bool) []byte {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := 0; i < n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		v := fmt.Sprintf("v%06d", i)
		if wide {
			v = strings.Repeat(v, 12)
		}
		b.Field(1).(*array.StringBuilder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(as, &buf, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(rowGroup), parquet.WithPageIndexEnabled(true),
		parquet.WithBloomFilterEnabled(true), parquet.WithBloomFilterNDV(int64(rowGroup)), parquet.WithDataPageSize(512), parquet.WithBatchSize(32)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func newTestCache(files map[string][]byte, capacity int64) (*Cache, *atomic.Int64, *atomic.Int64) {
	reads, nbytes := &atomic.Int64{}, &atomic.Int64{}
	c := NewCache("test", capacity, func(_ context.Context, id Identity) (Source, error) {
		d, ok := files[id.Path]
		if !ok {
			return nil, fmt.Errorf("%s missing", id.Path)
		}
		return countingSource{data: d, reads: reads, bytes: nbytes}, nil
	})
	return c, reads, nbytes
}

func TestColdFooterTakesOneTailReadAndWarmTakesNone(t *testing.T) {
	data := parquetFile(t, 2000, 500, false)
	c, reads, _ := newTestCache(map[string][]byte{"a": data}, 64<<20)
	f, hit, err := c.Get(context.Background(), Identity{Path: "a", Size: int64(len(data))})
	if err != nil || hit {
		t.Fatalf("cold get: hit=%v err=%v", hit, err)
	}
	if reads.Load() != 1 {
		t.Fatalf("cold footer load took %d reads, want 1 speculative tail read", reads.Load())
	}
	if f.Meta.NumRowGroups() != 4 {
		t.Fatalf("row groups = %d", f.Meta.NumRowGroups())
	}
	// The page index of a small file sits inside the tail: no further read.
	for rg := 0; rg < 4; rg++ {
		idx, err := f.PageIndex(context.Background(), rg)
		if err != nil || idx == nil || idx.Columns[0].Offset == nil || idx.Columns[0].Column == nil {
			t.Fatalf("page index of row group %d: %v %+v", rg, err, idx)
		}
	}
	if reads.Load() != 1 {
		t.Fatalf("page index was read again (%d reads) although the tail holds it", reads.Load())
	}
	if _, hit, _ := c.Get(context.Background(), Identity{Path: "a", Size: int64(len(data))}); !hit || reads.Load() != 1 {
		t.Fatalf("warm get: hit=%v reads=%d", hit, reads.Load())
	}
	st := c.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.Entries != 1 || st.Bytes <= 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestLongFooterTakesOneMoreRead(t *testing.T) {
	data := parquetFile(t, 12_000, 40, true) // 300 row groups: a footer far beyond 64 KiB
	c, reads, _ := newTestCache(map[string][]byte{"a": data}, 256<<20)
	f, _, err := c.Get(context.Background(), Identity{Path: "a", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	if f.MetaLength <= TailBytes {
		t.Skipf("footer is only %d bytes", f.MetaLength)
	}
	if reads.Load() != 2 {
		t.Fatalf("a %d-byte footer took %d reads, want 2", f.MetaLength, reads.Load())
	}
}

func TestChangedFileIsNeverServedAStaleFooter(t *testing.T) {
	v1 := parquetFile(t, 1000, 500, false)
	v2 := parquetFile(t, 3000, 500, false)
	files := map[string][]byte{"a": v1}
	c, _, _ := newTestCache(files, 64<<20)
	f1, _, err := c.Get(context.Background(), Identity{Path: "a", Size: int64(len(v1))})
	if err != nil {
		t.Fatal(err)
	}
	files["a"] = v2
	f2, hit, err := c.Get(context.Background(), Identity{Path: "a", Size: int64(len(v2))})
	if err != nil || hit || f2.Meta.NumRows == f1.Meta.NumRows {
		t.Fatalf("new identity served the old footer: hit=%v err=%v", hit, err)
	}
	// Metadata that disagrees with the bytes is refused, naming the file.
	cold, _, _ := newTestCache(files, 64<<20)
	_, _, err = cold.Get(context.Background(), Identity{Path: "a", Size: int64(len(v1))})
	if err == nil || !strings.Contains(err.Error(), "the file changed") {
		t.Fatalf("size mismatch: %v", err)
	}
}

func TestCacheEvictsByBytes(t *testing.T) {
	files := map[string][]byte{}
	for i := 0; i < 10; i++ {
		files[fmt.Sprint(i)] = parquetFile(t, 500, 250, false)
	}
	c, _, _ := newTestCache(files, 10<<10)
	for i := 0; i < 10; i++ {
		if _, _, err := c.Get(context.Background(), Identity{Path: fmt.Sprint(i), Size: int64(len(files[fmt.Sprint(i)]))}); err != nil {
			t.Fatal(err)
		}
	}
	st := c.Stats()
	if st.Bytes > st.Capacity || st.Evictions == 0 || st.Entries >= 10 {
		t.Fatalf("cache not bounded: %+v", st)
	}
}

func TestMalformedFilesAreRefusedWithTheirProblem(t *testing.T) {
	good := parquetFile(t, 100, 100, false)
	cases := map[string][]byte{
		"not parquet":      []byte("hello world, definitely not parquet"),
		"too small":        []byte("PAR1"),
		"encrypted footer": append(append([]byte{}, good[:len(good)-4]...), []byte("PARE")...),
		"footer too long":  append(append([]byte{}, good[:len(good)-8]...), 0xff, 0xff, 0xff, 0x0f, 'P', 'A', 'R', '1'),
		"garbage footer":   append(append(append([]byte{}, good[:len(good)-200]...), bytes.Repeat([]byte{0x99}, 192)...), good[len(good)-8:]...),
	}
	want := map[string]string{"not parquet": "not a Parquet file", "too small": "too small", "encrypted footer": "encrypted",
		"footer too long": "does not fit", "garbage footer": "malformed"}
	for name, data := range cases {
		_, err := Load(context.Background(), Identity{Path: name, Size: int64(len(data))}, countingSource{data: data, reads: &atomic.Int64{}, bytes: &atomic.Int64{}})
		if err == nil || !strings.Contains(err.Error(), want[name]) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, want[name])
		}
	}
}

// FuzzFooterPageIndexAndBloom flips bytes of a valid file (anywhere: data,
// bloom filters, page index, footer) and walks footer, page index and bloom
// filters: errors are fine, panics are not.
func FuzzFooterPageIndexAndBloom(f *testing.F) {
	seed := parquetFile(f, 300, 100, false)
	n := uint32(len(seed))
	f.Add(n-20, byte(0xff), n-9, byte(1))
	f.Add(n-300, byte(0x00), uint32(0), byte(0))
	f.Add(uint32(100), byte(0x7f), n/2, byte(0x80))
	f.Fuzz(func(t *testing.T, at1 uint32, b1 byte, at2 uint32, b2 byte) {
		mutated := append([]byte{}, seed...)
		mutated[int(at1%n)] ^= b1
		mutated[int(at2%n)] ^= b2
		src := countingSource{data: mutated, reads: &atomic.Int64{}, bytes: &atomic.Int64{}}
		ft, err := Load(context.Background(), Identity{Path: "f", Size: int64(len(mutated))}, src)
		if err != nil {
			return
		}
		ft.open = func(context.Context, Identity) (Source, error) { return src, nil }
		for rg := 0; rg < ft.Meta.NumRowGroups(); rg++ {
			_, _ = ft.PageIndex(context.Background(), rg)
			for c := 0; c < ft.Meta.Schema.NumColumns(); c++ {
				_, _ = ft.ReadBloomFilter(context.Background(), rg, c)
			}
		}
	})
}

func TestChunkMemoBuildsOncePerChunkAndTagEvenUnderConcurrency(t *testing.T) {
	data := parquetFile(t, 2000, 500, false)
	c, _, _ := newTestCache(map[string][]byte{"a": data}, 64<<20)
	f, _, err := c.Get(context.Background(), Identity{Path: "a", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	type tagA struct{ n int }
	type tagB struct{ n int }
	var builds atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rg := 0; rg < f.Meta.NumRowGroups(); rg++ {
				for col := 0; col < f.Meta.Schema.NumColumns(); col++ {
					for _, tag := range []any{tagA{1}, tagB{1}, tagA{2}} {
						v := f.ChunkMemo(rg, col, tag, func() any { builds.Add(1); return fmt.Sprint(rg, col, tag) })
						if want := fmt.Sprint(rg, col, tag); v != want {
							t.Errorf("ChunkMemo(%d, %d, %v) = %v, want %v", rg, col, tag, v, want)
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	chunks := int64(f.Meta.NumRowGroups() * f.Meta.Schema.NumColumns())
	// concurrent first builds may race (one value wins), but every later
	// lookup is served from the memo
	if n := builds.Load(); n < 3*chunks || n > 8*3*chunks {
		t.Fatalf("%d builds for %d chunks × 3 tags", n, chunks)
	}
	before := builds.Load()
	for rg := 0; rg < f.Meta.NumRowGroups(); rg++ {
		f.ChunkMemo(rg, 0, tagA{1}, func() any { builds.Add(1); return nil })
	}
	if builds.Load() != before {
		t.Fatal("a memoized chunk value was built again")
	}
	// out of range: built, never cached, no panic
	for _, rc := range [][2]int{{-1, 0}, {0, -1}, {f.Meta.NumRowGroups(), 0}, {0, f.Meta.Schema.NumColumns()}} {
		if v := f.ChunkMemo(rc[0], rc[1], tagA{1}, func() any { return "built" }); v != "built" {
			t.Fatalf("ChunkMemo%v = %v", rc, v)
		}
	}
}

func TestSmallMemoKeepsEveryTagsValueAlsoPastItsChain(t *testing.T) {
	data := parquetFile(t, 100, 100, false)
	c, _, _ := newTestCache(map[string][]byte{"a": data}, 64<<20)
	f, _, err := c.Get(context.Background(), Identity{Path: "a", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	type tag struct {
		n int
		s string
	}
	builds := map[tag]int{}
	var mu sync.Mutex
	for round := 0; round < 3; round++ {
		for i := 0; i < 3*smallMemoMax; i++ {
			k := tag{i, fmt.Sprint("k", i)}
			v := f.SmallMemo(k, func() any { mu.Lock(); builds[k]++; mu.Unlock(); return i * 10 })
			if v != i*10 {
				t.Fatalf("SmallMemo(%v) = %v, want %d", k, v, i*10)
			}
		}
	}
	for k, n := range builds {
		if n != 1 {
			t.Fatalf("%v built %d times", k, n)
		}
	}
}

func TestBloomFiltersAreServedFromTheFootersReferenceUntilTheCacheLetsThemGo(t *testing.T) {
	data := parquetFile(t, 2000, 500, false)
	c, reads, _ := newTestCache(map[string][]byte{"a": data}, 64<<20)
	ctx := context.Background()
	f, _, err := c.Get(ctx, Identity{Path: "a", Size: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.BloomFilter(ctx, f, 1, 0)
	if err != nil || first == nil {
		t.Fatalf("bloom filter: %v %v", first, err)
	}
	r0 := reads.Load()
	for i := 0; i < 100; i++ {
		bf, err := c.BloomFilter(ctx, f, 1, 0)
		if err != nil || bf != first {
			t.Fatalf("warm lookup %d: %v %v (not the cached filter)", i, bf, err)
		}
	}
	if reads.Load() != r0 {
		t.Fatalf("warm lookups read the file (%d reads)", reads.Load()-r0)
	}
	st := c.Stats()
	if st.BloomHits < 100 {
		t.Fatalf("bloom hits %d, want ≥ 100", st.BloomHits)
	}
	// A batch of lookups serves the same filter and counts on Flush.
	lk := c.Lookups()
	for i := 0; i < 10; i++ {
		if bf, err := lk.BloomFilter(ctx, f, 1, 0); err != nil || bf != first {
			t.Fatalf("batched lookup %d: %v %v (not the cached filter)", i, bf, err)
		}
	}
	lk.Flush()
	if got := c.Stats().BloomHits - st.BloomHits; got != 10 {
		t.Fatalf("a flushed batch of 10 lookups counted %d bloom hits", got)
	}
	st = c.Stats()
	// Evicted from the bloom LRU and collected: the reference is empty and
	// the next lookup reads the filter again, correctly.
	c.blooms.Clear()
	first = nil
	runtime.GC()
	runtime.GC()
	again, err := c.BloomFilter(ctx, f, 1, 0)
	if err != nil || again == nil {
		t.Fatalf("after eviction: %v %v", again, err)
	}
	if reads.Load() == r0 {
		t.Fatal("after eviction and collection the filter was not read again")
	}
}
