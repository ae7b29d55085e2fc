// Package sideindex builds and evaluates side indexes of single Parquet
// data files: payloads written next to a data file (never inside it) that
// answer predicate leaves with file-absolute row positions. It is a pure
// library: no cluster, no RPCs; the volume service builds and evaluates
// through Kind, the catalog keeps the registry.
//
//	data file (footer + bytes) ──Kind.Build(Input)──▶ payload bytes
//	                                                 (Parquet or Puffin, with a Header
//	                                                  and a SHA-256 checksum)
//	payload bytes ──Commit.Verify (size, SHA-256 the registry recorded at commit)
//	              ──Kind.Open(want Header)──▶ Index   (any mismatch, bad checksum or
//	                                                   unknown version: an error, and
//	                                                   the caller treats the index as absent)
//	(OpenCommitted does both: headers and checksums only catch accidents — Restamp
//	forges them — the committed hash is what makes a payload trusted)
//	Index.Eval(bound leaf) ──▶ Answer{Unknown | Positions (never misses a row), Exact}
//
// Kinds (one builder and one evaluator file each, <kind>_build.go and
// <kind>_eval.go):
//
//	btree       Parquet of (key, pos) sorted by key: exact positions for every leaf
//	bloom       Puffin, one split-block bloom filter per row group, hashed as Parquet
//	            hashes the column's physical type: candidate row groups for = and IN
//	page_index  Puffin, per row group the Thrift ColumnIndex and OffsetIndex a writer
//	            would have written: candidate pages, and footer.RowGroupIndex for the
//	            planner's page tier
//	bitmap      postings (Parquet): per distinct value (NULL and NaN classes too) a
//	            roaring bitmap of its rows; exact for every leaf (max_distinct)
//	ngram       postings of case-folded trigrams: candidates for LIKE, ILIKE and
//	            STARTS_WITH (the residual rechecks them)
//	label_list  postings of a list column's elements: exact ARRAY_CONTAINS and its
//	            negation
//	ivf, ivf_pq Arrow IPC of IVF lists (ivf_pq: PQ codes, codebooks) over a vector
//	            column: filtered nearest-neighbour search (weed/pushdown/vector)
package sideindex

import (
	"context"
	"sort"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// Kind is one side-index kind: one builder and one evaluator.
type Kind interface {
	// Name is the kind's name and the payload file's <kind> prefix
	// ("btree", "bloom", "page_index").
	Name() string
	// Supports reports whether the kind can index a column of type t.
	Supports(t iceberg.Type) bool
	// CheckParams refuses build parameters the kind does not know or
	// whose value is out of range, naming the parameter; Build checks
	// them too, and `index create -param` before recording the wish.
	CheckParams(p map[string]string) error
	// Build reads the indexed column of the data file and returns the
	// payload: a file standard tools can open.
	Build(ctx context.Context, in Input) ([]byte, error)
	// Open verifies the payload's header against want and its checksum,
	// and parses it. Any mismatch is an error.
	Open(ctx context.Context, payload []byte, want Header) (Index, error)
}

// Input is what a build reads: one column of one data file.
type Input struct {
	File     string         // data file location as in the manifest (s3://…)
	Identity string         // footer.IdentityDir(size, rows, footer.Hash) of the data file
	Footer   *footer.Footer // its parsed footer
	Source   footer.Source  // its bytes
	FieldID  int            // Iceberg field id indexed
	// Type is the field's type in the table schema; it may be a promotion
	// of the file's (int→long, float→double).
	Type   iceberg.Type
	Column int // leaf column index of the field in the file's Parquet schema
	Params map[string]string
}

// Header is what a payload records about itself; Open compares every
// field with the caller's expectation.
type Header struct {
	FormatVersion int               `json:"format-version"` // 0 in a want: the current FormatVersion
	Kind          string            `json:"kind"`
	FieldID       int               `json:"field-id"`
	IcebergType   string            `json:"iceberg-type"` // iceberg.Type.String()
	DataFile      string            `json:"data-file"`
	Identity      string            `json:"identity"`
	Params        map[string]string `json:"params,omitempty"`
	Rows          int64             `json:"rows"` // rows of the data file
}

// Index is an opened payload.
type Index interface {
	// Eval answers one bound leaf over the whole file.
	Eval(ctx context.Context, leaf *predicate.Leaf) (Answer, error)
	// Bytes is the memory the index holds (for a byte-bounded cache).
	Bytes() int64
}

// PageIndexSource is implemented by indexes that stand in for a file's
// native page index (the page_index kind).
type PageIndexSource interface {
	// RowGroupIndex is what footer.Footer.PageIndex returns for a file
	// carrying a native page index, for the indexed column only (the other
	// columns' entries are empty).
	RowGroupIndex(rg int) (*footer.RowGroupIndex, error)
	// RowGroups is the number of row groups the index covers.
	RowGroups() int
	// SidePageIndex returns row group rg's OffsetIndex and ColumnIndex
	// bytes as a writer would have stored them in the file (Column nil
	// when the group has none), for a planner to parse as it parses a
	// native page index, and a list column's pages continuing a row.
	SidePageIndex(rg int) (footer.SidePageIndex, error)
}

// Answer is an index's answer to one leaf.
type Answer struct {
	// Unknown: the index cannot answer this leaf (identity under AND,
	// absorbing under OR). Positions is nil then.
	Unknown bool
	// Positions are file-absolute row positions that might match; a
	// matching row is never missing. A fresh bitmap: the caller's own.
	Positions *roaring64.Bitmap
	// Exact: every position in Positions matches (no recheck needed).
	Exact bool
}

// unknown is the answer of an index that cannot decide a leaf.
var unknown = Answer{Unknown: true}

var kinds = map[string]Kind{}

func register(k Kind) { kinds[k.Name()] = k }

// Kinds lists every kind, by name.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Lookup returns the kind named name.
func Lookup(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}
