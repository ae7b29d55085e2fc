package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
				if rangeNotSatisfiable(err) {
					return ft.changed(gctx, location, size, fmt.Sprintf("the planned range [%d, %d) is past its end (HTTP 416)", r.Off, r.Off+r.Len))
				}
				return fmt.Errorf("ranged GET %s [%d, %d): %w", location, r.Off, r.Off+r.Len, err)
			}
			defer obj.Body.Close()
			if now, ok := objectSize(obj.ContentRange); ok && now != size {
				return &FileChangedError{File: location, PlannedSize: size, Size: now, Detail: "its size differs"}
			}
			b := make([]byte, r.Len)
			if n, err := io.ReadFull(obj.Body, b); err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
					return ft.changed(gctx, location, size, fmt.Sprintf("the planned range [%d, %d) returned %d bytes", r.Off, r.Off+r.Len, n))
				}
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

// FileChangedError is a planned data file whose bytes are no longer those
// the plan describes (truncated, replaced): the read stops rather than
// decode other bytes. It is FAILED_PRECONDITION, like the catalog's
// refusal of a file whose size differs from its manifest.
type FileChangedError struct {
	File        string
	PlannedSize int64
	Size        int64 // the size now; -1: not known
	Detail      string
}

func (e *FileChangedError) Error() string {
	now := "its size now unknown"
	if e.Size >= 0 {
		now = fmt.Sprintf("now %d bytes", e.Size)
	}
	return fmt.Sprintf("%s changed since it was planned: planned at %d bytes, %s: %s", e.File, e.PlannedSize, now, e.Detail)
}

// GRPCStatus classifies the error (status.Code, status.Convert).
func (e *FileChangedError) GRPCStatus() *status.Status {
	return status.New(codes.FailedPrecondition, e.Error())
}

// changed is a FileChangedError, with the file's size now when the S3
// gateway tells it.
func (ft *fetcher) changed(ctx context.Context, location string, planned int64, detail string) error {
	e := &FileChangedError{File: location, PlannedSize: planned, Size: -1, Detail: detail}
	if bucket, key, err := splitS3(location); err == nil {
		if head, err := ft.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil && head.ContentLength != nil {
			e.Size = *head.ContentLength
		}
	}
	return e
}

// rangeNotSatisfiable reports an S3 InvalidRange (HTTP 416) answer.
func rangeNotSatisfiable(err error) bool {
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}

// objectSize reads the object's size from a Content-Range header
// ("bytes a-b/size").
func objectSize(contentRange *string) (int64, bool) {
	if contentRange == nil {
		return 0, false
	}
	_, total, ok := strings.Cut(*contentRange, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil
}
