package indexing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"

	"github.com/lakeweed/seaweedfs/weed/pushdown/access"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// RegistryDir holds the registry in the filer: one small JSON entry per
// data file with indexes, under the table's uuid (so it survives renames).
const RegistryDir = "/etc/pushdown/indexes"

// Registry records, for every (table, data file, kind, field id), where
// the payload lives, the identity it was built against, when, and its
// state. It is kept in the filer and cached in memory per table (loaded
// once, then written through), so planning consults it without I/O.
type Registry struct {
	filer  access.FilerFunc
	mu     sync.Mutex
	tables map[string]*tableRegistry
}

type tableRegistry struct {
	mu     sync.RWMutex
	loaded bool
	files  map[string]map[string]Entry // data file → entry key → entry
}

// NewRegistry keeps the registry through filer.
func NewRegistry(filer access.FilerFunc) *Registry {
	return &Registry{filer: filer, tables: map[string]*tableRegistry{}}
}

type fileRecord struct {
	DataFile string  `json:"data-file"`
	Entries  []Entry `json:"entries"`
}

func recordName(dataFile string) string {
	sum := sha256.Sum256([]byte(dataFile))
	return hex.EncodeToString(sum[:12]) + ".json"
}

func (r *Registry) table(ctx context.Context, uuid string) (*tableRegistry, error) {
	r.mu.Lock()
	t, ok := r.tables[uuid]
	if !ok {
		t = &tableRegistry{files: map[string]map[string]Entry{}}
		r.tables[uuid] = t
	}
	r.mu.Unlock()
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if loaded {
		return t, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loaded {
		return t, nil
	}
	dir := RegistryDir + "/" + uuid
	err := r.filer(func(c filer_pb.SeaweedFilerClient) error {
		return filer_pb.SeaweedList(ctx, c, dir, "", func(e *filer_pb.Entry, _ bool) error {
			if e.IsDirectory || len(e.Content) == 0 {
				return nil
			}
			var rec fileRecord
			if err := json.Unmarshal(e.Content, &rec); err != nil {
				glog.Warningf("pushdown: index registry %s/%s unreadable (%v); its entries count as missing", dir, e.Name, err)
				return nil
			}
			m := map[string]Entry{}
			for _, x := range rec.Entries {
				m[x.Key()] = x
			}
			t.files[rec.DataFile] = m
			return nil
		}, "", false, 1<<31-1)
	})
	if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
		return nil, perr.Wrap(perr.Unavailable, fmt.Errorf("load the index registry of table %s: %w", uuid, err))
	}
	t.loaded = true
	return t, nil
}

// Entries returns the registry entries of a data file (nil when none).
func (r *Registry) Entries(ctx context.Context, uuid, dataFile string) ([]Entry, error) {
	t, err := r.table(ctx, uuid)
	if err != nil {
		return nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	m := t.files[dataFile]
	if len(m) == 0 {
		return nil, nil
	}
	out := make([]Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// Lookup returns the entry of (data file, kind, field id).
func (r *Registry) Lookup(ctx context.Context, uuid, dataFile, kind string, fieldID int) (Entry, bool, error) {
	t, err := r.table(ctx, uuid)
	if err != nil {
		return Entry{}, false, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.files[dataFile][PayloadName(kind, fieldID)]
	return e, ok, nil
}

// All returns every entry of a table, by data file.
func (r *Registry) All(ctx context.Context, uuid string) (map[string][]Entry, error) {
	t, err := r.table(ctx, uuid)
	if err != nil {
		return nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string][]Entry, len(t.files))
	for f, m := range t.files {
		for _, e := range m {
			out[f] = append(out[f], e)
		}
		sort.Slice(out[f], func(i, j int) bool { return out[f][i].Key() < out[f][j].Key() })
	}
	return out, nil
}

// Put records entries (of one data file each) in memory and in the filer.
func (r *Registry) Put(ctx context.Context, uuid string, entries ...Entry) error {
	t, err := r.table(ctx, uuid)
	if err != nil {
		return err
	}
	byFile := map[string]bool{}
	t.mu.Lock()
	for _, e := range entries {
		m := t.files[e.DataFile]
		if m == nil {
			m = map[string]Entry{}
			t.files[e.DataFile] = m
		}
		m[e.Key()] = e
		byFile[e.DataFile] = true
	}
	recs := map[string][]byte{}
	for f := range byFile {
		rec := fileRecord{DataFile: f}
		for _, e := range t.files[f] {
			rec.Entries = append(rec.Entries, e)
		}
		sort.Slice(rec.Entries, func(i, j int) bool { return rec.Entries[i].Key() < rec.Entries[j].Key() })
		recs[f], _ = json.Marshal(rec)
	}
	t.mu.Unlock()
	return r.write(ctx, uuid, recs)
}

// Remove drops entries (kind.fid keys) of a data file; no keys = all.
func (r *Registry) Remove(ctx context.Context, uuid, dataFile string, keys ...string) error {
	t, err := r.table(ctx, uuid)
	if err != nil {
		return err
	}
	t.mu.Lock()
	m := t.files[dataFile]
	if len(keys) == 0 {
		m = nil
	}
	for _, k := range keys {
		delete(m, k)
	}
	var rec []byte
	if len(m) == 0 {
		delete(t.files, dataFile)
	} else {
		fr := fileRecord{DataFile: dataFile}
		for _, e := range m {
			fr.Entries = append(fr.Entries, e)
		}
		sort.Slice(fr.Entries, func(i, j int) bool { return fr.Entries[i].Key() < fr.Entries[j].Key() })
		rec, _ = json.Marshal(fr)
	}
	t.mu.Unlock()
	return r.write(ctx, uuid, map[string][]byte{dataFile: rec})
}

// write stores (or, for nil content, deletes) the records of data files.
func (r *Registry) write(ctx context.Context, uuid string, recs map[string][]byte) error {
	dir := RegistryDir + "/" + uuid
	return r.filer(func(c filer_pb.SeaweedFilerClient) error {
		for f, b := range recs {
			name := recordName(f)
			if b == nil {
				if err := filer_pb.DoRemove(ctx, c, dir, name, false, false, true, false, nil); err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
					return perr.Wrap(perr.Unavailable, fmt.Errorf("index registry: remove %s/%s: %w", dir, name, err))
				}
				continue
			}
			now := time.Now().Unix()
			if err := filer_pb.CreateEntry(ctx, c, &filer_pb.CreateEntryRequest{Directory: dir, Entry: &filer_pb.Entry{
				Name: name, Content: b, Attributes: &filer_pb.FuseAttributes{Mtime: now, Crtime: now, FileMode: 0o600, FileSize: uint64(len(b))},
			}}); err != nil {
				return perr.Wrap(perr.Unavailable, fmt.Errorf("index registry: write %s/%s: %w", dir, name, err))
			}
		}
		return nil
	})
}

// CountByState counts the entries of every table loaded so far, by state.
func (r *Registry) CountByState() map[string]int64 {
	r.mu.Lock()
	tables := make([]*tableRegistry, 0, len(r.tables))
	for _, t := range r.tables {
		tables = append(tables, t)
	}
	r.mu.Unlock()
	out := map[string]int64{}
	for _, t := range tables {
		t.mu.RLock()
		for _, m := range t.files {
			for _, e := range m {
				out[e.State]++
			}
		}
		t.mu.RUnlock()
	}
	return out
}
