package fileread

import (
	"context"
	"fmt"
	"net/url"
	"sort"

	"github.com/seaweedfs/seaweedfs/weed/filer"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// Holders returns the volume servers (host:port) holding f's chunks,
// ordered by how many of f's bytes each holds (most first). A file stored
// inline in its filer entry has no holders.
func (f *File) Holders(ctx context.Context) ([]string, error) {
	if f.visible == nil {
		return nil, nil
	}
	bytesBy := map[string]int64{}
	views := filer.ViewFromVisibleIntervals(f.visible, 0, f.Size)
	located := map[string][]string{}
	for x := views.Front(); x != nil; x = x.Next {
		v := x.Value
		urls, ok := located[v.FileId]
		if !ok {
			var err error
			if urls, err = f.r.lookup(ctx, v.FileId); err != nil {
				return nil, fmt.Errorf("%s: locate chunk %s: %w", perr.Quote(f.Path), v.FileId, err)
			}
			located[v.FileId] = urls
		}
		for _, u := range urls {
			if p, err := url.Parse(u); err == nil && p.Host != "" {
				bytesBy[p.Host] += int64(v.ViewSize)
			}
		}
	}
	out := make([]string, 0, len(bytesBy))
	for h := range bytesBy {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool {
		if bytesBy[out[i]] != bytesBy[out[j]] {
			return bytesBy[out[i]] > bytesBy[out[j]]
		}
		return out[i] < out[j]
	})
	return out, nil
}
