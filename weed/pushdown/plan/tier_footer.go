package plan

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/prune"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// fileContext is what the footer-based tiers share for one file.
type fileContext struct {
	table   *Table
	footer  *footer.Footer
	md      *metadata.FileMetaData
	columns *ColumnMap
	// decoders by field id (nil entry: statistics of that field not usable)
	decoders map[int]*value.StatDecoder
	missing  map[string]bool
	used     map[string]bool
}

func newFileContext(t *Table, f *footer.Footer, cm *ColumnMap) *fileContext {
	return &fileContext{table: t, footer: f, md: f.Meta, columns: cm, decoders: map[int]*value.StatDecoder{},
		missing: map[string]bool{}, used: map[string]bool{}}
}

// decoder returns the statistics decoder of a predicate field, or nil.
func (fc *fileContext) decoder(l *predicate.Leaf) (*value.StatDecoder, int, bool) {
	col, ok := fc.columns.Leaf(l.FieldID)
	if !ok {
		return nil, -1, false
	}
	if d, seen := fc.decoders[l.FieldID]; seen {
		return d, col, true
	}
	d, err := value.NewStatDecoder(fc.md.Schema.Column(col), l.Type)
	if err != nil {
		fc.missing[fmt.Sprintf("statistics(%s): %v", l.Name, err)] = true
		d = nil
	}
	fc.decoders[l.FieldID] = d
	return d, col, true
}

// absentField reports whether a predicate field is not stored in the file:
// then every row reads NULL for it (or its initial default, which the
// statistics cannot describe).
func (fc *fileContext) absentStats(l *predicate.Leaf) (prune.ColumnStats, bool) {
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
	return prune.AllNull(), true
}

// PruneRowGroupByStats decides row group rg from the footer's zone maps.
func (fc *fileContext) PruneRowGroupByStats(rg int, e predicate.Expr) prune.Verdict {
	rgm := fc.md.RowGroup(rg)
	return prune.EvaluateWith(e, func(l *predicate.Leaf) prune.Verdict {
		if s, absent := fc.absentStats(l); absent {
			return prune.EvaluateLeaf(l, s)
		}
		d, col, _ := fc.decoder(l)
		s := chunkStats(rgm, col, d)
		if s.HasBounds {
			fc.used[fmt.Sprintf("footer_stats(%s)", l.Name)] = true
		}
		return prune.EvaluateLeaf(l, s)
	})
}

// chunkStats reads one column chunk's statistics; anything unreadable is
// left unknown.
func chunkStats(rgm *metadata.RowGroupMetaData, col int, d *value.StatDecoder) (s prune.ColumnStats) {
	defer func() {
		if recover() != nil {
			s = prune.ColumnStats{}
		}
	}()
	cc, err := rgm.ColumnChunk(col)
	if err != nil {
		return s
	}
	st, err := cc.Statistics()
	if err != nil || st == nil {
		return s
	}
	numValues := cc.NumValues()
	if st.HasNullCount() && st.NullCount() >= 0 && numValues >= st.NullCount() {
		s.NullsKnown, s.HasNulls = true, st.NullCount() > 0
		s.NonNullKnown, s.HasNonNull = true, numValues-st.NullCount() > 0
	}
	if d == nil || !st.HasMinMax() {
		return s
	}
	minB, maxB := st.EncodeMin(), st.EncodeMax()
	typeDefined := cc.PathInSchema() != nil && isTypeDefinedOrder(st.Descr())
	if !typeDefined && !d.DeprecatedOK && !bytes.Equal(minB, maxB) {
		// Deprecated min/max of a column that does not sort as signed.
		return s
	}
	lo, ok1 := d.Decode(minB, value.Lower)
	hi, ok2 := d.Decode(maxB, value.Upper)
	if !ok1 || !ok2 || lo.IsNaN() || hi.IsNaN() {
		return s
	}
	if c, ok := value.Compare(lo, hi); !ok || c > 0 {
		return s
	}
	s.HasBounds, s.Lower, s.Upper = true, lo, hi
	return s
}

func isTypeDefinedOrder(c *schema.Column) bool {
	return c.ColumnOrder() == parquet.ColumnOrders.TypeDefinedOrder
}

// PruneRowGroupByBloom decides row group rg from bloom filters of = and IN
// leaves. A chunk without a filter, or a filter that cannot be read, says
// "maybe".
func (fc *fileContext) PruneRowGroupByBloom(ctx context.Context, cache *footer.Cache, rg int, e predicate.Expr) (prune.Verdict, error) {
	var ctxErr error
	v := prune.EvaluateWith(e, func(l *predicate.Leaf) prune.Verdict {
		if l.Negated || (l.Op != predicate.OpEq && l.Op != predicate.OpIn) || ctxErr != nil {
			return prune.MightMatch
		}
		d, col, ok := fc.decoder(l)
		_ = d
		if !ok {
			return prune.MightMatch
		}
		cc, err := fc.md.RowGroup(rg).ColumnChunk(col)
		if err != nil || cc.BloomFilterOffset() <= 0 {
			fc.missing[fmt.Sprintf("bloom_filter(%s)", l.Name)] = true
			return prune.MightMatch
		}
		bf, err := cache.BloomFilter(ctx, fc.footer, rg, col)
		if err != nil {
			if ctx.Err() != nil {
				ctxErr = ctx.Err()
			}
			fc.missing[fmt.Sprintf("bloom_filter(%s): unreadable", l.Name)] = true
			return prune.MightMatch
		}
		if bf == nil {
			fc.missing[fmt.Sprintf("bloom_filter(%s)", l.Name)] = true
			return prune.MightMatch
		}
		fc.used[fmt.Sprintf("bloom_filter(%s)", l.Name)] = true
		descr := fc.md.Schema.Column(col)
		for _, lit := range l.Lits {
			h, ok := value.BloomHash(descr, l.Type, lit, bf.Hasher())
			if !ok || bf.CheckHash(h) {
				return prune.MightMatch
			}
		}
		return prune.CannotMatch
	})
	return v, ctxErr
}
