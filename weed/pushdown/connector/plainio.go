package connector

// The file IO of the plain read: iceberg-go's scan reads table files
// through it instead of its own gocloud S3 IO.
//
//	iceberg-go Open(s3://b/k) ─▶ HEAD (size)
//	   ReadAt(p, off)        ─▶ GET Range: bytes=off-(off+len(p)-1), read to its end
//	   Read (manifests)      ─▶ GET of the next ≤ 4 MiB, read to its end
//
// gocloud's Open starts a GET of the whole object and iceberg-go then
// reads a Parquet file with ranged reads beside it, closing that first
// response after a few bytes: the S3 gateway logs the cut stream as an
// error ("streamFromVolumeServers … broken pipe / connection reset by
// peer") for every file a plain read opens. Here every GET asks for
// exactly the bytes read and is read to its end.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// sequentialChunk is the most a sequential Read asks for at once.
const sequentialChunk = 4 << 20

// plainTable is p's table reading its files through rangedIO (counted in
// the plain read's statistics), and the files it opened.
func (c *Connector) plainTable(ctx context.Context, p *prepared) (*table.Table, *openedFiles) {
	fsys := &rangedIO{ctx: ctx, client: c.plainS3, opened: &openedFiles{paths: map[string]bool{}}}
	return table.New(p.tbl.Identifier(), p.tbl.Metadata(), p.tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil), fsys.opened
}

// openedFiles are the paths a rangedIO opened.
type openedFiles struct {
	mu    sync.Mutex
	paths map[string]bool
}

// count is how many of the tasks' data files were opened.
func (o *openedFiles) count(tasks []table.FileScanTask) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, t := range tasks {
		if o.paths[t.File.FilePath()] {
			n++
		}
	}
	return n
}

// rangedIO is a read-only iceberg-go IO over the S3 gateway that reads
// with ranged GETs only.
type rangedIO struct {
	ctx    context.Context
	client *s3.Client
	opened *openedFiles
}

func (r *rangedIO) Open(name string) (icebergio.File, error) {
	bucket, key, err := splitS3(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	head, err := r.client.HeadObject(r.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	r.opened.mu.Lock()
	r.opened.paths[name] = true
	r.opened.mu.Unlock()
	f := &rangedFile{io: r, name: name, bucket: bucket, key: key}
	if head.ContentLength != nil {
		f.size = *head.ContentLength
	}
	if head.LastModified != nil {
		f.modTime = *head.LastModified
	}
	return f, nil
}

func (r *rangedIO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: errors.New("the plain read's file IO is read-only")}
}

// rangedFile is one object of rangedIO.
type rangedFile struct {
	io                *rangedIO
	name, bucket, key string
	size              int64
	modTime           time.Time
	pos               int64
	buf               []byte // read ahead of pos by Read
	bufAt             int64
}

func (f *rangedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), f.size-off)
	if want == 0 {
		return 0, nil
	}
	obj, err := f.io.client.GetObject(f.io.ctx, &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(f.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+want-1))})
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	defer obj.Body.Close()
	n, err := io.ReadFull(obj.Body, p[:want])
	if err != nil {
		return n, &fs.PathError{Op: "read", Path: f.name, Err: fmt.Errorf("range [%d, %d): %w", off, off+want, err)}
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (f *rangedFile) Read(p []byte) (int, error) {
	if f.pos >= f.size {
		return 0, io.EOF
	}
	if f.pos < f.bufAt || f.pos >= f.bufAt+int64(len(f.buf)) {
		n := min(max(int64(len(p)), sequentialChunk), f.size-f.pos)
		if int64(cap(f.buf)) < n {
			f.buf = make([]byte, n)
		}
		f.buf = f.buf[:n]
		got, err := f.ReadAt(f.buf, f.pos)
		f.buf, f.bufAt = f.buf[:got], f.pos
		if got == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, f.buf[f.pos-f.bufAt:])
	f.pos += int64(n)
	return n, nil
}

func (f *rangedFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += f.size
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	f.pos = offset
	return offset, nil
}

func (f *rangedFile) Close() error               { f.buf = nil; return nil }
func (f *rangedFile) Stat() (fs.FileInfo, error) { return f, nil }

// fs.FileInfo
func (f *rangedFile) Name() string       { return path.Base(f.key) }
func (f *rangedFile) Size() int64        { return f.size }
func (f *rangedFile) Mode() fs.FileMode  { return fs.ModeIrregular }
func (f *rangedFile) ModTime() time.Time { return f.modTime }
func (f *rangedFile) IsDir() bool        { return false }
func (f *rangedFile) Sys() any           { return nil }
