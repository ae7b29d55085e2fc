package sideindex

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/prune"
	"github.com/lakeweed/seaweedfs/weed/pushdown/value"
)

// pageIndex serves the rebuilt page index: as footer.RowGroupIndex for
// the planner's page tier, and as candidate pages for a leaf.
type pageIndex struct {
	h      Header
	col    *schema.Column
	leaf   int
	leaves int
	groups []pageGroup
	bytes  int64
}

type pageGroup struct {
	first, rows int64
	cpi         footer.ColumnPageIndex
	// offset and column are the Thrift OffsetIndex and ColumnIndex as
	// stored (column empty when the group has none); continued the pages
	// of a list column continuing a row.
	offset, column []byte
	continued      []int32
}

func (k pageIndexKind) Open(ctx context.Context, payload []byte, want Header) (Index, error) {
	want.Kind = k.Name()
	h, props, blobs, err := readPuffin(payload, want)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) (Index, error) {
		return nil, fmt.Errorf("page_index side index: "+format, args...)
	}
	col, maxRep, err := parseDescrRep(props[pageColumnProp])
	if err != nil {
		return fail("%v", err)
	}
	if maxRep > 0 && props[pageRowAlignedProp] != "true" && props[pageListRowsProp] != "true" {
		return fail("the pages of a repeated column are marked neither row-aligned nor with the rows starting in them")
	}
	leaf, err1 := strconv.Atoi(props[pageLeafProp])
	leaves, err2 := strconv.Atoi(props[pageLeavesProp])
	if err1 != nil || err2 != nil || leaf < 0 || leaf >= leaves || leaves > 1<<20 {
		return fail("column position %s of %s not understood", short(props[pageLeafProp]), short(props[pageLeavesProp]))
	}
	idx := &pageIndex{h: h, col: col, leaf: leaf, leaves: leaves, bytes: 2 * int64(len(payload))}
	next := int64(0)
	for i := 0; i < len(blobs); i++ {
		b := blobs[i]
		rg, err1 := blobInt(b, "row-group")
		first, err2 := blobInt(b, "first-row")
		rows, err3 := blobInt(b, "rows")
		start, err4 := blobInt(b, "chunk-start")
		length, err5 := blobInt(b, "chunk-length")
		if err := firstErr(err1, err2, err3, err4, err5); err != nil {
			return fail("%v", err)
		}
		if b.typ != offsetIndexBlob || rg != int64(len(idx.groups)) || first != next || rows < 0 || rows > h.Rows-next {
			return fail("blob %d (%s) is out of place", i, short(b.typ))
		}
		if start < 0 || length < 0 || start > math.MaxInt64-length {
			return fail("row group %d: column chunk [%d, +%d) is not a byte range", rg, start, length)
		}
		g := pageGroup{first: first, rows: rows, offset: b.data}
		g.cpi.Offset, err = footer.ParseOffsetIndex(b.data)
		if err != nil {
			return fail("row group %d: %v", rg, err)
		}
		g.cpi.Pages, g.cpi.SpansErr = footer.PagesOf(g.cpi.Offset, footer.Chunk{Start: start, Length: length}, rows)
		if list, ok := b.props[continuedPagesProp]; ok {
			if maxRep == 0 {
				return fail("row group %d: continued pages of a flat column", rg)
			}
			if g.continued, err = parseContinued(list); err != nil {
				return fail("row group %d: %v", rg, err)
			}
			if g.cpi.SpansErr == nil {
				if err := footer.MarkContinuedPages(g.cpi.Pages, g.continued); err != nil {
					return fail("row group %d: %v", rg, err)
				}
			}
		}
		if i+1 < len(blobs) && blobs[i+1].typ == columnIndexBlob {
			i++
			if crg, err := blobInt(blobs[i], "row-group"); err != nil || crg != rg {
				return fail("column index blob %d is out of place", i)
			}
			g.column = blobs[i].data
			if g.cpi.Column, err = footer.ParseColumnIndex(col, blobs[i].data); err != nil {
				return fail("row group %d: %v", rg, err)
			}
		}
		idx.groups = append(idx.groups, g)
		next += rows
	}
	if next != h.Rows {
		return fail("row groups cover %d rows, the file has %d", next, h.Rows)
	}
	return idx, nil
}

func (p *pageIndex) Bytes() int64 { return p.bytes }

// RowGroupIndex is what footer.Footer.PageIndex returns for a file
// carrying a native page index, for the indexed column; the other
// columns' entries are empty.
func (p *pageIndex) RowGroupIndex(rg int) (*footer.RowGroupIndex, error) {
	if rg < 0 || rg >= len(p.groups) {
		return nil, fmt.Errorf("page_index side index has no row group %d", rg)
	}
	out := &footer.RowGroupIndex{Columns: make([]footer.ColumnPageIndex, p.leaves)}
	out.Columns[p.leaf] = p.groups[rg].cpi
	return out, nil
}

// RowGroups is the number of row groups the index covers.
func (p *pageIndex) RowGroups() int { return len(p.groups) }

// SidePageIndex returns row group rg's OffsetIndex and ColumnIndex as a
// writer would have written them into the file (Column is nil when the
// group has no column index) and a list column's continued pages.
func (p *pageIndex) SidePageIndex(rg int) (footer.SidePageIndex, error) {
	if rg < 0 || rg >= len(p.groups) {
		return footer.SidePageIndex{}, fmt.Errorf("page_index side index has no row group %d", rg)
	}
	g := &p.groups[rg]
	return footer.SidePageIndex{Offset: g.offset, Column: g.column, Continued: g.continued}, nil
}

// parseContinued reads a comma-separated list of page ordinals (empty:
// none); footer.MarkContinuedPages checks their places.
func parseContinued(list string) ([]int32, error) {
	if list == "" {
		return nil, nil
	}
	var out []int32
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("continued pages %s not understood", short(list))
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// Eval keeps the rows of every page whose min/max/null count might
// satisfy l (prune.EvaluateLeaf, as the planner's page tier decides).
func (p *pageIndex) Eval(ctx context.Context, l *predicate.Leaf) (Answer, error) {
	if !leafMatchesIndex(l, p.h) {
		return unknown, nil
	}
	d, err := value.NewStatDecoder(p.col, l.Type)
	if err != nil {
		return unknown, nil
	}
	out := roaring64.New()
	for _, g := range p.groups {
		if err := ctx.Err(); err != nil {
			return Answer{}, err
		}
		stats := pageStatsOf(g.cpi, d)
		if stats == nil {
			out.AddRange(uint64(g.first), uint64(g.first+g.rows))
			continue
		}
		for i, pg := range g.cpi.Pages {
			if prune.EvaluateLeaf(l, stats[i]) == prune.MightMatch {
				start, end := pg.HeldRows()
				out.AddRange(uint64(g.first+start), uint64(g.first+end))
			}
		}
	}
	return Answer{Positions: out}, nil
}

// pageStatsOf reads each page's statistics from the column index; nil
// when there is none or it does not describe the pages.
func pageStatsOf(cpi footer.ColumnPageIndex, d *value.StatDecoder) []prune.ColumnStats {
	ci := cpi.Column
	if ci == nil || cpi.SpansErr != nil {
		return nil
	}
	n := len(cpi.Pages)
	nulls, lo, hi := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues()
	if len(nulls) != n || len(lo) != n || len(hi) != n {
		return nil
	}
	counts := ci.GetNullCounts()
	if !ci.IsSetNullCounts() || len(counts) != n {
		counts = nil
	}
	out := make([]prune.ColumnStats, n)
	for i := range out {
		s := &out[i]
		if counts != nil && counts[i] >= 0 {
			s.NullsKnown, s.HasNulls = true, counts[i] > 0
		}
		if nulls[i] {
			// Believe an all-null page only when its null count agrees.
			if counts != nil && counts[i] >= cpi.Pages[i].EndRow-cpi.Pages[i].FirstRow {
				*s = prune.AllNull()
			} else {
				*s = prune.ColumnStats{}
			}
			continue
		}
		a, ok1 := d.Decode(lo[i], value.Lower)
		b, ok2 := d.Decode(hi[i], value.Upper)
		if !ok1 || !ok2 || a.IsNaN() || b.IsNaN() {
			continue
		}
		if c, ok := value.Compare(a, b); ok && c <= 0 {
			s.HasBounds, s.Lower, s.Upper = true, a, b
		}
	}
	return out
}
