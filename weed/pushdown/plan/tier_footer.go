package plan

import (
	"bytes"
	"context"
	"github.com/apache/iceberg-go"
	"sync"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/prune"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// fileContext is what the footer-based tiers share for one file. A
// planning worker reuses one for each of its files (reset).
type fileContext struct {
	table   *Table
	footer  *footer.Footer
	md      *metadata.FileMetaData
	columns *ColumnMap
	state   *fileState
	// leaves by field id (nil leaf state: the field has no leaf column);
	// a predicate names few fields, so a slice beats a map
	leaves  []fieldLeaf
	missing noteSet
	used    noteSet
	// volatile: the file's verdicts read something besides the file and
	// the predicate (the table's defaults or partition specs) or met a
	// failure the next plan retries; they are not memoized
	volatile bool
	// hashes memoizes bloom hashes of predicate literals (the planning
	// worker's; nil: computed each time)
	hashes *bloomHashMemo
	// lookups batches the worker's bloom filter lookups (nil: each counted
	// on the cache)
	lookups *footer.Lookups
	// the worker's: note strings made once per plan, and storage the
	// files' row group plans and note lists are cut from
	strs      map[note]string
	allRows   RowSet // SelectRowsByPageIndex's scratch
	rowGroups slab[RowGroupAccess]
	strSlab   slab[string]
	planned   slab[pushdown_pb.PlannedFile]
	// the notes of the last verdicts the worker memoized (see notesOf)
	lastNotes *verdictNotes
	// the file being planned: its request and plan (the tiers' evidence
	// besides the footer), predicate, footer cache, memoized verdicts of
	// its footer tiers (nil: evaluated), and the tier loop's scratch:
	// skippedIn[rg] the step that skipped row group rg (-1: none)
	req       *Request
	plan      *FilePlan
	e         predicate.Expr
	cache     *footer.Cache
	verdicts  *tierVerdicts
	skippedIn []int16
}

// off says tier is switched off for this plan.
func (fc *fileContext) off(tier string) bool {
	return fc.req != nil && fc.req.Options.Disable[tier]
}

// footerStatsTier skips the row groups whose footer zone maps say cannot
// match, and the row groups of no rows.
type footerStatsTier struct{}

func (footerStatsTier) Narrow(_ context.Context, fc *fileContext, fa *FileAccess) error {
	stats := !fc.off(TierFooter)
	for rg := range fa.rowGroups {
		if fc.footer.RowGroupRows(rg) == 0 || stats && fc.PruneRowGroupByStats(rg, fc.e) == prune.CannotMatch {
			fa.skipRowGroup(rg, TierFooter)
		}
	}
	return nil
}

// bloomTier skips the row groups whose bloom filters (or dictionaries)
// hold none of an = or IN leaf's values.
type bloomTier struct{}

func (bloomTier) Narrow(ctx context.Context, fc *fileContext, fa *FileAccess) error {
	if fc.off(TierBloom) {
		return nil
	}
	return fa.eachRowGroupLeft(func(rg int) error {
		v, err := fc.PruneRowGroupByBloom(ctx, fc.cache, rg, fc.e)
		if v == prune.CannotMatch && err == nil {
			fa.skipRowGroup(rg, TierBloom)
		}
		return err
	})
}

// noteStrings appends the strings of notes to dst (from the worker's
// storage when dst is empty).
func (fc *fileContext) noteStrings(dst []string, notes noteSet) []string {
	if len(notes) == 0 {
		return dst
	}
	if dst == nil {
		dst = fc.strSlab.take(len(notes))[:0]
	}
	for _, n := range notes {
		str, ok := fc.strs[n]
		if !ok {
			if fc.strs == nil {
				fc.strs = map[note]string{}
			}
			str = n.String()
			fc.strs[n] = str
		}
		dst = append(dst, str)
	}
	return dst
}

// slab hands out short slices cut from larger allocations, so a plan of
// many files allocates their small slices a few times instead of once per
// file. A slice handed out has no spare capacity: appending to it copies.
// chunk is the size of its allocations (0: 512).
type slab[T any] struct {
	buf   []T
	chunk int
}

func (s *slab[T]) take(n int) []T {
	if n > cap(s.buf)-len(s.buf) {
		chunk := s.chunk
		if chunk <= 0 {
			chunk = 512
		}
		s.buf = make([]T, 0, max(n, chunk))
	}
	i := len(s.buf)
	s.buf = s.buf[:i+n]
	return s.buf[i : i+n : i+n]
}

type fieldLeaf struct {
	id int
	ls *leafState
}

// bloomHashMemo remembers the bloom filter hash of a predicate literal as
// a column of a given hash class (physical and logical type, see
// hashClassOf) stores it: the files of a table mostly share their column
// types, so one worker computes each hash once per plan instead of once
// per file. Not safe for concurrent use.
type bloomHashMemo struct {
	entries []bloomHashEntry
}

type bloomHashEntry struct {
	leaf   *predicate.Leaf
	lit    int
	class  int
	hasher metadata.Hasher
	h      uint64
	ok     bool
}

// hash is value.BloomHash(ls's column, l.Type, l.Lits[i], hasher),
// memoized.
func (m *bloomHashMemo) hash(ls *leafState, l *predicate.Leaf, i int, hasher metadata.Hasher) (uint64, bool) {
	if m == nil || ls.class < 0 {
		return value.BloomHash(ls.descr, l.Type, l.Lits[i], hasher)
	}
	for _, e := range m.entries {
		if e.leaf == l && e.lit == i && e.class == ls.class && e.hasher == hasher {
			return e.h, e.ok
		}
	}
	h, ok := value.BloomHash(ls.descr, l.Type, l.Lits[i], hasher)
	if len(m.entries) < 64 {
		m.entries = append(m.entries, bloomHashEntry{l, i, ls.class, hasher, h, ok})
	}
	return h, ok
}

// hashClasses numbers the distinct (physical type, type length, logical
// type) of the columns planned, so that a bloom hash memoized for one
// file's column is found for another file's column of the same class by
// comparing numbers, not logical types.
var hashClasses struct {
	mu   sync.Mutex
	list []hashClass
}

type hashClass struct {
	phys   parquet.Type
	length int
	lt     schema.LogicalType
}

// maxHashClasses bounds hashClasses; columns of further classes are not
// memoized (-1).
const maxHashClasses = 1024

// hashClassOf is the hash class of col (-1: none).
func hashClassOf(col *schema.Column) int {
	c := hashClass{col.PhysicalType(), col.TypeLength(), col.LogicalType()}
	hashClasses.mu.Lock()
	defer hashClasses.mu.Unlock()
	for i, x := range hashClasses.list {
		if x.phys == c.phys && x.length == c.length && sameLogicalType(x.lt, c.lt) {
			return i
		}
	}
	if len(hashClasses.list) >= maxHashClasses {
		return -1
	}
	hashClasses.list = append(hashClasses.list, c)
	return len(hashClasses.list) - 1
}

func sameLogicalType(a, b schema.LogicalType) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equals(b)
}

// noteSet is a small set of notes (a file gathers a handful).
type noteSet []note

func (s *noteSet) add(n note) {
	for _, x := range *s {
		if x == n {
			return
		}
	}
	*s = append(*s, n)
}

// note records that an index of a field was used or missing (and why).
type note struct {
	index, field, detail string
}

func (n note) String() string {
	s := n.index
	if n.field != "" {
		s += "(" + n.field + ")"
	}
	if n.detail != "" {
		s += ": " + n.detail
	}
	return s
}

func newFileContext(t *Table, f *footer.Footer, s *fileState) *fileContext {
	fc := &fileContext{}
	fc.reset(t, f, s)
	return fc
}

// reset points fc at another file, keeping its slices' storage.
func (fc *fileContext) reset(t *Table, f *footer.Footer, s *fileState) {
	fc.table, fc.footer, fc.md, fc.columns, fc.state = t, f, f.Meta, s.columns, s
	fc.leaves, fc.missing, fc.used = fc.leaves[:0], fc.missing[:0], fc.used[:0]
	fc.volatile = false
}

// leaf returns the leaf column state of a predicate field (ok false: the
// field has no leaf column in the file).
func (fc *fileContext) leaf(l *predicate.Leaf) (*leafState, bool) {
	for _, fl := range fc.leaves {
		if fl.id == l.FieldID && fl.ls != nil && fl.ls.typ == l.Type {
			return fl.ls, true
		}
	}
	ls, ok := fc.state.leaf(fc.footer, l.FieldID, l.Type)
	if !ok {
		return nil, false
	}
	if ls.err != nil {
		fc.missing.add(note{"statistics", l.Name, ls.err.Error()})
	}
	fc.leaves = append(fc.leaves, fieldLeaf{l.FieldID, ls})
	return ls, true
}

// decoder returns the statistics decoder of a predicate field, or nil.
func (fc *fileContext) decoder(l *predicate.Leaf) (*value.StatDecoder, int, bool) {
	ls, ok := fc.leaf(l)
	if !ok {
		return nil, -1, false
	}
	return ls.d, ls.col, true
}

// absentField reports whether a predicate field is not stored in the file:
// then every row reads NULL for it (or its initial default, which the
// statistics cannot describe).
func (fc *fileContext) absentStats(l *predicate.Leaf) (prune.ColumnStats, bool) {
	if _, ok := fc.leaf(l); ok { // stored as a leaf column
		return prune.ColumnStats{}, false
	}
	fc.volatile = true // what follows reads the table
	if !fc.columns.Mapped || fc.columns.ByName {
		// Only field ids prove a column absent; a name that did not resolve
		// may still be there under another spelling.
		if _, ok := fc.columns.Leaf(l.FieldID); ok {
			return prune.ColumnStats{}, false
		}
		return prune.ColumnStats{}, true
	}
	if _, ok := fc.columns.Leaf(l.FieldID); ok {
		return prune.ColumnStats{}, false
	}
	if len(fc.columns.Leaves(l.FieldID)) > 0 {
		// Present but repeated or nested unexpectedly: unknown.
		return prune.ColumnStats{}, true
	}
	if field, ok := fc.table.Schema.FindFieldByID(l.FieldID); ok && field.InitialDefault != nil {
		return prune.ColumnStats{}, true
	}
	if fc.table.identitySource(l.FieldID) {
		// Rows read the file's identity-partition value (the manifest tier
		// decided on it), not NULL.
		return prune.ColumnStats{}, true
	}
	return prune.AllNull(), true
}

// PruneRowGroupByStats decides row group rg from the footer's zone maps.
func (fc *fileContext) PruneRowGroupByStats(rg int, e predicate.Expr) prune.Verdict {
	return prune.EvaluateWith(e, func(l *predicate.Leaf) prune.Verdict {
		if s, absent := fc.absentStats(l); absent {
			return prune.EvaluateLeaf(l, s)
		}
		ls, _ := fc.leaf(l)
		s := &ls.chunks[rg]
		if s.HasBounds {
			fc.used.add(note{"footer_stats", l.Name, ""})
		}
		return prune.EvaluateLeaf(l, *s)
	})
}

// chunkStats turns a chunk's footer statistics into ColumnStats; anything
// unusable is left unknown.
func chunkStats(ch footer.Chunk, d *value.StatDecoder) (s prune.ColumnStats) {
	st := ch.Stats
	if st == nil {
		return s
	}
	if st.HasNullCount && st.NullCount >= 0 && ch.NumValues >= st.NullCount {
		s.NullsKnown, s.HasNulls = true, st.NullCount > 0
		s.NonNullKnown, s.HasNonNull = true, ch.NumValues-st.NullCount > 0
	}
	if d == nil || !st.HasMinMax {
		return s
	}
	if !st.TypeDefinedOrder && !d.DeprecatedOK && !bytes.Equal(st.Min, st.Max) {
		// Deprecated min/max of a column that does not sort as signed.
		return s
	}
	lo, ok1 := d.Decode(st.Min, value.Lower)
	hi, ok2 := d.Decode(st.Max, value.Upper)
	if !ok1 || !ok2 || lo.IsNaN() || hi.IsNaN() {
		return s
	}
	if c, ok := value.Compare(lo, hi); !ok || c > 0 {
		return s
	}
	s.HasBounds, s.Lower, s.Upper = true, lo, hi
	return s
}

// PruneRowGroupByBloom decides row group rg from bloom filters of = and IN
// leaves, or from the dictionary page of a chunk without one whose data
// pages are all dictionary-encoded. A chunk without either, or one that
// cannot be read, says "maybe".
func (fc *fileContext) PruneRowGroupByBloom(ctx context.Context, cache *footer.Cache, rg int, e predicate.Expr) (prune.Verdict, error) {
	var ctxErr error
	v := prune.EvaluateWith(e, func(l *predicate.Leaf) prune.Verdict {
		if l.Negated || (l.Op != predicate.OpEq && l.Op != predicate.OpIn) || ctxErr != nil {
			return prune.MightMatch
		}
		ls, ok := fc.leaf(l)
		if !ok {
			return prune.MightMatch
		}
		col := ls.col
		ch := &fc.footer.Chunks[rg][col]
		if ch.BloomOffset <= 0 && !ch.DictionaryOnly {
			fc.missing.add(note{"bloom_filter", l.Name, ""})
			return prune.MightMatch
		}
		var bf footer.BloomFilter
		var err error
		if fc.lookups != nil {
			bf, err = fc.lookups.BloomFilter(ctx, fc.footer, rg, col)
		} else {
			bf, err = cache.BloomFilter(ctx, fc.footer, rg, col)
		}
		if err != nil {
			if ctx.Err() != nil {
				ctxErr = ctx.Err()
			}
			fc.volatile = true
			fc.missing.add(note{"bloom_filter", l.Name, "unreadable"})
			return prune.MightMatch
		}
		if bf == nil {
			fc.missing.add(note{"bloom_filter", l.Name, ""})
			return prune.MightMatch
		}
		if footer.IsDictionarySet(bf) {
			// no bloom filter, but every value of the chunk is in its
			// dictionary page: the set of their hashes, exact
			fc.used.add(note{"dictionary", l.Name, ""})
		} else {
			fc.used.add(note{"bloom_filter", l.Name, ""})
		}
		hasher := bf.Hasher()
		for i := range l.Lits {
			h, ok := fc.hashes.hash(ls, l, i, hasher)
			if !ok || bf.CheckHash(h) {
				return prune.MightMatch
			}
		}
		return prune.CannotMatch
	})
	return v, ctxErr
}

// identitySource reports whether some partition spec of the table
// partitions by identity on field id.
func (t *Table) identitySource(id int) bool {
	for _, spec := range t.Specs {
		for _, pf := range spec.FieldsBySourceID(id) {
			if _, ok := pf.Transform.(iceberg.IdentityTransform); ok {
				return true
			}
		}
	}
	return false
}
