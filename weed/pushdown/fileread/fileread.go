// Package fileread reads byte ranges of files stored in the SeaweedFS filer.
//
//	path ──LookupEntry──▶ filer entry (inline content | chunks)
//	                         │ manifests resolved once per Open
//	                         ▼
//	         visible intervals ──range──▶ chunk views
//	                                          │ volume id → URLs (cached),
//	                                          │ the local volume server first
//	                                          ▼
//	      plain chunk: HTTP Range GET of just the needle bytes
//	      encrypted / compressed chunk: whole needle, decoded, then sliced
//	      S3 SSE chunk: refused (the key lives with the S3 gateway)
//
// Both pushdown services and every later tier read file bytes through it.
package fileread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"path"
	"strings"
	"sync/atomic"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"
	util_http "github.com/seaweedfs/seaweedfs/weed/util/http"
	"github.com/seaweedfs/seaweedfs/weed/wdclient"
	"google.golang.org/grpc"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// BucketsDir is where S3 buckets (and table buckets) live in the filer.
const BucketsDir = "/buckets"

// ErrNotFound is returned when the file does not exist in the filer.
var ErrNotFound = errors.New("file not found")

// ErrUnsupportedChunk is returned for chunks pushdown cannot decode.
var ErrUnsupportedChunk = errors.New("unsupported chunk")

// ErrOutOfRange is returned for a range that lies outside the file.
var ErrOutOfRange = errors.New("range outside the file")

// ErrBadLocation is returned for a location that names no file of this cluster.
var ErrBadLocation = errors.New("not a location in this cluster")

// Range is a byte range [Offset, Offset+Length) of a file.
type Range struct {
	Offset int64
	Length int64
}

// End returns the offset one past the range (only meaningful for a range
// Within some size: a client's offset and length can overflow it).
func (r Range) End() int64 { return r.Offset + r.Length }

// Within reports whether the range lies inside a file of size bytes,
// without overflowing for any offset and length.
func (r Range) Within(size int64) bool {
	return r.Offset >= 0 && r.Length >= 0 && r.Offset <= size && r.Length <= size-r.Offset
}

// Stats counts the bytes a Reader fetched.
type Stats struct {
	BytesLocal  int64 // served by the preferred (local) volume server
	BytesRemote int64 // served by other volume servers
	BytesInline int64 // served from the filer entry itself
	Requests    int64 // HTTP requests issued to volume servers
}

// Reader reads files of one filer. It is safe for concurrent use.
type Reader struct {
	filers      []pb.ServerAddress
	dial        grpc.DialOption
	lookup      wdclient.LookupFileIdFunctionType
	localHost   string // host:port of the preferred volume server, or ""
	bytesLocal  atomic.Int64
	bytesRemote atomic.Int64
	bytesInline atomic.Int64
	requests    atomic.Int64
	// MaxConcurrency bounds parallel chunk reads of one ReadRanges call.
	MaxConcurrency int
}

// New returns a Reader that resolves files through the given filers and
// prefers the volume server at localVolumeServer (host:port, may be empty).
func New(filers []pb.ServerAddress, dial grpc.DialOption, localVolumeServer string) *Reader {
	fc := wdclient.NewFilerClient(filers, dial, "")
	return &Reader{
		filers:         filers,
		dial:           dial,
		lookup:         fc.GetLookupFileIdFunction(),
		localHost:      localVolumeServer,
		MaxConcurrency: 16,
	}
}

// NewWithLookup is New with an explicit volume lookup function (tests).
func NewWithLookup(filers []pb.ServerAddress, dial grpc.DialOption, lookup wdclient.LookupFileIdFunctionType, localVolumeServer string) *Reader {
	return &Reader{filers: filers, dial: dial, lookup: lookup, localHost: localVolumeServer, MaxConcurrency: 16}
}

// Stats returns the byte counters so far.
func (r *Reader) Stats() Stats {
	return Stats{BytesLocal: r.bytesLocal.Load(), BytesRemote: r.bytesRemote.Load(),
		BytesInline: r.bytesInline.Load(), Requests: r.requests.Load()}
}

// WithFilerClient runs fn against one of the reader's filers.
func (r *Reader) WithFilerClient(streaming bool, fn func(filer_pb.SeaweedFilerClient) error) error {
	return pb.WithOneOfGrpcFilerClients(streaming, r.filers, r.dial, fn)
}

// FilerPath maps a location as written in Iceberg metadata (s3://bucket/key,
// s3a://, s3n://) or a filer path (/buckets/...) to the filer path.
//
// The key is taken literally, as S3 does and as Iceberg's S3FileIO and
// PyIceberg do: "partition_col=08%3A21%3A09" names an object whose key holds
// the three characters "%3A", not a colon. (Decoding it, as a URL parser
// would, reads a different object than the writer wrote.)
func FilerPath(location string) (string, error) {
	if strings.HasPrefix(location, "/") {
		return path.Clean(location), nil
	}
	scheme, rest, ok := strings.Cut(location, "://")
	if !ok {
		return "", fmt.Errorf("file location %s: want s3://bucket/key: %w", perr.Quote(location), ErrBadLocation)
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a", "s3n":
	default:
		return "", fmt.Errorf("file location %s: scheme %s is not stored in this cluster (want s3://bucket/key): %w", perr.Quote(location), perr.Quote(scheme), ErrBadLocation)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	key = strings.TrimLeft(key, "/")
	if bucket == "" || strings.Trim(key, "/") == "" {
		return "", fmt.Errorf("file location %s: want s3://bucket/key: %w", perr.Quote(location), ErrBadLocation)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == ".." || seg == "." {
			return "", fmt.Errorf("file location %s: %q path segments are not allowed: %w", perr.Quote(location), seg, ErrBadLocation)
		}
	}
	return BucketsDir + "/" + bucket + "/" + key, nil
}

// File is an opened filer file. Its chunk layout is fixed at Open time, so a
// File never mixes bytes of two versions of the path.
type File struct {
	Path    string // filer path
	Size    int64
	Mtime   int64 // seconds
	ETag    string
	r       *Reader
	content []byte // inline content, when the filer stores the file in the entry
	visible *filer.IntervalList[*filer.VisibleInterval]

	bytesLocal, bytesRemote atomic.Int64
}

// Stats returns the bytes read through this File so far.
func (f *File) Stats() Stats {
	return Stats{BytesLocal: f.bytesLocal.Load(), BytesRemote: f.bytesRemote.Load()}
}

// Open looks the file up and resolves its chunk manifests.
func (r *Reader) Open(ctx context.Context, location string) (*File, error) {
	fp, entry, err := r.lookupEntry(ctx, location)
	if err != nil {
		return nil, err
	}
	return r.OpenEntry(ctx, fp, entry)
}

// ETag returns the file's current ETag (one filer lookup, no chunk
// resolution): what changes when its bytes are rewritten.
func (r *Reader) ETag(ctx context.Context, location string) (string, error) {
	_, entry, err := r.lookupEntry(ctx, location)
	if err != nil {
		return "", err
	}
	return filer.ETag(entry), nil
}

func (r *Reader) lookupEntry(ctx context.Context, location string) (string, *filer_pb.Entry, error) {
	fp, err := FilerPath(location)
	if err != nil {
		return "", nil, err
	}
	dir, name := util.FullPath(fp).DirAndName()
	var entry *filer_pb.Entry
	err = r.WithFilerClient(false, func(client filer_pb.SeaweedFilerClient) error {
		resp, lerr := filer_pb.LookupEntry(ctx, client, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: name})
		if lerr != nil {
			return lerr
		}
		entry = resp.Entry
		return nil
	})
	if err != nil {
		if errors.Is(err, filer_pb.ErrNotFound) {
			return "", nil, fmt.Errorf("%s: %w", perr.Quote(fp), ErrNotFound)
		}
		return "", nil, fmt.Errorf("look up %s: %w", perr.Quote(fp), err)
	}
	return fp, entry, nil
}

// OpenEntry opens an entry already looked up.
func (r *Reader) OpenEntry(ctx context.Context, fp string, entry *filer_pb.Entry) (*File, error) {
	if entry.IsDirectory {
		return nil, fmt.Errorf("%s is a directory, not a file", perr.Quote(fp))
	}
	f := &File{Path: fp, Size: int64(filer.FileSize(entry)), r: r, ETag: filer.ETag(entry)}
	if entry.Attributes != nil {
		f.Mtime = entry.Attributes.Mtime
	}
	if len(entry.Content) > 0 || len(entry.GetChunks()) == 0 {
		f.content = entry.Content
		return f, nil
	}
	data, _, err := filer.ResolveChunkManifest(ctx, r.lookup, entry.GetChunks(), 0, math.MaxInt64, nil)
	if err != nil {
		return nil, fmt.Errorf("resolve chunk manifest of %s: %w", perr.Quote(fp), err)
	}
	for _, c := range data {
		if c.GetSseType() != filer_pb.SSEType_NONE {
			return nil, fmt.Errorf("%s: chunk %s is encrypted with S3 server-side encryption (%s); pushdown reads only files stored without SSE: %w",
				perr.Quote(fp), c.GetFileIdString(), c.GetSseType(), ErrUnsupportedChunk)
		}
	}
	f.visible, err = filer.NonOverlappingVisibleIntervals(ctx, r.lookup, data, 0, math.MaxInt64)
	if err != nil {
		return nil, fmt.Errorf("chunk layout of %s: %w", perr.Quote(fp), err)
	}
	return f, nil
}

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	return f.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext reads len(p) bytes at off; a read past the end returns the
// bytes available and io.ErrUnexpectedEOF-free io.EOF semantics of io.ReaderAt.
func (f *File) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", perr.Quote(f.Path), off)
	}
	if off >= f.Size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := len(p)
	short := false
	if int64(n) > f.Size-off {
		n = int(f.Size - off)
		short = true
	}
	if err := f.readInto(ctx, p[:n], off); err != nil {
		return 0, err
	}
	if short {
		return n, io.EOF
	}
	return n, nil
}

// ReadRanges reads several ranges concurrently; every range must lie inside
// the file.
func (f *File) ReadRanges(ctx context.Context, ranges []Range) ([][]byte, error) {
	out := make([][]byte, len(ranges))
	for i, rg := range ranges {
		if !rg.Within(f.Size) {
			return nil, fmt.Errorf("%s: range at offset %d of %d bytes lies outside the file (size %d): %w", perr.Quote(f.Path), rg.Offset, rg.Length, f.Size, ErrOutOfRange)
		}
		out[i] = make([]byte, rg.Length)
	}
	g, gctx := safe.Group(ctx, "fileread")
	g.SetLimit(max(1, f.r.MaxConcurrency))
	for i, rg := range ranges {
		g.Go(func() error { return f.readInto(gctx, out[i], rg.Offset) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (f *File) readInto(ctx context.Context, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	if f.visible == nil {
		// inline content; an entry may claim more bytes than it holds
		// (those read as zero, as the filer serves them)
		clear(p)
		if off >= 0 && off < int64(len(f.content)) {
			copy(p, f.content[off:])
		}
		f.r.bytesInline.Add(int64(len(p)))
		return nil
	}
	clear(p)
	views := filer.ViewFromVisibleIntervals(f.visible, off, int64(len(p)))
	var views2 []*filer.ChunkView
	for x := views.Front(); x != nil; x = x.Next {
		views2 = append(views2, x.Value)
	}
	if len(views2) == 1 {
		return f.readView(ctx, p, off, views2[0])
	}
	// every view at once; the first failure cancels the others
	g, gctx := safe.Group(ctx, "fileread")
	for _, v := range views2 {
		g.Go(func() error { return f.readView(gctx, p, off, v) })
	}
	return g.Wait()
}

// readView fills the part of p (which starts at file offset base) covered by
// the chunk view; holes between views stay zero.
func (f *File) readView(ctx context.Context, p []byte, base int64, v *filer.ChunkView) error {
	dst := p[v.ViewOffset-base : v.ViewOffset-base+int64(v.ViewSize)]
	urls, err := f.r.lookup(ctx, v.FileId)
	if err != nil {
		return fmt.Errorf("%s: locate chunk %s: %w", perr.Quote(f.Path), v.FileId, err)
	}
	if len(urls) == 0 {
		return fmt.Errorf("%s: chunk %s has no volume server location", perr.Quote(f.Path), v.FileId)
	}
	urls = f.r.preferLocal(urls)
	jwt := filer.ChunkReadJwt(urls, v.FileId)
	ranged := v.CanRangeFetch()
	var lastErr error
	for _, u := range urls {
		written := 0
		var fetchErr error
		f.r.requests.Add(1)
		if ranged {
			_, fetchErr = util_http.ReadUrlAsStream(ctx, u, jwt, nil, false, false, v.OffsetInChunk, int(v.ViewSize), func(data []byte) {
				written += copy(dst[written:], data)
			})
			if fetchErr == nil && written != len(dst) {
				fetchErr = fmt.Errorf("short read: %d of %d bytes", written, len(dst))
			}
		} else {
			// Encrypted or compressed needles are decoded as a whole.
			whole := make([]byte, 0, v.ChunkSize)
			_, fetchErr = util_http.ReadUrlAsStream(ctx, u, jwt, v.CipherKey, v.IsGzipped, true, 0, int(v.ChunkSize), func(data []byte) {
				whole = append(whole, data...)
			})
			if fetchErr == nil {
				if int64(len(whole)) < v.OffsetInChunk+int64(v.ViewSize) {
					fetchErr = fmt.Errorf("decoded chunk has %d bytes, need %d", len(whole), v.OffsetInChunk+int64(v.ViewSize))
				} else {
					written = copy(dst, whole[v.OffsetInChunk:])
				}
			}
		}
		if fetchErr == nil {
			if f.r.isLocal(u) {
				f.r.bytesLocal.Add(int64(written))
				f.bytesLocal.Add(int64(written))
			} else {
				f.r.bytesRemote.Add(int64(written))
				f.bytesRemote.Add(int64(written))
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		lastErr = fetchErr
	}
	return fmt.Errorf("%s: read chunk %s [%d, +%d): %w", perr.Quote(f.Path), v.FileId, v.OffsetInChunk, v.ViewSize, lastErr)
}

func (r *Reader) isLocal(u string) bool {
	if r.localHost == "" {
		return false
	}
	parsed, err := url.Parse(u)
	return err == nil && parsed.Host == r.localHost
}

// preferLocal moves the local volume server's URL to the front.
func (r *Reader) preferLocal(urls []string) []string {
	if r.localHost == "" || len(urls) < 2 {
		return urls
	}
	for i, u := range urls {
		if r.isLocal(u) {
			if i == 0 {
				return urls
			}
			out := make([]string, 0, len(urls))
			out = append(out, u)
			out = append(out, urls[:i]...)
			return append(out, urls[i+1:]...)
		}
	}
	return urls
}
