package volume

import (
	"context"
	"sort"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// maxPrefetchBytes bounds the column bytes one build reads ahead of its
// CPU slot; a larger column is streamed from the file while building.
const maxPrefetchBytes = 64 << 20 // × builds in flight (twice the cores) bounds the memory

// prefetchColumn reads every row group's chunk of leaf column col into
// memory, so the CPU-bound build that follows never waits on the I/O path
// while holding a core (the builds' reads then come from memory). Reads
// outside those chunks still go to src. A column over maxPrefetchBytes is
// not prefetched: src is returned as is.
func prefetchColumn(ctx context.Context, src footer.Source, ft *footer.Footer, col int) (footer.Source, error) {
	var total int64
	var spans []span
	for _, rg := range ft.Chunks {
		if col < 0 || col >= len(rg) {
			return src, nil
		}
		c := rg[col]
		if c.Start < 0 || c.Length <= 0 || c.Start+c.Length > src.Size() {
			return src, nil // not a layout to trust: let the build's reader report it
		}
		total += c.Length
		spans = append(spans, span{start: c.Start, end: c.Start + c.Length})
	}
	if total == 0 || total > maxPrefetchBytes {
		return src, nil
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for i := range spans {
		spans[i].data = make([]byte, spans[i].end-spans[i].start)
		if _, err := src.ReadAt(ctx, spans[i].data, spans[i].start); err != nil {
			return nil, err
		}
	}
	return &prefetched{src: src, spans: spans}, nil
}

type span struct {
	start, end int64
	data       []byte
}

// prefetched serves reads that fall inside one prefetched span from
// memory and every other read from the file.
type prefetched struct {
	src   footer.Source
	spans []span // sorted by start
}

func (p *prefetched) Size() int64 { return p.src.Size() }

func (p *prefetched) ReadAt(ctx context.Context, b []byte, off int64) (int, error) {
	i := sort.Search(len(p.spans), func(i int) bool { return p.spans[i].end > off })
	if i < len(p.spans) && p.spans[i].start <= off && off+int64(len(b)) <= p.spans[i].end {
		return copy(b, p.spans[i].data[off-p.spans[i].start:]), nil
	}
	return p.src.ReadAt(ctx, b, off)
}
