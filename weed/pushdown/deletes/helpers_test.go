package deletes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// sharedTestdata returns <repo root>/../shared/testdata, skipping the test
// when the shared test data is absent.
func sharedTestdata(t *testing.T, sub string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "testdata", sub)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("the shared test data is absent (%s): %v", p, err)
	}
	return p
}

// memSource is a file in memory that counts its reads.
type memSource struct {
	data  []byte
	reads *[]readCall
	mu    *sync.Mutex
	fail  error
}

type readCall struct{ off, n int64 }

func (m memSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if m.mu != nil {
		m.mu.Lock()
		*m.reads = append(*m.reads, readCall{off, int64(len(p))})
		m.mu.Unlock()
	}
	if m.fail != nil {
		return 0, m.fail
	}
	if off < 0 || off > int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m memSource) Size() int64 { return int64(len(m.data)) }

// memFS is a set of files in memory.
type memFS struct {
	mu    sync.Mutex
	files map[string][]byte
	reads map[string]*[]readCall
	opens map[string]int
}

func newMemFS() *memFS {
	return &memFS{files: map[string][]byte{}, reads: map[string]*[]readCall{}, opens: map[string]int{}}
}

func (fs *memFS) put(path string, b []byte) { fs.mu.Lock(); fs.files[path] = b; fs.mu.Unlock() }

func (fs *memFS) open(ctx context.Context, path string) (Source, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	b, ok := fs.files[path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, os.ErrNotExist)
	}
	fs.opens[path]++
	if fs.reads[path] == nil {
		fs.reads[path] = &[]readCall{}
	}
	return memSource{data: b, reads: fs.reads[path], mu: &fs.mu}, nil
}

func (fs *memFS) openCount(path string) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.opens[path]
}

func (fs *memFS) totalOpens() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := 0
	for _, c := range fs.opens {
		n += c
	}
	return n
}

// osOpen opens files of the local file system.
func osOpen(ctx context.Context, path string) (Source, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return memSource{data: b}, nil
}

func bitmapOf(ps ...uint64) *roaring64.Bitmap {
	b := roaring64.New()
	b.AddMany(ps)
	return b
}

func positions(b *roaring64.Bitmap) []uint64 {
	if b == nil {
		return nil
	}
	return b.ToArray()
}

// sameBitmap fails unless got holds exactly want.
func sameBitmap(t *testing.T, what string, got *roaring64.Bitmap, want []uint64) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	want = slices.Compact(want)
	g := positions(got)
	if len(g) == len(want) && slices.Equal(g, want) {
		return
	}
	t.Fatalf("%s: got %d positions %v, want %d positions %v", what, len(g), trunc(g), len(want), trunc(want))
}

func trunc(p []uint64) []uint64 {
	if len(p) > 40 {
		return p[:40]
	}
	return p
}

// errContains fails unless err is non-nil and mentions every part.
func errContains(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error mentioning %q, got nil", parts)
	}
	for _, p := range parts {
		if !bytes.Contains([]byte(err.Error()), []byte(p)) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

var errInjected = errors.New("injected I/O failure")

// testStoreKey seals the persisted bitmaps of the tests.
var testStoreKey = []byte("lakeweed deletes test store key, 32+ bytes")
