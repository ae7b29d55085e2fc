package connector

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"
)

// span is fetched bytes [off, off+len(data)) of one file.
type span struct {
	off  int64
	data []byte
}

// sparseFile is a file of which only some byte ranges were fetched. Reads
// inside a fetched range succeed; a read anywhere else is a bug in the plan
// or the decoder and fails loudly instead of fetching silently.
type sparseFile struct {
	path  string
	size  int64
	spans []span // sorted by off, non-overlapping
	pos   int64
}

func (f *sparseFile) add(off int64, data []byte) {
	f.spans = append(f.spans, span{off, data})
	sort.Slice(f.spans, func(i, j int) bool { return f.spans[i].off < f.spans[j].off })
}

// ReadAt implements io.ReaderAt.
func (f *sparseFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if off+want > f.size {
		want = f.size - off
	}
	i := sort.Search(len(f.spans), func(i int) bool { return f.spans[i].off+int64(len(f.spans[i].data)) > off })
	if i < len(f.spans) {
		s := f.spans[i]
		if s.off <= off && off+want <= s.off+int64(len(s.data)) {
			n := copy(p, s.data[off-s.off:off-s.off+want])
			if int64(n) < int64(len(p)) {
				return n, io.EOF
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: read [%d, %d) outside the fetched ranges", f.path, off, off+want)
}

// Seek implements io.Seeker (parquet.ReaderAtSeeker).
func (f *sparseFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		f.pos = offset
	case io.SeekCurrent:
		f.pos += offset
	case io.SeekEnd:
		f.pos = f.size + offset
	}
	return f.pos, nil
}

// byteRange is [Off, Off+Len).
type byteRange struct{ Off, Len int64 }

// coalesce sorts and merges overlapping or touching ranges.
func coalesce(rs []byteRange) []byteRange {
	if len(rs) == 0 {
		return nil
	}
	s := append([]byteRange{}, rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Off < s[j].Off })
	out := []byteRange{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if r.Off <= last.Off+last.Len {
			if e := r.Off + r.Len; e > last.Off+last.Len {
				last.Len = e - last.Off
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// fetcher issues ranged GETs through the S3 gateway, concurrently, and
// caches fetched ranges (the range cache) for the connector's lifetime.
type fetcher struct {
	client      *s3.Client
	concurrency int
	bytes       atomic.Int64
	requests    atomic.Int64

	mu       sync.Mutex
	cache    map[string][]span // by location
	order    []cacheKey        // insertion order, for eviction
	held     int64
	capacity int64 // bytes the range cache may hold
}

type cacheKey struct {
	location string
	off      int64
}

func splitS3(location string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(location, "s3://")
	if !ok {
		rest, ok = strings.CutPrefix(location, "s3a://")
	}
	if !ok {
		return "", "", fmt.Errorf("%s is not an s3:// location", location)
	}
	bucket, key, ok = strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" {
		return "", "", fmt.Errorf("%s: want s3://bucket/key", location)
	}
	return bucket, key, nil
}

// cached returns a cached span covering r.
func (ft *fetcher) cached(location string, r byteRange) ([]byte, bool) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	for _, s := range ft.cache[location] {
		if s.off <= r.Off && r.Off+r.Len <= s.off+int64(len(s.data)) {
			return s.data[r.Off-s.off : r.Off-s.off+r.Len], true
		}
	}
	return nil, false
}

// remember adds a fetched span to the range cache, evicting the oldest.
func (ft *fetcher) remember(location string, s span) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if ft.cache == nil {
		ft.cache = map[string][]span{}
	}
	ft.cache[location] = append(ft.cache[location], s)
	ft.order = append(ft.order, cacheKey{location, s.off})
	ft.held += int64(len(s.data))
	for ft.held > ft.capacity && len(ft.order) > 1 {
		old := ft.order[0]
		ft.order = ft.order[1:]
		spans := ft.cache[old.location]
		for i, sp := range spans {
			if sp.off == old.off {
				ft.held -= int64(len(sp.data))
				ft.cache[old.location] = append(spans[:i], spans[i+1:]...)
				break
			}
		}
	}
}

// fetch reads every range (coalesced) of one file into a sparseFile.
func (ft *fetcher) fetch(ctx context.Context, location string, size int64, ranges []byteRange) (*sparseFile, error) {
	bucket, key, err := splitS3(location)
	if err != nil {
		return nil, err
	}
	sf := &sparseFile{path: location, size: size}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, ft.concurrency))
	for _, r := range coalesce(ranges) {
		if r.Len <= 0 {
			continue
		}
		if b, ok := ft.cached(location, r); ok {
			sf.add(r.Off, b)
			continue
		}
		g.Go(func() error {
			obj, err := ft.client.GetObject(gctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
				Range: aws.String(fmt.Sprintf("bytes=%d-%d", r.Off, r.Off+r.Len-1))})
			if err != nil {
				return fmt.Errorf("ranged GET %s [%d, %d): %w", location, r.Off, r.Off+r.Len, err)
			}
			defer obj.Body.Close()
			b := make([]byte, r.Len)
			if _, err := io.ReadFull(obj.Body, b); err != nil {
				return fmt.Errorf("ranged GET %s [%d, %d): %w", location, r.Off, r.Off+r.Len, err)
			}
			ft.bytes.Add(r.Len)
			ft.requests.Add(1)
			mu.Lock()
			sf.add(r.Off, b)
			mu.Unlock()
			ft.remember(location, span{r.Off, b})
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return sf, nil
}
