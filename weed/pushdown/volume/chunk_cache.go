package volume

// The chunk cache: column chunks the volume's scans, filters and
// aggregates read, kept as stored (compressed) so warm calls decode
// without reading them again. The volume pushdown service reads its own
// volume server's needles over HTTP (fileread); on a warm scan that read
// was a quarter of the process's CPU (the connector, reading here, keeps
// the same bytes in its range cache).
//
//	read [off, off+n) of a data file
//	  ├─ inside one column chunk (≤ 64 MiB and ≤ 1/8 of the cache): that chunk's bytes,
//	  │    from the cache, or read whole once and added (key: the file's
//	  │    identity and the chunk's offset: a rewritten file is a new key)
//	  └─ else (footer, page index, across chunks): read as asked

import (
	"context"
	"fmt"
	"sort"

	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/freshness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
)

// DefaultChunkCacheBytes bounds the column chunks kept
// (-pushdown.chunkCacheMB).
const DefaultChunkCacheBytes = 256 << 20

// maxCachedChunk: a larger chunk is read as asked, never cached whole.
const maxCachedChunk = 64 << 20

// SetChunkCacheBytes sizes the chunk cache (0: none; call before serving).
func (s *Service) SetChunkCacheBytes(n int64) {
	s.vecMu.Lock()
	defer s.vecMu.Unlock()
	s.chunks, s.chunkCacheSet = nil, true
	if n > 0 {
		s.chunks = indexing.NewIndexCache(n)
	}
}

func (s *Service) chunkCache() *indexing.IndexCache {
	s.vecMu.Lock()
	defer s.vecMu.Unlock()
	if s.chunks == nil && !s.chunkCacheSet {
		s.chunks = indexing.NewIndexCache(DefaultChunkCacheBytes)
	}
	return s.chunks
}

// chunkRanges are a footer's column chunks as sorted byte ranges.
type chunkRanges struct{ start, end []int64 }

type chunkRangesTag struct{}

func chunkRangesOf(ft *footer.Footer) *chunkRanges {
	return ft.SmallMemo(chunkRangesTag{}, func() any {
		type r struct{ s, e int64 }
		var rs []r
		for _, row := range ft.Chunks {
			for _, ch := range row {
				if ch.Length > 0 && ch.Length <= maxCachedChunk && ch.Start >= 0 {
					rs = append(rs, r{ch.Start, ch.Start + ch.Length})
				}
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].s < rs[j].s })
		out := &chunkRanges{}
		for _, x := range rs {
			if n := len(out.end); n > 0 && x.s < out.end[n-1] {
				continue // overlapping chunks (a malformed footer): read as asked
			}
			out.start, out.end = append(out.start, x.s), append(out.end, x.e)
		}
		return out
	}).(*chunkRanges)
}

// chunkSource reads a data file through the chunk cache.
type chunkSource struct {
	src      footer.Source
	path     string
	key      string // path and identity
	ranges   *chunkRanges
	cache    *indexing.IndexCache
	maxChunk int64 // larger chunks are read as asked
}

// cachedChunks is src (the file at path, of identity) read through the
// service's chunk cache; src itself when there is none.
func (s *Service) cachedChunks(src footer.Source, path, identity string, ft *footer.Footer) footer.Source {
	c := s.chunkCache()
	if c == nil || identity == "" {
		return src
	}
	_, _, capacity, _, _, _ := c.Stats()
	return &chunkSource{src: src, path: path, key: path + "\x00" + identity, ranges: chunkRangesOf(ft), cache: c, maxChunk: capacity / 8}
}

func (c *chunkSource) Size() int64 { return c.src.Size() }

func (c *chunkSource) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	i := sort.Search(len(c.ranges.start), func(i int) bool { return c.ranges.end[i] > off })
	if len(p) == 0 || i == len(c.ranges.start) || off < c.ranges.start[i] || end > c.ranges.end[i] {
		return c.src.ReadAt(ctx, p, off)
	}
	start, size := c.ranges.start[i], c.ranges.end[i]-c.ranges.start[i]
	if size > c.maxChunk {
		// a chunk this large would push out most of the cache and be
		// allocated twice (here and by the reader): read as asked
		return c.src.ReadAt(ctx, p, off)
	}
	key := fmt.Sprintf("%s\x00chunk\x00%d", c.key, start)
	var chunk []byte
	if v, ok := c.cache.Get(key); ok {
		chunk = v.(cachedValue).v.([]byte)
	} else {
		loaded := freshness.Now()
		chunk = make([]byte, size)
		if _, err := c.src.ReadAt(ctx, chunk, start); err != nil {
			return 0, err
		}
		c.cache.Add(key, c.path, loaded, cachedValue{chunk, size}, size)
	}
	return copy(p, chunk[off-start:]), nil
}
