package catalog

import (
	"context"
	"fmt"
	"sync"

	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// pageIndexKind is the side-index kind that stands in for a file's page
// index.
const pageIndexKind = "page_index"

// PageIndexFields are the fields the table wants a page_index on.
func (src *sideIndexSource) PageIndexFields() []int {
	out := make([]int, 0, len(src.pageSpecs))
	for id := range src.pageSpecs {
		out = append(out, id)
	}
	return out
}

// PageIndexes asks the volume pushdown services holding committed
// page_index payloads for their row groups' Thrift page indexes: one
// ReadPageIndexes call per endpoint (batched), never a payload read here.
// What cannot be served is named per file; the plan then reads those
// columns by row group.
func (src *sideIndexSource) PageIndexes(ctx context.Context, files []*plan.DataFile, fields [][]int) ([]map[int][]footer.SidePageIndex, [][]string, error) {
	out := make([]map[int][]footer.SidePageIndex, len(files))
	missing := make([][]string, len(files))
	for i := range out {
		out[i] = map[int][]footer.SidePageIndex{}
	}
	byEndpoint, err := src.locate(ctx, files, func(i int) []indexing.Spec {
		var specs []indexing.Spec
		for _, id := range fields[i] {
			if sp, ok := src.pageSpecs[id]; ok {
				specs = append(specs, sp)
			}
		}
		return specs
	}, missing)
	if err != nil {
		return nil, nil, err
	}
	if len(byEndpoint) == 0 {
		return out, missing, nil
	}
	schemaJSON, err := encodeSchema(src.schema)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	err = forEachBatch(ctx, byEndpoint, func(gctx context.Context, addr string, batch []probeRef) error {
		resp, err := src.readPageIndexes(gctx, addr, files, batch, schemaJSON)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if perr.IsContext(err) {
				return err
			}
			glog.Warningf("pushdown: volume pushdown service %s could not serve side page indexes (%v); planning without them", addr, err)
			for _, p := range batch {
				missing[p.file] = append(missing[p.file], fmt.Sprintf("%s: volume pushdown service %s unavailable", specName(src.schema, p.spec), addr))
			}
			return nil
		}
		for _, pe := range resp.GetErrors() {
			if pe.GetProbe() < 0 || int(pe.GetProbe()) >= len(batch) {
				continue
			}
			p := batch[pe.GetProbe()]
			missing[p.file] = append(missing[p.file], fmt.Sprintf("%s: %s (%s)", specName(src.schema, p.spec), pe.GetState(), pe.GetReason()))
			src.s.markEntry(src.tableUUID, p.entry, pe.GetState(), pe.GetReason())
		}
		for _, si := range resp.GetIndexes() {
			if si.GetProbe() < 0 || int(si.GetProbe()) >= len(batch) {
				continue
			}
			p := batch[si.GetProbe()]
			groups := make([]footer.SidePageIndex, len(si.GetRowGroups()))
			for rg, g := range si.GetRowGroups() {
				groups[rg] = footer.SidePageIndex{Offset: g.GetOffsetIndex(), Column: g.GetColumnIndex(), Continued: g.GetContinuedPages()}
			}
			out[p.file][p.spec.FieldID] = groups
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, missing, nil
}

func (src *sideIndexSource) readPageIndexes(ctx context.Context, addr string, files []*plan.DataFile, batch []probeRef, schemaJSON []byte) (*pushdown_pb.ReadPageIndexesResponse, error) {
	req := &pushdown_pb.ReadPageIndexesRequest{SchemaJson: schemaJSON}
	var named []string
	for _, p := range batch {
		f := files[p.file]
		req.Probes = append(req.Probes, probeOf(f, p, pageIndexKind))
		named = append(named, f.Path)
	}
	ctx, client, err := src.s.volumeClient(ctx, addr, named, false)
	if err != nil {
		return nil, err
	}
	resp, err := client.ReadPageIndexes(ctx, req)
	if err != nil {
		return nil, grpcutil.FromStatus("volume pushdown service "+addr, err)
	}
	return resp, nil
}
