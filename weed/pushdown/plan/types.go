// Package plan turns a query (projection + bound predicate) over a set of
// Iceberg data files into one access plan per file, a FileAccess
// (access.go: per row group skip / scan / row selection, exact or
// candidate, and the deleted positions), which tiers can only narrow. One
// loop runs the tiers over each file, cheapest first (Tiers lists them in
// this order), timing each and counting what it pruned:
//
//	files ──a. manifest (narrowFilesByManifest) ────────▶ files skipped
//	        │ footers (FooterCache)   ┌ meanwhile, beside the data ──┐
//	        │                         │ deletes: DeleteSource        │
//	        │                         │ side indexes: SideIndexSource│
//	        ▼                         └──────────────┬───────────────┘
//	FileAccess (fresh: read everything) ◀────────────┘ evidence in fileContext
//	   │ for step in fileTiers: step.Narrow(ctx, fc, &access), timed, counted
//	   │   b. footer_stats  row group zone maps (and empty row groups)
//	   │   c. bloom_filter  = / IN on chunks with a filter or dictionary
//	   │   d. page_index    ColumnIndex → row selection
//	   │      (b–d memoized per predicate: memoizedVerdictsTier)
//	   │   e. side_index    positions that might match; exact answers
//	   │                    marked; a LIMIT's walk stops at its rows (g)
//	   │   f. deletes       emptied row groups skipped, long runs cut
//	   ▼
//	g. limit (narrowFilesByLimit): files past a LIMIT's rows skipped
//	   │
//	   ▼ buildResponse (response.go), once, from the FileAccess values
//	RowGroups, Pages (row selection × OffsetIndex of each projected
//	column), coalesced FileRanges, per-tier stats, cost
//
// FileAccess's methods refuse a widening (a skip undone, rows outside
// those planned), so a tier can cost speed, never rows. Every tier
// answers "might match" for anything it does not fully understand
// (missing, unreadable, malformed, unknown type or order).
package plan

import (
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Tier names, as reported in stats.
const (
	TierManifest  = "manifest"
	TierFooter    = "footer_stats"
	TierBloom     = "bloom_filter"
	TierPageIndex = "page_index"
)

// Tiers in planning order.
var Tiers = []string{TierManifest, TierFooter, TierBloom, TierPageIndex, TierSideIndex, TierDeletes, TierLimit}

// ManifestStats are a data file's column metrics from its manifest entry
// (maps keyed by field id; nil maps mean "not recorded").
type ManifestStats struct {
	Lower, Upper map[int][]byte
	Nulls        map[int]int64
	NaNs         map[int]int64
	Values       map[int]int64
	ColumnSizes  map[int]int64
}

// DataFile is one data file to plan.
type DataFile struct {
	Path        string // as written in the manifest (s3://bucket/key)
	Size        int64
	RecordCount int64
	SpecID      int32
	Partition   map[int]any // partition field id → value (nil value = null)
	DataSeq     int64
	Stats       ManifestStats
	// SplitOffsets are the row group starts recorded in the manifest (their
	// count is the row group count of a file pruned before its footer).
	SplitOffsets []int64
	// HasDeletes says delete files apply to this file (Request.Deletes
	// computes which positions).
	HasDeletes bool
}

// Table is what the planner needs to know about the table.
type Table struct {
	Schema      *iceberg.Schema // the schema the predicate is bound to
	Specs       map[int]iceberg.PartitionSpec
	NameMapping iceberg.NameMapping // for files written without field ids

	nameMappingKey string // digest of NameMapping, set by Plan
}

// Options tune planning.
type Options struct {
	// CoalesceGap merges byte ranges of one file closer than this.
	CoalesceGap int64
	// Concurrency bounds parallel footer loads.
	Concurrency int
	// Disable switches tiers off (tests, benchmarks, debugging).
	Disable map[string]bool
	// Cost model thresholds.
	MinScanBytes   int64   // below this (and ≤ MinFiles files) a plain read is cheaper
	MinFiles       int     // see MinScanBytes
	MaxSelectivity float64 // above this, with no column pruning, pushdown does not pay
	// LimitSlack are the positions of an exact side-index answer asked
	// beyond a LIMIT's rows: room for deleted rows among the first
	// matches before the whole answer must be asked (see computeSideIndex).
	LimitSlack int64
}

// DefaultOptions are the defaults of the -pushdown.* flags.
func DefaultOptions() Options {
	return Options{CoalesceGap: 64 << 10, Concurrency: 64, MinScanBytes: 10 << 20, MinFiles: 1, MaxSelectivity: 0.5, LimitSlack: 4096}
}

// Request is one planning request.
type Request struct {
	Table      Table
	Files      []DataFile
	Predicate  predicate.Expr // bound and normalized; nil = no predicate
	Projection []int          // field ids; empty = every column
	Options    Options
	// Deletes computes deleted positions of files with HasDeletes set; nil
	// when no file has deletes.
	Deletes DeleteSource
	// SideIndex answers the predicate from side indexes; nil = none.
	SideIndex SideIndexSource
	// SidePages serves page indexes of files written without one; nil =
	// none.
	SidePages SidePageIndexSource
	// RowIDs asks for row_refs: the matching rows of files the side
	// indexes answer exactly, at most MaxRowIDs of them (see rowrefs.go).
	RowIDs    bool
	MaxRowIDs int64
	// DecideEarly stops the plan after the manifest tier, planning no file
	// (PlanningSkipped), when the manifest-level cost model says pushdown
	// does not pay; otherwise every file is planned whatever the verdict.
	DecideEarly bool
	// Limit > 0: the reader wants any Limit matching rows (a LIMIT without
	// ORDER BY): the limit tier leaves out rows and files past the first
	// Limit rows certain to match (tier_limit.go). 0: every row.
	Limit int64
	// RowPositions: the client reads RowGroupRef.row_positions, so a row
	// group's many row ranges go as a bitmap of its rows.
	RowPositions bool

	verdictKey    uint64 // the predicate's verdict memo key (set by Plan)
	storeVerdicts bool   // an earlier plan had the same key: memoize
}

// FilePlan is one file planned: its access (FileAccess, what the tiers
// narrowed) and what the tiers learned on the way.
type FilePlan struct {
	FileAccess
	File    *DataFile
	Footer  *footer.Footer
	Columns *ColumnMap
	state   *fileState // the footer's per-file state (set with Columns)
	// SideIndex are the positions the side indexes say might match
	// (file-absolute); nil = they say nothing.
	SideIndex *roaring64.Bitmap
	// SideIndexExact says SideIndex holds exactly the rows matching the
	// whole predicate (deleted rows aside).
	SideIndexExact bool
	// SideIndexCut says SideIndex (exact) holds only the first positions
	// of the answer, asked for a LIMIT (see computeSideIndex).
	SideIndexCut bool
	// sideIndexSkipped: the source did not ask this file's indexes, the
	// files before it holding a LIMIT's rows (noted if it is planned).
	sideIndexSkipped bool
	// Why a tier could not be used on this file (for indexes_missing).
	Missing []string
	Used    []string
	output  *fileOutput // the file's response pieces (nil: pruned)
	// limitCertain are the rows the plan holds certain to match, counted
	// under a LIMIT (tier_limit.go).
	limitCertain int64
}

// Clock is swappable for tests.
var Clock = time.Now
