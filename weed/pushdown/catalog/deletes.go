package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// MaxFilesPerComputeDeletes bounds one ComputeDeletes call.
const MaxFilesPerComputeDeletes = 256

// deleteSource computes deleted positions for one plan: each data file's
// deletes go to the volume pushdown service beside the volume server that
// holds the file's data; when none is reachable the catalog computes them
// itself (same engine, reads over the network) and says so in the stats.
type deleteSource struct {
	s       *Service
	applied map[string][]deletes.File
	schema  *iceberg.Schema
	nm      iceberg.NameMapping
}

func (d *deleteSource) Deleted(ctx context.Context, files []*plan.DataFile) ([]*roaring64.Bitmap, plan.DeleteStats, error) {
	out := make([]*roaring64.Bitmap, len(files))
	var st plan.DeleteStats
	groups := map[string][]int{} // endpoint address ("" = local) → file indexes
	addrOf := make([]string, len(files))
	lg, lctx := safe.Group(ctx, "catalog")
	lg.SetLimit(32)
	for i, f := range files {
		lg.Go(func() error {
			addrOf[i] = d.s.endpointFor(lctx, f.Path)
			return nil
		})
	}
	_ = lg.Wait()
	for i, a := range addrOf {
		groups[a] = append(groups[a], i)
	}
	schemaJSON, err := encodeSchema(d.schema)
	if err != nil {
		return nil, st, err
	}
	var nmJSON []byte
	if len(d.nm) > 0 {
		if nmJSON, err = json.Marshal(d.nm); err != nil {
			return nil, st, perr.New(perr.Internal, "encode name mapping: %v", err)
		}
	}
	var mu sync.Mutex
	var degraded []string
	g, gctx := safe.Group(ctx, "catalog")
	g.SetLimit(16)
	addrs := make([]string, 0, len(groups))
	for a := range groups {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, addr := range addrs {
		idx := groups[addr]
		for lo := 0; lo < len(idx); lo += MaxFilesPerComputeDeletes {
			batch := idx[lo:min(len(idx), lo+MaxFilesPerComputeDeletes)]
			g.Go(func() error {
				var res []deletes.Result
				var err error
				if addr != "" {
					res, err = d.remote(gctx, addr, files, batch, schemaJSON, nmJSON)
					if err != nil && perr.KindOf(err) == perr.Unavailable {
						glog.Warningf("pushdown: volume pushdown service %s could not compute deletes (%v); computing them on the catalog", addr, err)
						mu.Lock()
						degraded = append(degraded, fmt.Sprintf("deletes computed on the catalog: volume pushdown service %s unavailable (%v)", addr, err))
						mu.Unlock()
						res, err = d.local(gctx, files, batch)
					}
				} else {
					res, err = d.local(gctx, files, batch)
				}
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				for k, i := range batch {
					out[i] = res[k].Deleted
					st.FilesApplied += int64(res[k].Applied)
					st.CacheHits += int64(res[k].CacheHits)
					st.CacheMisses += int64(res[k].CacheMisses)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, st, err
	}
	if _, ok := groups[""]; ok {
		degraded = append(degraded, fmt.Sprintf("deletes of %d files computed on the catalog: no healthy volume pushdown service beside their data", len(groups[""])))
	}
	sort.Strings(degraded)
	st.Degraded = degraded
	return out, st, nil
}

func (d *deleteSource) local(ctx context.Context, files []*plan.DataFile, batch []int) ([]deletes.Result, error) {
	res := make([]deletes.Result, len(batch))
	g, gctx := safe.Group(ctx, "catalog")
	g.SetLimit(8)
	for k, i := range batch {
		g.Go(func() error {
			f := files[i]
			target := deleteTarget(f)
			// The data file's identity (its footer, loaded once with the
			// planner's own load) names where its bitmaps persist.
			hash, err := d.s.Footers.Identify(gctx, f.Path, f.Size, f.RecordCount)
			if err != nil {
				return err
			}
			target.FooterHash = hash
			r, err := d.s.Deletes.Deleted(gctx, target, d.applied[f.Path], d.schema, d.nm)
			if err != nil {
				return err
			}
			res[k] = r
			return nil
		})
	}
	return res, g.Wait()
}

func (d *deleteSource) remote(ctx context.Context, addr string, files []*plan.DataFile, batch []int, schemaJSON, nmJSON []byte) ([]deletes.Result, error) {
	req := &pushdown_pb.ComputeDeletesRequest{SchemaJson: schemaJSON, NameMappingJson: nmJSON, AllowBareDeletionVectors: d.s.Config.AllowBareDV}
	var named []string
	for _, i := range batch {
		desc, err := descriptor.FromDataFile(files[i], d.applied[files[i].Path], nil)
		if err != nil {
			return nil, perr.New(perr.Internal, "describe %s: %v", files[i].Path, err)
		}
		req.DataFiles = append(req.DataFiles, desc)
		named = append(named, files[i].Path)
		for _, x := range d.applied[files[i].Path] {
			named = append(named, x.Path)
		}
	}
	ctx, client, err := d.s.volumeClient(ctx, addr, named, true)
	if err != nil {
		return nil, err
	}
	resp, err := client.ComputeDeletes(ctx, req)
	if err != nil {
		return nil, grpcutil.FromStatus("volume pushdown service "+addr, err)
	}
	if len(resp.GetFiles()) != len(batch) {
		return nil, perr.New(perr.Internal, "volume pushdown service %s answered %d files for %d", addr, len(resp.GetFiles()), len(batch))
	}
	res := make([]deletes.Result, len(batch))
	for k, f := range resp.GetFiles() {
		if f.GetPath() != files[batch[k]].Path {
			return nil, perr.New(perr.Internal, "volume pushdown service %s answered %s for %s", addr, f.GetPath(), files[batch[k]].Path)
		}
		bm, err := rowbits.Decode(f.GetPositions())
		if err != nil {
			return nil, perr.New(perr.Internal, "volume pushdown service %s: deleted positions of %s do not decode: %v", addr, f.GetPath(), err)
		}
		if bm.GetCardinality() != uint64(f.GetCardinality()) {
			return nil, perr.New(perr.Internal, "volume pushdown service %s: %s: %d deleted positions decoded, %d announced", addr, f.GetPath(), bm.GetCardinality(), f.GetCardinality())
		}
		res[k] = deletes.Result{Deleted: bm, Applied: int(f.GetDeleteFilesApplied()), CacheHits: int(f.GetCacheHits()), CacheMisses: int(f.GetCacheMisses())}
	}
	return res, nil
}

func deleteTarget(f *plan.DataFile) deletes.DataFile {
	return deletes.DataFile{Path: f.Path, Size: f.Size, RecordCount: f.RecordCount, SpecID: f.SpecID, Partition: f.Partition, DataSeq: f.DataSeq}
}
