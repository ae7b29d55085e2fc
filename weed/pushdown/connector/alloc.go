package connector

import (
	"github.com/lakeweed/seaweedfs/weed/pushdown/arrowmem"
	"github.com/lakeweed/seaweedfs/weed/pushdown/colfilter"
)

// decodeMem is the allocator of everything the connector decodes (the
// pooled one: buffers go back to their size class on release).
var decodeMem = arrowmem.Pooled

// Scratch slices of the filter and project stages: colfilter's pools,
// shared with the filter (its selections and positions come from them).
var (
	rowScratch = &colfilter.RowScratch
	posScratch = &colfilter.PosScratch
)
