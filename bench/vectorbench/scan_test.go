package vectorbench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// scanFile is what a client scanning a file keeps between queries: its
// size and footer bytes (footers are cached; data is not).
type scanFile struct {
	bucket, key string
	size        int64
	tail        []byte // the footer and its length and magic
	md          *file.Reader
	col         int // the embedding's leaf column
}

// sparseFile serves ReadAt from the ranges fetched (column chunks and the
// footer).
type sparseFile struct {
	size  int64
	parts []part
}

type part struct {
	off int64
	b   []byte
}

func (f *sparseFile) ReadAt(p []byte, off int64) (int, error) {
	for _, pt := range f.parts {
		if off >= pt.off && off+int64(len(p)) <= pt.off+int64(len(pt.b)) {
			return copy(p, pt.b[off-pt.off:]), nil
		}
	}
	return 0, fmt.Errorf("range %d+%d was not fetched", off, len(p))
}

func (f *sparseFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekEnd:
		return f.size + off, nil
	}
	return off, nil
}

func getRange(t *testing.T, c *harness.Cluster, bucket, key string, off, n int64) []byte {
	obj, err := c.S3(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Body.Close()
	b, err := io.ReadAll(obj.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openScan fetches each file's footer once.
func openScan(t *testing.T, c *harness.Cluster, paths []string) []*scanFile {
	var out []*scanFile
	for _, p := range paths {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(p, "s3://"), "/")
		head, err := c.S3(t).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		sf := &scanFile{bucket: bucket, key: key, size: aws.ToInt64(head.ContentLength)}
		n := min(sf.size, 1<<20)
		sf.tail = getRange(t, c, bucket, key, sf.size-n, n)
		rdr, err := file.NewParquetReader(&sparseFile{size: sf.size, parts: []part{{sf.size - n, sf.tail}}})
		if err != nil {
			t.Fatalf("footer of %s: %v", p, err)
		}
		sf.md = rdr
		sf.col = -1
		for i := range rdr.MetaData().Schema.NumColumns() {
			if strings.HasPrefix(rdr.MetaData().Schema.Column(i).ColumnPath().String(), "embedding") {
				sf.col = i
			}
		}
		out = append(out, sf)
	}
	return out
}

// scanTopK is a client-side exact scan: per file (concurrently) ranged
// GETs of the embedding's column chunks through S3, decoded with arrow-go,
// squared L2 of every vector, the top-k merged. It returns "file@pos".
func scanTopK(t *testing.T, c *harness.Cluster, files []*scanFile, paths []string, q []float32, k int) []string {
	type hit struct {
		file, pos int
		d         float32
	}
	var mu sync.Mutex
	var all []hit
	var wg sync.WaitGroup
	for fi, sf := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			md := sf.md.MetaData()
			sp := &sparseFile{size: sf.size, parts: []part{{sf.size - int64(len(sf.tail)), sf.tail}}}
			for rg := range md.NumRowGroups() {
				cc, err := md.RowGroup(rg).ColumnChunk(sf.col)
				if err != nil {
					t.Error(err)
					return
				}
				off := cc.DataPageOffset()
				if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
					off = min(off, cc.DictionaryPageOffset())
				}
				sp.parts = append(sp.parts, part{off, getRange(t, c, sf.bucket, sf.key, off, cc.TotalCompressedSize())})
			}
			rdr, err := file.NewParquetReader(sp)
			if err != nil {
				t.Error(err)
				return
			}
			fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
			if err != nil {
				t.Error(err)
				return
			}
			rr, err := fr.GetRecordReader(context.Background(), []int{sf.col}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer rr.Release()
			var local []hit
			pos := 0
			for rr.Next() {
				arr := rr.RecordBatch().Column(0).(array.ListLike)
				vals := arr.ListValues().(*array.Float32).Float32Values()
				for i := range arr.Len() {
					if !arr.IsNull(i) {
						s, e := arr.ValueOffsets(i)
						if int(e-s) == len(q) {
							var d float32
							for j, x := range vals[s:e] {
								y := x - q[j]
								d += y * y
							}
							local = append(local, hit{fi, pos, d})
							if len(local) > 4*k {
								slices.SortFunc(local, func(a, b hit) int { return cmp.Compare(a.d, b.d) })
								local = local[:k]
							}
						}
					}
					pos++
				}
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.SliceStable(all, func(i, j int) bool { return all[i].d < all[j].d })
	var out []string
	for _, h := range all[:min(k, len(all))] {
		out = append(out, fmt.Sprintf("%s@%d", paths[h.file], h.pos))
	}
	return out
}

// scanLatency is the median latency of client-side scans of the first
// queries (each reads the column through S3 afresh; only footers are
// kept) and their mean recall@10 against the oracle.
func scanLatency(t *testing.T, c *harness.Cluster, ds *dataset, queries int) (float64, float64) {
	files := openScan(t, c, ds.paths)
	var lat, rec []float64
	for qi := range min(queries, len(ds.queries)) {
		t0 := time.Now()
		got := scanTopK(t, c, files, ds.paths, ds.queries[qi], 10)
		lat = append(lat, ms(time.Since(t0)))
		want := ds.truthOf(qi, filter{name: "unfiltered"})
		n := 0
		for _, g := range got {
			if slices.Contains(want, g) {
				n++
			}
		}
		rec = append(rec, float64(n)/float64(len(want)))
	}
	return median(lat), mean(rec)
}
