package footer

import (
	"fmt"
	"sync/atomic"
)

// sidePages are page indexes attached from page_index side indexes for
// columns the file carries none for. They belong to this Footer, so they
// live and die with this version of the file: a rewrite loads a new
// Footer and never sees them.
type sidePages struct {
	any      atomic.Bool
	cols     map[int][]ColumnPageIndex // leaf column → per row group; under Footer.mu
	attached atomic.Int32              // columns attached so far
	merged   []*RowGroupIndex          // native overlaid with cols; nil until asked
}

// SidePageIndex is one row group's page index of one column as a
// page_index side index stores it: the Thrift OffsetIndex and ColumnIndex
// a writer would have put in the file (Column may be empty).
type SidePageIndex struct {
	Offset, Column []byte
	// Continued are the pages (ordinals) of a list column whose first
	// levels end the row begun before them (Page.StartsInsideRow).
	Continued []int32
}

// AttachSidePageIndex parses the page index of leaf column col, one entry
// per row group, and makes PageIndex serve it wherever the file has none
// of its own for that column. A native page index always wins. Entries
// that do not parse or do not fit the column chunks are an error and
// nothing is attached.
func (f *Footer) AttachSidePageIndex(col int, groups []SidePageIndex) error {
	md := f.Meta
	if col < 0 || col >= md.Schema.NumColumns() {
		return fmt.Errorf("%s: side page index for column %d of %d", f.ID.Path, col, md.Schema.NumColumns())
	}
	if len(groups) != md.NumRowGroups() {
		return fmt.Errorf("%s: side page index of column %d covers %d row groups, the file has %d", f.ID.Path, col, len(groups), md.NumRowGroups())
	}
	descr := md.Schema.Column(col)
	parsed := make([]ColumnPageIndex, len(groups))
	var size int64
	for rg, g := range groups {
		cpi := &parsed[rg]
		oi, err := ParseOffsetIndex(g.Offset)
		if err != nil {
			return fmt.Errorf("%s: side page index of column %d, row group %d: %w", f.ID.Path, col, rg, err)
		}
		pages, err := PagesOf(oi, f.Chunks[rg][col], md.RowGroup(rg).NumRows())
		if err != nil {
			return fmt.Errorf("%s: side page index of column %d, row group %d: %w", f.ID.Path, col, rg, err)
		}
		if err := MarkContinuedPages(pages, g.Continued); err != nil {
			return fmt.Errorf("%s: side page index of column %d, row group %d: %w", f.ID.Path, col, rg, err)
		}
		cpi.Offset, cpi.Pages = oi, pages
		if len(g.Column) > 0 {
			if cpi.Column, err = ParseColumnIndex(descr, g.Column); err != nil {
				return fmt.Errorf("%s: side page index of column %d, row group %d: %w", f.ID.Path, col, rg, err)
			}
		}
		size += 2*int64(len(g.Offset)+len(g.Column)) + 64*int64(len(pages))
	}
	f.mu.Lock()
	if f.side.cols == nil {
		f.side.cols = map[int][]ColumnPageIndex{}
	}
	if _, dup := f.side.cols[col]; dup {
		f.mu.Unlock()
		return nil
	}
	f.side.cols[col] = parsed
	f.side.attached.Add(1)
	f.side.merged = nil
	f.side.any.Store(true)
	f.size += size
	f.mu.Unlock()
	if f.cache != nil {
		f.cache.grow(f, size)
	}
	return nil
}

// SidePageColumns is the number of columns side page indexes have been
// attached to: it only grows, so a value memoized with it is current
// while it stays the same.
func (f *Footer) SidePageColumns() int32 { return f.side.attached.Load() }

// HasSidePageIndex reports whether a side page index of leaf column col is
// attached.
func (f *Footer) HasSidePageIndex(col int) bool {
	if !f.side.any.Load() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.side.cols[col]
	return ok
}

// HasSideListPages reports whether the pages PageIndex serves for leaf
// column col are a side page index's (the file has no native page
// index): the page_index kind lists a repeated column's pages with the
// rows starting in each and those starting inside a row
// (Page.StartsInsideRow), so a run of them may be read alone.
func (f *Footer) HasSideListPages(col int) bool {
	return !f.HasNativePageIndex() && f.HasSidePageIndex(col)
}

// mergedLocked is the native page index (if any) with the side page
// indexes filling the columns it lacks. Callers hold f.mu.
func (f *Footer) mergedLocked() []*RowGroupIndex {
	if f.side.merged != nil {
		return f.side.merged
	}
	md := f.Meta
	ncols := md.Schema.NumColumns()
	out := make([]*RowGroupIndex, md.NumRowGroups())
	for rg := range out {
		idx := &RowGroupIndex{Columns: make([]ColumnPageIndex, ncols)}
		if rg < len(f.pageIndex) && f.pageIndex[rg] != nil {
			copy(idx.Columns, f.pageIndex[rg].Columns)
		}
		for col, groups := range f.side.cols {
			if c := &idx.Columns[col]; c.Offset == nil || c.SpansErr != nil {
				*c = groups[rg]
			}
		}
		out[rg] = idx
	}
	f.side.merged = out
	return out
}
