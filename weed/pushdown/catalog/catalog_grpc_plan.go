package catalog

import (
	"context"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Plan answers what a connector must read for a query.
func (s *Service) Plan(ctx context.Context, req *pushdown_pb.ParquetPushdownRequest) (*pushdown_pb.ParquetPushdownResponse, error) {
	return nil, perr.New(perr.Unimplemented, "Plan is not built yet")
}
