// Package indexstore keeps side-index payloads beside the Parquet file they
// index, in the filer, where the volume server holding the data also holds
// them:
//
//	s3://warehouse/ns/t/data/f.parquet
//	s3://warehouse/ns/t/data/.index/f.parquet/<size>-<record_count>/deletes.position.bitmap
//	                                          └ identity: a changed file never sees these
//
// A missing or unreadable payload is reported as absent, so the caller
// recomputes it: the store can only cost time, never answers.
package indexstore

import (
	"context"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// MaxPayload bounds a payload read back (a larger one is treated as absent).
const MaxPayload = 256 << 20

// Dir is the side-index directory of a data file (a location as written in
// the manifest) at the given identity.
func Dir(dataPath, identity string) string {
	i := strings.LastIndexByte(dataPath, '/')
	return dataPath[:i+1] + ".index/" + dataPath[i+1:] + "/" + identity
}

// Filer stores payloads through the filer.
type Filer struct{ Reader *fileread.Reader }

var _ deletes.Store = Filer{}

// Location is where key's payload lives.
func Location(k deletes.StoreKey) string {
	return Dir(k.Data.Path, k.Data.Identity()) + "/" + path.Base(k.Name)
}

// Load returns the payload, or nil when it is absent or unreadable.
func (s Filer) Load(ctx context.Context, k deletes.StoreKey) ([]byte, error) {
	loc := Location(k)
	f, err := s.Reader.Open(ctx, loc)
	if err != nil {
		if !errors.Is(err, fileread.ErrNotFound) {
			glog.V(1).Infof("pushdown: side index %s unreadable (%v); recomputing", loc, err)
		}
		return nil, nil
	}
	if f.Size > MaxPayload {
		glog.Warningf("pushdown: side index %s is %d bytes, over %d; recomputing", loc, f.Size, MaxPayload)
		return nil, nil
	}
	buf := make([]byte, f.Size)
	if _, err := f.ReadAtContext(ctx, buf, 0); err != nil && !errors.Is(err, io.EOF) {
		glog.V(1).Infof("pushdown: side index %s unreadable (%v); recomputing", loc, err)
		return nil, nil
	}
	return buf, nil
}

// Save writes the payload (replacing an older one).
func (s Filer) Save(ctx context.Context, k deletes.StoreKey, b []byte) error {
	return s.Reader.WriteFile(ctx, Location(k), b)
}

// Opener opens files (delete files, data files) for the delete engine
// through reader, classifying failures: a missing file is NOT_FOUND, an
// unusable location or chunk FAILED_PRECONDITION, anything else
// UNAVAILABLE.
func Opener(reader *fileread.Reader) deletes.Opener {
	return func(ctx context.Context, loc string) (deletes.Source, error) {
		f, err := reader.Open(ctx, loc)
		if err != nil {
			switch {
			case errors.Is(err, fileread.ErrNotFound):
				return nil, perr.New(perr.NotFound, "%s: %v", loc, err)
			case errors.Is(err, fileread.ErrBadLocation), errors.Is(err, fileread.ErrUnsupportedChunk):
				return nil, perr.New(perr.FailedPrecondition, "%v", err)
			}
			return nil, perr.Wrap(perr.Unavailable, err)
		}
		return source{f}, nil
	}
}

// Source adapts an opened file to the readers of the delete engine and the
// footer cache.
func Source(f *fileread.File) interface {
	deletes.Source
	Size() int64
} {
	return source{f}
}

type source struct{ f *fileread.File }

func (s source) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return s.f.ReadAtContext(ctx, p, off)
}
func (s source) Size() int64 { return s.f.Size }
