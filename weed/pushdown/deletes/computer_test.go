package deletes

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// memStore is an in-memory Store.
type memStore struct {
	mu           sync.Mutex
	m            map[string][]byte
	loads, saves int
}

func newMemStore() *memStore { return &memStore{m: map[string][]byte{}} }

func storePath(k StoreKey) string { return k.Data.Path + "/.index/" + k.Data.Identity() + "/" + k.Name }

func (s *memStore) Load(ctx context.Context, k StoreKey) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	return slices.Clone(s.m[storePath(k)]), nil
}

func (s *memStore) Save(ctx context.Context, k StoreKey, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves++
	s.m[storePath(k)] = slices.Clone(b)
	return nil
}

// fixture is a data file with one delete file of every kind and the
// positions each deletes (brute force, before dropping positions beyond
// the record count).
type fixture struct {
	fs     *memFS
	data   DataFile
	schema *iceberg.Schema
	pos1   File // multi-target, several row groups
	pos2   File // single-target
	eq1    File // on s
	eq2    File // on (i, dt)
	dv     File
	want   map[string][]uint64 // by File.Path
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	r := rand.New(rand.NewPCG(21, 22))
	fx := &fixture{fs: newMemFS(), schema: eqTableSchema(), want: map[string][]uint64{}}
	rows := genDataRows(r, 500)
	db := writeDataFile(t, rows, true, "", 128)
	fx.fs.put("s3://w/t/data/d.parquet", db)
	fx.data = DataFile{Path: "s3://w/t/data/d.parquet", Size: int64(len(db)), RecordCount: int64(len(rows)), DataSeq: 1}

	p1 := randomPositionDeletes(r, []string{fx.data.Path, "s3://w/t/data/other.parquet"}, 400, 520) // some >= 500
	b := writePositionDeletes(t, p1, 64, true)
	fx.fs.put("s3://w/t/data/pos1.parquet", b)
	fx.pos1 = File{Path: "s3://w/t/data/pos1.parquet", Size: int64(len(b)), Content: PositionDeletes, Format: FormatParquet, DataSeq: 2}
	fx.want[fx.pos1.Path] = oraclePositions(p1, fx.data.Path)

	var p2 []posRow
	for i := int64(1); i < 500; i += 37 {
		p2 = append(p2, posRow{fx.data.Path, i})
	}
	b = writePositionDeletes(t, p2, 1000, true)
	fx.fs.put("s3://w/t/data/pos2.parquet", b)
	fx.pos2 = File{Path: "s3://w/t/data/pos2.parquet", Size: int64(len(b)), Content: PositionDeletes, Format: FormatParquet, DataSeq: 3, ReferencedDataFile: fx.data.Path}
	fx.want[fx.pos2.Path] = oraclePositions(p2, fx.data.Path)

	for i, cols := range [][]string{{"s"}, {"i", "dt"}} {
		dels := genDeleteRows(r, rows, cols, 3)
		b := writeDeleteFile(t, dels, cols, 10)
		path := fmt.Sprintf("s3://w/t/data/eq%d.parquet", i+1)
		fx.fs.put(path, b)
		f := File{Path: path, Size: int64(len(b)), Content: EqualityDeletes, Format: FormatParquet, DataSeq: int64(4 + i), EqualityFieldIDs: ids(cols)}
		fx.want[path] = oracleEquality(rows, dels, cols, nil)
		if i == 0 {
			fx.eq1 = f
		} else {
			fx.eq2 = f
		}
	}

	ref := dv.NewRoaringPositionBitmap()
	var dvPos []uint64
	for _, p := range []uint64{0, 2, 4, 499, 500, 10_000} {
		ref.Set(p)
		dvPos = append(dvPos, p)
	}
	blob, err := dv.SerializeDV(ref)
	if err != nil {
		t.Fatal(err)
	}
	puffin := append([]byte("PFA1"), blob...)
	puffin = append(puffin, make([]byte, 40)...)
	fx.fs.put("s3://w/t/data/dv.puffin", puffin)
	fx.dv = File{Path: "s3://w/t/data/dv.puffin", Size: int64(len(puffin)), RecordCount: int64(len(dvPos)), Content: PositionDeletes, Format: FormatPuffin,
		DataSeq: 6, ReferencedDataFile: fx.data.Path, BlobOffset: 4, BlobLength: int64(len(blob))}
	fx.want[fx.dv.Path] = dvPos
	return fx
}

// expect is the union of the fixture's answers for files, below the
// record count.
func (fx *fixture) expect(files ...File) []uint64 {
	var out []uint64
	for _, f := range files {
		for _, p := range fx.want[f.Path] {
			if p < uint64(fx.data.RecordCount) {
				out = append(out, p)
			}
		}
	}
	return out
}

func TestComputerUnionsEveryApplicableDeleteAndDropsPositionsBeyondTheRecordCount(t *testing.T) {
	fx := newFixture(t)
	c := NewComputer(fx.fs.open, nil, Options{})
	dels := []File{fx.pos1, fx.pos2, fx.eq1, fx.eq2}
	res, err := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "union", res.Deleted, fx.expect(dels...))
	if res.Applied != 4 || res.CacheHits != 0 || res.CacheMisses != 3 {
		t.Fatalf("first call: %+v", res)
	}
	for _, f := range dels {
		if len(fx.want[f.Path]) == 0 {
			t.Fatalf("degenerate: %s deletes nothing", f.Path)
		}
	}
}

func TestComputerServesTheSecondCallFromMemoryWithoutReadingFiles(t *testing.T) {
	fx := newFixture(t)
	c := NewComputer(fx.fs.open, nil, Options{})
	dels := []File{fx.eq2, fx.pos1, fx.eq1, fx.pos2}
	first, err := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	opens := fx.fs.totalOpens()
	slices.Reverse(dels) // order does not matter
	second, err := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Deleted.Equals(first.Deleted) {
		t.Fatal("the cached result differs")
	}
	if second.CacheHits != 3 || second.CacheMisses != 0 || second.Applied != 4 {
		t.Fatalf("second call: %+v", second)
	}
	if fx.fs.totalOpens() != opens {
		t.Fatalf("the second call opened %d files", fx.fs.totalOpens()-opens)
	}
	// Results are the caller's to modify: the cache must not change.
	second.Deleted.Clear()
	third, _ := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if !third.Deleted.Equals(first.Deleted) {
		t.Fatal("modifying a result changed the cache")
	}
	entries, bytes, capacity, hits, misses, evictions := c.CacheStats()
	if entries != 3 || bytes <= 0 || capacity != DefaultCacheBytes || hits != 6 || misses != 3 || evictions != 0 {
		t.Fatalf("CacheStats = %d entries, %d bytes, %d capacity, %d hits, %d misses, %d evictions", entries, bytes, capacity, hits, misses, evictions)
	}
}

func TestADifferentPositionDeleteSetDoesNotReuseTheMergedBitmap(t *testing.T) {
	fx := newFixture(t)
	store := newMemStore()
	c := NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey})
	one, err := c.Deleted(context.Background(), fx.data, []File{fx.pos1}, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "pos1", one.Deleted, fx.expect(fx.pos1))
	two, err := c.Deleted(context.Background(), fx.data, []File{fx.pos1, fx.pos2}, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "pos1+pos2", two.Deleted, fx.expect(fx.pos1, fx.pos2))
	if two.CacheMisses != 1 {
		t.Fatalf("the new delete set was served from the cache: %+v", two)
	}
	// A fresh computer sharing the store: the payload saved for {pos1, pos2}
	// must not answer {pos1}.
	c2 := NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey})
	again, err := c2.Deleted(context.Background(), fx.data, []File{fx.pos1}, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "pos1 after pos1+pos2 was stored", again.Deleted, fx.expect(fx.pos1))
	if again.CacheMisses != 1 {
		t.Fatalf("a payload for another delete set was reused: %+v", again)
	}
}

func TestPersistedBitmapsServeAFreshComputerAndDamagedOnesAreRecomputed(t *testing.T) {
	fx := newFixture(t)
	store := newMemStore()
	dels := []File{fx.pos1, fx.pos2, fx.eq1, fx.eq2}
	first, err := NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey}).Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if store.saves != 3 || len(store.m) != 3 {
		t.Fatalf("%d saves, %d payloads; want the merged position bitmap and two equality pairs", store.saves, len(store.m))
	}
	opens := fx.fs.totalOpens()
	res, err := NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey}).Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Deleted.Equals(first.Deleted) || res.CacheHits != 3 || fx.fs.totalOpens() != opens {
		t.Fatalf("a fresh computer did not use the store: %+v, %d opens", res, fx.fs.totalOpens()-opens)
	}

	// Flip one byte of every payload: each is recomputed and rewritten.
	for k, b := range store.m {
		b[len(b)/2] ^= 0x20
		store.m[k] = b
	}
	res, err = NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey}).Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Deleted.Equals(first.Deleted) || res.CacheMisses != 3 {
		t.Fatalf("damaged payloads: %+v", res)
	}
	res, _ = NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey}).Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if res.CacheHits != 3 {
		t.Fatalf("recomputed payloads were not rewritten: %+v", res)
	}

	// A payload written under another key (another data file identity) in
	// the same slot is ignored.
	other := fx.data
	other.Size++
	payload, err := EncodeStored(positionKey(other, []File{fx.pos1, fx.pos2}), bitmapOf(1, 2, 3), testStoreKey)
	if err != nil {
		t.Fatal(err)
	}
	store.m[storePath(StoreKey{Data: fx.data, Name: PositionStoreName})] = payload
	res, err = NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey}).Deleted(context.Background(), fx.data, []File{fx.pos1, fx.pos2}, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "after a foreign payload", res.Deleted, fx.expect(fx.pos1, fx.pos2))
	if res.CacheMisses != 1 {
		t.Fatalf("a foreign payload was used: %+v", res)
	}
}

func TestADeletionVectorSupersedesPositionDeleteFiles(t *testing.T) {
	fx := newFixture(t)
	c := NewComputer(fx.fs.open, nil, Options{})
	res, err := c.Deleted(context.Background(), fx.data, []File{fx.pos1, fx.dv, fx.pos2, fx.eq1}, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "dv + eq1", res.Deleted, fx.expect(fx.dv, fx.eq1))
	if res.Applied != 2 {
		t.Fatalf("applied %d, want the DV and the equality delete", res.Applied)
	}
	if fx.fs.openCount(fx.pos1.Path) != 0 || fx.fs.openCount(fx.pos2.Path) != 0 {
		t.Fatal("position delete files were read although a DV applies")
	}
	opens := fx.fs.openCount(fx.dv.Path)
	res, _ = c.Deleted(context.Background(), fx.data, []File{fx.dv}, fx.schema, nil)
	if fx.fs.openCount(fx.dv.Path) != opens || res.CacheHits != 1 {
		t.Fatalf("the DV was not cached: %+v", res)
	}
}

func TestComputerRefusesWhatItCannotApply(t *testing.T) {
	fx := newFixture(t)
	c := NewComputer(fx.fs.open, nil, Options{})
	dv2 := fx.dv
	dv2.BlobOffset++
	_, err := c.Deleted(context.Background(), fx.data, []File{fx.dv, dv2}, fx.schema, nil)
	errContains(t, err, "2 deletion vectors", fx.data.Path)
	if perr.KindOf(err) != perr.InvalidArgument {
		t.Fatalf("kind %v", perr.KindOf(err))
	}
	_, err = c.Deleted(context.Background(), fx.data, []File{{Path: "x.avro", Content: PositionDeletes, Format: FormatAvro}}, fx.schema, nil)
	if perr.KindOf(err) != perr.FailedPrecondition {
		t.Fatalf("avro: %v", err)
	}
	wrong := fx.dv
	wrong.ReferencedDataFile = "s3://w/t/data/other.parquet"
	_, err = c.Deleted(context.Background(), fx.data, []File{wrong}, fx.schema, nil)
	if perr.KindOf(err) != perr.InvalidArgument {
		t.Fatalf("DV of another file: %v", err)
	}
	badCard := fx.dv
	badCard.RecordCount++
	_, err = c.Deleted(context.Background(), fx.data, []File{badCard}, fx.schema, nil)
	errContains(t, err, fx.dv.Path, "cardinality")
}

func TestTheMemoryCacheStaysWithinItsByteBudget(t *testing.T) {
	fx := newFixture(t)
	c := NewComputer(fx.fs.open, nil, Options{CacheBytes: 600})
	for i := 0; i < 3; i++ {
		for _, f := range []File{fx.pos1, fx.pos2, fx.eq1, fx.eq2, fx.dv} {
			res, err := c.Deleted(context.Background(), fx.data, []File{f}, fx.schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameBitmap(t, f.Path, res.Deleted, fx.expect(f))
		}
	}
	entries, bytes, capacity, _, _, evictions := c.CacheStats()
	if bytes > capacity || evictions == 0 || entries >= 5 {
		t.Fatalf("%d entries, %d bytes of %d, %d evictions", entries, bytes, capacity, evictions)
	}
}

func TestConcurrentCallsAgree(t *testing.T) {
	fx := newFixture(t)
	c := NewComputer(fx.fs.open, newMemStore(), Options{StoreKey: testStoreKey})
	dels := []File{fx.pos1, fx.pos2, fx.eq1, fx.eq2}
	want := fx.expect(dels...)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	got := make([]*roaring64.Bitmap, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := c.Deleted(context.Background(), fx.data, dels, fx.schema, nil)
			if err != nil {
				errs <- err
				return
			}
			got[i] = res.Deleted
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, g := range got {
		sameBitmap(t, "concurrent", g, want)
	}
}

func TestCancelledContextStopsTheComputation(t *testing.T) {
	fx := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewComputer(fx.fs.open, nil, Options{}).Deleted(ctx, fx.data, []File{fx.pos1, fx.eq1}, fx.schema, nil)
	if !perr.IsContext(err) {
		t.Fatalf("want a context error, got %v", err)
	}
}

// A delete bitmap forged in a data file's .index/ folder for exactly the
// slot and cache key the computer reads — by someone who can write the
// bucket but has no store key — is ignored: the deleted positions are
// computed from the delete files. A computer without a store key neither
// writes nor reads the store.
func TestAForgedPersistedBitmapDeletesNoRowAndNoKeyMeansNoStore(t *testing.T) {
	fx := newFixture(t)
	store := newMemStore()
	dels := []File{fx.pos1, fx.pos2}
	slot := storePath(StoreKey{Data: fx.data, Name: PositionStoreName})
	forged, err := EncodeStored(positionKey(fx.data, dels), bitmapOf(0, 1, 2, 3, 4, 5), []byte("a key that is not the cluster's.."))
	if err != nil {
		t.Fatal(err)
	}
	store.m[slot] = forged
	res, err := NewComputer(fx.fs.open, store, Options{StoreKey: testStoreKey}).Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "with a forged payload in the store", res.Deleted, fx.expect(fx.pos1, fx.pos2))
	if res.CacheMisses != 1 || res.CacheHits != 0 {
		t.Fatalf("the forged payload was used: %+v", res)
	}
	if bytes.Equal(store.m[slot], forged) {
		t.Fatal("the forged payload was not replaced by a sealed one")
	}

	bare := newMemStore()
	bare.m[slot] = store.m[slot] // a sealed, valid payload
	res, err = NewComputer(fx.fs.open, bare, Options{}).Deleted(context.Background(), fx.data, dels, fx.schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameBitmap(t, "without a store key", res.Deleted, fx.expect(fx.pos1, fx.pos2))
	if res.CacheHits != 0 || bare.saves != 0 {
		t.Fatalf("a computer without a store key used the store: %+v, %d saves", res, bare.saves)
	}
}
