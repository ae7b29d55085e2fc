package volume

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// ComputeDeletes computes the deleted positions of data files from the
// delete files the catalog resolved for each: deletion vectors, merged
// position-delete bitmaps and per-pair equality-delete bitmaps are cached
// here and persisted beside the data (.index/).
//
// The caller must be allowed to read every data and delete file named, all
// inside table buckets; a data file must exist and match the size and
// record count the request gives before anything is computed for it, and
// persisted bitmaps live under its current identity only.
func (s *Service) ComputeDeletes(ctx context.Context, req *pushdown_pb.ComputeDeletesRequest) (*pushdown_pb.ComputeDeletesResponse, error) {
	if n := len(req.GetDataFiles()); n > s.Limits.MaxDeleteFiles {
		return nil, perr.New(perr.ResourceExhausted, "ComputeDeletes: %d data files exceed the limit of %d per call", n, s.Limits.MaxDeleteFiles)
	}
	refs := 0
	for _, d := range req.GetDataFiles() {
		refs += len(d.GetDeletes())
	}
	if refs > s.Limits.MaxDeleteRefs {
		return nil, perr.New(perr.ResourceExhausted, "ComputeDeletes: %d delete file references exceed the limit of %d per call", refs, s.Limits.MaxDeleteRefs)
	}
	caller, err := s.callerOf(ctx, "ComputeDeletes")
	if err != nil {
		return nil, err
	}
	// bitmaps are persisted beside the data only for a caller who may
	// write there (the catalog's token, Write on the table); others get
	// them computed and persist nothing
	persist := true
	for i, d := range req.GetDataFiles() {
		loc, err := caller.MayRead(ctx, d.GetPath())
		if err != nil {
			return nil, perr.New(perr.KindOf(err), "ComputeDeletes: data_files[%d]: %w", i, err)
		}
		persist = persist && caller.CanWrite(loc)
		for j, x := range d.GetDeletes() {
			if _, err := caller.MayRead(ctx, x.GetPath()); err != nil {
				return nil, perr.New(perr.KindOf(err), "ComputeDeletes: data_files[%d].deletes[%d]: %w", i, j, err)
			}
		}
	}
	var schema *iceberg.Schema
	if len(req.GetSchemaJson()) > 0 {
		schema = new(iceberg.Schema)
		if err := json.Unmarshal(req.GetSchemaJson(), schema); err != nil {
			return nil, perr.New(perr.InvalidArgument, "ComputeDeletes: schema_json: %v", err)
		}
	}
	var nm iceberg.NameMapping
	if len(req.GetNameMappingJson()) > 0 {
		if err := json.Unmarshal(req.GetNameMappingJson(), &nm); err != nil {
			return nil, perr.New(perr.InvalidArgument, "ComputeDeletes: name_mapping_json: %v", err)
		}
	}
	type task struct {
		data deletes.DataFile
		dels []deletes.File
	}
	tasks := make([]task, len(req.GetDataFiles()))
	for i, d := range req.GetDataFiles() {
		f, dels, err := descriptor.ToDataFile(fmt.Sprintf("data_files[%d]", i), d, nil)
		if err != nil {
			return nil, err
		}
		for _, x := range dels {
			if x.Content == deletes.EqualityDeletes && schema == nil {
				return nil, perr.New(perr.InvalidArgument, "ComputeDeletes: data_files[%d] has equality deletes but the request has no schema_json", i)
			}
		}
		tasks[i] = task{deletes.DataFile{Path: f.Path, Size: f.Size, RecordCount: f.RecordCount, SpecID: f.SpecID, DataSeq: f.DataSeq}, dels}
	}
	targets := make([]*deletes.DataFile, len(tasks))
	for i := range tasks {
		targets[i] = &tasks[i].data
	}
	if err := s.checkIdentities(ctx, targets); err != nil {
		return nil, err
	}
	computer := s.deletes(req.GetAllowBareDeletionVectors())
	if !persist {
		ctx = deletes.ReadOnly(ctx)
	}
	out := make([]*pushdown_pb.DeletedPositions, len(tasks))
	g, gctx := safe.Group(ctx, "volume")
	g.SetLimit(8)
	for i, t := range tasks {
		g.Go(func() error {
			r, err := computer.Deleted(gctx, t.data, t.dels, schema, nm)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			r.Deleted.RunOptimize()
			if _, err := r.Deleted.WriteTo(&buf); err != nil {
				return perr.New(perr.Internal, "encode deleted positions of %s: %v", t.data.Path, err)
			}
			out[i] = &pushdown_pb.DeletedPositions{Path: t.data.Path, Positions: buf.Bytes(), Cardinality: int64(r.Deleted.GetCardinality()),
				DeleteFilesApplied: int64(r.Applied), CacheHits: int64(r.CacheHits), CacheMisses: int64(r.CacheMisses)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return &pushdown_pb.ComputeDeletesResponse{Files: out}, nil
}

// checkIdentities checks every data file exists and is the version the
// request describes (size, record count), and records its footer hash: the
// identity its persisted bitmaps live under.
func (s *Service) checkIdentities(ctx context.Context, files []*deletes.DataFile) error {
	g, gctx := safe.Group(ctx, "volume")
	g.SetLimit(16)
	for _, d := range files {
		g.Go(func() error {
			hash, err := s.footers.Identify(gctx, d.Path, d.Size, d.RecordCount)
			if errors.Is(err, fileread.ErrNotFound) {
				return perr.New(perr.PermissionDenied, "ComputeDeletes: data file %s does not exist: deletes are computed only for existing data files", perr.Quote(d.Path))
			}
			if err != nil {
				return fmt.Errorf("ComputeDeletes: %w", err)
			}
			d.FooterHash = hash
			return nil
		})
	}
	return g.Wait()
}

// storeKey seals the delete bitmaps the service persists: derived from the
// cluster's service key (nil without a guard: nothing persisted).
func (s *Service) storeKey() []byte {
	if s.Guard == nil {
		return nil
	}
	return s.Guard.Keys.Derive(deletes.StoreKeyPurpose)
}

// deletes returns the delete engine: strict, or accepting bare deletion
// vectors (a separate engine, so its cache never answers strict calls).
func (s *Service) deletes(allowBare bool) *deletes.Computer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if allowBare {
		if s.bareDeletes == nil {
			s.bareDeletes = deletes.NewComputer(s.open, s.store, deletes.Options{AllowBareDV: true, CacheBytes: s.DeleteCacheBytes, Tracker: s.Tracker, Stat: s.Reader.ETag,
				StoreKey: s.storeKey()})
		}
		return s.bareDeletes
	}
	if s.strictDeletes == nil {
		s.strictDeletes = deletes.NewComputer(s.open, s.store, deletes.Options{CacheBytes: s.DeleteCacheBytes, Tracker: s.Tracker, Stat: s.Reader.ETag,
			StoreKey: s.storeKey()})
	}
	return s.strictDeletes
}
