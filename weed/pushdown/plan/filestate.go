package plan

import (
	"crypto/sha256"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/prune"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// fileState is what every plan of a file derives from its footer and
// finds the same each time, kept decoded in one place so a warm plan
// reaches it through one pointer instead of re-deriving or looking up
// memos per tier:
//
//	Footer.Attachment ──▶ fileState (per name mapping)
//	                        ├ column map, column refs
//	                        ├ footer tiers' verdicts of recent predicates
//	                        └ per predicate column (leaf, Iceberg type):
//	                            decoder, chunk stats of every row group,
//	                            page stats per row group (on first use)
//
// It hangs off the cached footer, so it lives and dies with it: a file
// rewritten (another size, or a reload after a freshness change) gets a
// new footer and starts with no state. Nothing in it is modified after it
// is published; columns are added copy-on-write.
type fileState struct {
	nmKey   string
	columns *ColumnMap
	mapped  bool // columns.Mapped, read without reaching the column map
	refs    []*pushdown_pb.ColumnRef
	leaves  atomic.Pointer[[]*leafState]
	// output and skipped are the last memoized outputs of the file read
	// whole and of the file pruned whole (see fileOutputOf)
	output, skipped atomic.Pointer[outputMemo]
	// verdicts are the footer tiers' outputs of the last few predicates
	// (see verdicts.go)
	verdicts fileVerdicts
}

// leafState is one predicate field's leaf column of a file read as one
// Iceberg type.
type leafState struct {
	field int // the field id
	col   int
	typ   iceberg.Type
	descr *schema.Column
	class int                // hashClassOf(descr)
	d     *value.StatDecoder // nil: statistics of the column not usable as typ
	err   error              // why d is nil
	// chunks[rg] are the footer statistics of row group rg
	chunks []prune.ColumnStats
	// pages[rg] are the page statistics of row group rg (nil: not built)
	pages []atomic.Pointer[pageStats]
}

// pageStats are a chunk's page statistics (stats nil: the column index
// does not describe the offset index's pages).
type pageStats struct{ stats []prune.ColumnStats }

// outputMemo is a file's output memoized for one projection and gap.
type outputMemo struct {
	ids  string
	gap  int64
	side int32
	out  *fileOutput
}

// fileStateOf returns the state of footer f under a name mapping (nmKey
// its digest): the one attached to the footer when it is of that mapping,
// else one memoized per mapping.
func fileStateOf(f *footer.Footer, nm iceberg.NameMapping, nmKey string) *fileState {
	build := func() any { return newFileState(f, nm, nmKey) }
	s := f.Attachment(build).(*fileState)
	if s.nmKey == nmKey {
		return s
	}
	type key struct{ nameMapping string }
	return f.SmallMemo(key{nmKey}, build).(*fileState)
}

// ColumnMapOf is the column map of f under the name mapping nm whose
// content nmJSON is (its JSON; empty: none), built once per footer and
// name mapping and kept on the footer's file state, so a service
// answering many calls over the same files does not rebuild it per call.
func ColumnMapOf(f *footer.Footer, nm iceberg.NameMapping, nmJSON []byte) *ColumnMap {
	key := ""
	if len(nm) > 0 {
		sum := sha256.Sum256(nmJSON)
		key = string(sum[:])
	}
	return fileStateOf(f, nm, key).columns
}

func newFileState(f *footer.Footer, nm iceberg.NameMapping, nmKey string) *fileState {
	cm := NewColumnMap(f.Meta.Schema, nm)
	refs := make([]*pushdown_pb.ColumnRef, f.Meta.Schema.NumColumns())
	for col := range refs {
		refs[col] = &pushdown_pb.ColumnRef{FieldId: int32(cm.FieldOf(col)), Path: f.Meta.Schema.Column(col).Path()}
	}
	return &fileState{nmKey: nmKey, columns: cm, mapped: cm.Mapped, refs: refs}
}

// leaf returns the state of field id's leaf column read as typ (ok false:
// the field has no leaf column in the file), building it on first use.
func (s *fileState) leaf(f *footer.Footer, id int, typ iceberg.Type) (*leafState, bool) {
	if cur := s.leaves.Load(); cur != nil {
		for _, ls := range *cur {
			if ls.field == id && ls.typ == typ {
				return ls, true
			}
		}
	}
	col, ok := s.columns.Leaf(id)
	if !ok {
		return nil, false
	}
	for {
		cur := s.leaves.Load()
		if cur != nil {
			for _, ls := range *cur {
				if ls.field == id && ls.typ == typ {
					return ls, true
				}
			}
		}
		ls := newLeafState(f, id, col, typ)
		var next []*leafState
		if cur != nil {
			next = append(next, *cur...)
		}
		next = append(next, ls)
		if s.leaves.CompareAndSwap(cur, &next) {
			return ls, true
		}
	}
}

func newLeafState(f *footer.Footer, id, col int, typ iceberg.Type) *leafState {
	descr := f.Meta.Schema.Column(col)
	d, err := value.NewStatDecoder(descr, typ)
	ls := &leafState{field: id, col: col, typ: typ, descr: descr, class: hashClassOf(descr), d: d, err: err,
		chunks: make([]prune.ColumnStats, len(f.Chunks)), pages: make([]atomic.Pointer[pageStats], len(f.Chunks))}
	for rg := range f.Chunks {
		ls.chunks[rg] = chunkStats(f.Chunks[rg][col], d)
	}
	return ls
}

// pageStatsOf returns the page statistics of row group rg, building them
// from cpi on first use.
func (ls *leafState) pageStatsOf(rg int, cpi *footer.ColumnPageIndex) []prune.ColumnStats {
	slot := &ls.pages[rg]
	if ps := slot.Load(); ps != nil {
		return ps.stats
	}
	ps := &pageStats{stats: pageColumnStats(*cpi, ls.d)}
	if slot.CompareAndSwap(nil, ps) {
		return ps.stats
	}
	return slot.Load().stats
}
