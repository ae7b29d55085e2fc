package connector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/bytelru"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
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

// ReadAt implements io.ReaderAt; a read may cross fetched ranges that
// touch or overlap.
func (f *sparseFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if off+want > f.size {
		want = f.size - off
	}
	done := int64(0)
	for done < want {
		// the span reaching furthest from at (spans may overlap)
		at := off + done
		best, bestEnd := -1, at
		for j := sort.Search(len(f.spans), func(j int) bool { return f.spans[j].off > at }) - 1; j >= 0; j-- {
			if end := f.spans[j].off + int64(len(f.spans[j].data)); end > bestEnd {
				best, bestEnd = j, end
			}
		}
		if best < 0 {
			return 0, fmt.Errorf("%s: read [%d, %d) outside the fetched ranges", f.path, off, off+want)
		}
		s := f.spans[best]
		done += int64(copy(p[done:want], s.data[at-s.off:]))
	}
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

// bytesAt are the n bytes at off, without a copy, when one fetched range
// holds them all.
func (f *sparseFile) bytesAt(off, n int64) ([]byte, bool) {
	j := sort.Search(len(f.spans), func(j int) bool { return f.spans[j].off > off }) - 1
	for ; j >= 0; j-- {
		if s := f.spans[j]; s.off+int64(len(s.data)) >= off+n {
			return s.data[off-s.off : off-s.off+n], true
		}
	}
	return nil, false
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

// byteRange is [Off, Off+Len) of one file.
type byteRange = plan.ByteRange

// coalesceGap is how far apart ranges the connector adds to a plan's may
// be and still be read as one (the catalog's default -pushdown.coalesceGapKB).
var coalesceGap = plan.DefaultOptions().CoalesceGap

// fetcher reads byte ranges of planned files, concurrently: from the
// volume pushdown service the plan names for a file (ReadRanges, next to
// the data; fetch_volume.go) or through the S3 gateway (ranged GETs), and
// caches fetched ranges (the range cache) for the connector's lifetime.
// A range wanted by several row groups at once is read once.
type fetcher struct {
	client      *s3.Client
	concurrency int
	path        ReadPath
	volume      *volumeReader // nil: every read goes through the S3 gateway
	bytes       atomic.Int64  // through the S3 gateway
	requests    atomic.Int64
	vol         volumeCounters

	mu       sync.Mutex
	inflight map[flightKey]*flight
	// the range cache: spans by file version (a read is served by a span
	// holding it), their recency and bytes in cache (bytelru, whose
	// evictions drop them from spans)
	spans    map[fileVersion][]span
	cache    *bytelru.Cache[cacheKey, span]
	capacity int64 // bytes the range cache may hold (<= 0: none)
}

type cacheKey struct {
	id  fileVersion
	off int64
}

// flight is one range being read; done closes when data or err is set.
type flight struct {
	done chan struct{}
	data []byte
	err  error
}

type flightKey struct {
	id fileVersion
	r  byteRange
}

// fileVersion is what the range cache keys bytes by: path and size, and
// the identity the plan names (footer.IdentityDir), so a rewrite of the
// same size never reads bytes cached from the version before.
type fileVersion struct {
	footer.Identity
	identity string
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
func (ft *fetcher) cached(id fileVersion, r byteRange) ([]byte, bool) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.cachedLocked(id, r)
}

func (ft *fetcher) cachedLocked(id fileVersion, r byteRange) ([]byte, bool) {
	for _, s := range ft.spans[id] {
		if s.off <= r.Off && r.Off+r.Len <= s.off+int64(len(s.data)) {
			ft.cache.Get(cacheKey{id, s.off}) // recently used
			return s.data[r.Off-s.off : r.Off-s.off+r.Len], true
		}
	}
	return nil, false
}

// remember adds a fetched span to the range cache, evicting the least
// recently used.
func (ft *fetcher) remember(id fileVersion, s span) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.rememberLocked(id, s)
}

func (ft *fetcher) rememberLocked(id fileVersion, s span) {
	if ft.capacity <= 0 {
		return
	}
	if ft.cache == nil {
		ft.spans = map[fileVersion][]span{}
		// the newest span stays even when larger than the whole cache:
		// the read that fetched it is served from it
		ft.cache = bytelru.New[cacheKey, span](ft.capacity, bytelru.Options[cacheKey, span]{KeepOne: true, OnEvict: ft.forget})
	}
	ft.cache.Add(cacheKey{id, s.off}, s, int64(len(s.data))) // a span at the same offset is forgotten first
	ft.spans[id] = append(ft.spans[id], s)
}

// forget drops an evicted span from its file's list (under ft.mu: the
// cache evicts inside rememberLocked).
func (ft *fetcher) forget(k cacheKey, _ span) {
	spans := ft.spans[k.id]
	for i, sp := range spans {
		if sp.off == k.off {
			// slices.Delete zeroes the vacated slot: the backing array
			// must not keep an evicted span's bytes alive
			if spans = slices.Delete(spans, i, i+1); len(spans) == 0 {
				delete(ft.spans, k.id)
			} else {
				ft.spans[k.id] = spans
			}
			return
		}
	}
}

// heldBytes is what the range cache holds.
func (ft *fetcher) heldBytes() int64 {
	if ft.cache == nil {
		return 0
	}
	return ft.cache.Stats().Bytes
}

// claim sorts the ranges of one file not yet in sf: read by this caller
// (mine, now in flight), or being read by another (theirs).
func (ft *fetcher) claim(id fileVersion, sf *sparseFile, rs []byteRange) (mine []byteRange, theirs map[byteRange]*flight) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if ft.inflight == nil {
		ft.inflight = map[flightKey]*flight{}
	}
	for _, r := range rs {
		if b, ok := ft.cachedLocked(id, r); ok {
			sf.add(r.Off, b)
			continue
		}
		k := flightKey{id, r}
		if f := ft.inflight[k]; f != nil {
			if theirs == nil {
				theirs = map[byteRange]*flight{}
			}
			theirs[r] = f
			continue
		}
		ft.inflight[k] = &flight{done: make(chan struct{})}
		mine = append(mine, r)
	}
	return mine, theirs
}

// complete ends the flight of r, caching its bytes when read.
func (ft *fetcher) complete(id fileVersion, r byteRange, data []byte, err error) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	k := flightKey{id, r}
	f := ft.inflight[k]
	if f == nil {
		return
	}
	delete(ft.inflight, k)
	if err == nil {
		ft.rememberLocked(id, span{r.Off, data})
	}
	f.data, f.err = data, err
	close(f.done)
}

// fetch reads ranges of one file into a sparseFile: given as they are
// (a plan's coalesced file_ranges), extra coalesced with plan.Coalesce
// (what the connector reads beyond the plan); the range cache serves what
// it holds.
func (ft *fetcher) fetch(ctx context.Context, pf *pushdown_pb.PlannedFile, given, extra []byteRange) (*sparseFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // cancelled: no call started, no range claimed
	}
	location, size := pf.GetFile(), pf.GetSizeBytes()
	if _, _, err := splitS3(location); err != nil {
		return nil, err
	}
	id := fileVersion{footer.Identity{Path: location, Size: size}, pf.GetIdentity()}
	sf := &sparseFile{path: location, size: size}
	var want []byteRange
	seen := map[byteRange]bool{}
	for _, r := range append(append([]byteRange{}, given...), plan.Coalesce(extra, coalesceGap)...) {
		if r.Len > 0 && !seen[r] {
			seen[r] = true
			want = append(want, r)
		}
	}
	mine, theirs := ft.claim(id, sf, want)
	got, err := ft.readClaimed(ctx, pf, id, mine)
	if err != nil {
		return nil, err
	}
	for i, r := range mine {
		sf.add(r.Off, got[i])
	}
	for r, f := range theirs {
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		b, err := f.data, f.err
		if err != nil && ctx.Err() == nil && errors.Is(err, context.Canceled) {
			// the caller that read it was cancelled, this one is not
			var bs [][]byte
			if bs, err = ft.read(ctx, pf, id, []byteRange{r}); err == nil {
				b = bs[0]
			}
		}
		if err != nil {
			return nil, err
		}
		sf.add(r.Off, b)
	}
	return sf, nil
}

// readClaimed reads the ranges this caller claimed and ends their flights
// (with the bytes, or the error).
func (ft *fetcher) readClaimed(ctx context.Context, pf *pushdown_pb.PlannedFile, id fileVersion, rs []byteRange) ([][]byte, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	got, err := ft.read(ctx, pf, id, rs)
	for i, r := range rs {
		if err != nil {
			ft.complete(id, r, nil, err)
		} else {
			ft.complete(id, r, got[i], nil)
		}
	}
	return got, err
}

// read reads rs of one file: from the volume pushdown service the plan
// names for it when the read path allows (falling back to the S3 gateway
// as fetch_volume.go says), otherwise through the S3 gateway.
func (ft *fetcher) read(ctx context.Context, pf *pushdown_pb.PlannedFile, id fileVersion, rs []byteRange) ([][]byte, error) {
	if isPlainRead(ctx) {
		return ft.readS3(ctx, id, rs)
	}
	if ep, ok, err := ft.volumeRoute(pf); err != nil {
		return nil, err
	} else if ok {
		return ft.readVolume(ctx, ep, pf, id, rs)
	}
	return ft.readS3(ctx, id, rs)
}

// readS3 reads rs through the S3 gateway, one ranged GET each.
func (ft *fetcher) readS3(ctx context.Context, id fileVersion, rs []byteRange) ([][]byte, error) {
	bucket, key, err := splitS3(id.Path)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(rs))
	g, gctx := safe.Group(ctx, "connector")
	g.SetLimit(max(1, ft.concurrency))
	for i, r := range rs {
		g.Go(func() error {
			b, err := ft.get(gctx, id, bucket, key, r)
			out[i] = b
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// getTimeout bounds one ranged GET, which a cancelled query does not cut.
const getTimeout = 2 * time.Minute

// get is one ranged GET through the S3 gateway. Once sent it is read to
// its end even when ctx is cancelled (a LIMIT met, another range failed):
// a response cut mid-stream makes the S3 gateway log a failed stream
// ("broken pipe", "connection reset by peer"); the bytes are few and go
// to the range cache.
func (ft *fetcher) get(ctx context.Context, id fileVersion, bucket, key string, r byteRange) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), getTimeout)
	defer cancel()
	location, size := id.Path, id.Size
	obj, err := ft.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", r.Off, r.Off+r.Len-1))})
	if err != nil {
		if rangeNotSatisfiable(err) {
			return nil, ft.changed(ctx, location, size, fmt.Sprintf("the planned range [%d, %d) is past its end (HTTP 416)", r.Off, r.Off+r.Len))
		}
		return nil, fmt.Errorf("ranged GET %s [%d, %d): %w", location, r.Off, r.Off+r.Len, err)
	}
	defer obj.Body.Close()
	if now, ok := objectSize(obj.ContentRange); ok && now != size {
		return nil, &FileChangedError{File: location, PlannedSize: size, Size: now, Detail: "its size differs"}
	}
	b := make([]byte, r.Len)
	if n, err := io.ReadFull(obj.Body, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, ft.changed(ctx, location, size, fmt.Sprintf("the planned range [%d, %d) returned %d bytes", r.Off, r.Off+r.Len, n))
		}
		return nil, fmt.Errorf("ranged GET %s [%d, %d): %w", location, r.Off, r.Off+r.Len, err)
	}
	ft.bytes.Add(r.Len)
	ft.requests.Add(1)
	return b, nil
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

// fileMeta is the parsed footer of one file version and what is derived
// from it once: its layout, the offset indexes read for late columns.
type fileMeta struct {
	layout        *fileLayout // consts and defaults unset
	offsetIndexes sync.Map    // [2]int{row group, leaf} → metadata.OffsetIndex (nil: unusable)
	headerPages   sync.Map    // [2]int{row group, leaf} → []footer.Page from the page headers (nil: unusable)
}

// metaKey identifies a file version as the catalog does: path and size,
// and the identity the plan names (footer.IdentityDir: size, rows and the
// footer's hash), so a rewrite of the same size is another key; the row
// count and footer location cover catalogs that name no identity.
type metaKey struct {
	footer.Identity
	identity                         string
	rows, footerOffset, footerLength int64
}

// layoutOf is the layout of a planned file: its footer from the cache or
// one ranged GET, parsed once per file version.
func (c *Connector) layoutOf(ctx context.Context, pf *pushdown_pb.PlannedFile, nm iceberg.NameMapping) (*fileLayout, error) {
	k := metaKey{footer.Identity{Path: pf.File, Size: pf.SizeBytes}, pf.GetIdentity(), pf.RecordCount, pf.FooterOffset, pf.FooterLength}
	m, _ := c.footers.Get(k)
	if m == nil {
		fb, err := c.fetch.fetch(ctx, pf, nil, []byteRange{{Off: pf.FooterOffset, Len: pf.FooterLength}})
		if err != nil {
			return nil, err
		}
		raw := make([]byte, pf.FooterLength)
		if _, err := fb.ReadAt(raw, pf.FooterOffset); err != nil {
			return nil, err
		}
		md, err := footer.ParseFooterBytes(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: footer: %w", pf.File, err)
		}
		md.SetSourceFileSize(pf.SizeBytes)
		fl, err := newFileLayout(pf.File, pf.SizeBytes, md, nm)
		if err != nil {
			return nil, err
		}
		if fl.chunks, err = footer.Layout(md, pf.FooterOffset); err != nil {
			return nil, fmt.Errorf("%s: %w", pf.File, err)
		}
		m = &fileMeta{layout: fl}
		fl.meta = m
		c.footers.Add(k, m)
	}
	fl := *m.layout
	if !sameMapping(fl.mapping, nm) {
		fl.columns, fl.mapping = plan.NewColumnMap(fl.md.Schema, nm), nm
	}
	return &fl, nil
}

// sameMapping reports whether two name mappings are the same slice (a
// table's mapping is parsed once per metadata version).
func sameMapping(a, b iceberg.NameMapping) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// coveredBy splits needed ranges into the plan's ranges (given, sorted)
// that hold them, read as they are, and the needs no single one of them
// holds. A plan's range much larger than what the row group needs of it
// (a plan reading every column coalesces a whole file into one range) is
// not read whole for one row group: its needs are read instead, so a
// row group holds its own bytes, not the file's (wholeGivenSlack).
func coveredBy(given []byteRange, needs []byteRange) (use, rest []byteRange) {
	served := map[int][]byteRange{}
	var order []int
	for _, nd := range needs {
		i := searchRange(given, nd.Off)
		if i < len(given) && given[i].Off <= nd.Off && nd.Off+nd.Len <= given[i].Off+given[i].Len {
			if served[i] == nil {
				order = append(order, i)
			}
			served[i] = append(served[i], nd)
			continue
		}
		rest = append(rest, nd)
	}
	for _, i := range order {
		var n int64
		for _, nd := range served[i] {
			n += nd.Len
		}
		if given[i].Len <= 2*n || given[i].Len-n <= wholeGivenSlack {
			use = append(use, given[i])
		} else {
			rest = append(rest, served[i]...)
		}
	}
	return use, rest
}

// wholeGivenSlack: a plan's range is read whole for a row group when it
// holds at most this many bytes more than the row group needs of it (or
// at most twice what it needs).
const wholeGivenSlack = 1 << 20

// searchRange is the first range of sorted rs ending after off.
func searchRange(rs []byteRange, off int64) int {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := (lo + hi) / 2
		if rs[m].Off+rs[m].Len <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
