// Package tables resolves Iceberg tables the way SeaweedFS's own Iceberg
// REST catalog stores them, reading the filer directly (the catalog
// pushdown service runs in the catalog's process):
//
//	/buckets/<warehouse>/<namespace>  entry <table>
//	   extended["s3tables.metadata"] = {"metadataLocation": "s3://…/vN.metadata.json", …}
//	        │ metadata.json (parsed once per location: immutable)
//	        ▼
//	snapshot ── manifest list ── manifests (each parsed once: immutable)
//	        ▼
//	data files with identity, partition values and column metrics
package tables

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/s3api/s3tables"

	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
)

// Resolver loads tables, snapshots and data files.
type Resolver struct {
	Reader           *fileread.Reader
	DefaultWarehouse string

	metadata  *lru.Cache[string, *parsedMetadata]
	records   *lru.Cache[string, string] // a table entry's catalog record → its metadata location
	manifests *lru.Cache[string, []iceberg.ManifestEntry]
	lists     *lru.Cache[string, []iceberg.ManifestFile]
	snapshots *lru.Cache[string, *Files]
	mu        sync.Mutex
}

// New returns a Resolver caching up to maxManifests parsed manifests.
func New(r *fileread.Reader, defaultWarehouse string, maxManifests int) *Resolver {
	md, _ := lru.New[string, *parsedMetadata](1024)
	rec, _ := lru.New[string, string](1024)
	mf, _ := lru.New[string, []iceberg.ManifestEntry](max(16, maxManifests))
	ml, _ := lru.New[string, []iceberg.ManifestFile](4096)
	sn, _ := lru.New[string, *Files](64)
	return &Resolver{Reader: r, DefaultWarehouse: defaultWarehouse, metadata: md, records: rec, manifests: mf, lists: ml, snapshots: sn}
}

// Table is a resolved table at its current metadata version.
type Table struct {
	Warehouse        string
	Name             string // namespace.table as requested
	MetadataLocation string
	Meta             table.Metadata
	// NameMapping is Meta's name mapping and Specs its partition specs by
	// id, derived once per metadata version: read only.
	NameMapping iceberg.NameMapping
	Specs       map[int]iceberg.PartitionSpec
	schemas     []*iceberg.Schema // Meta's, cloned once (iceberg-go clones on each call)
	current     *iceberg.Schema
}

// parsedMetadata is one metadata file as parsed, with what is derived
// from it once.
type parsedMetadata struct {
	md      table.Metadata
	nm      iceberg.NameMapping
	specs   map[int]iceberg.PartitionSpec
	schemas []*iceberg.Schema
	current *iceberg.Schema
}

func parsed(md table.Metadata) *parsedMetadata {
	pm := &parsedMetadata{md: md, nm: md.NameMapping(), specs: map[int]iceberg.PartitionSpec{}, schemas: md.Schemas(), current: md.CurrentSchema()}
	for _, sp := range md.PartitionSpecs() {
		pm.specs[sp.ID()] = sp
	}
	for _, sc := range pm.schemas { // one pointer per schema id
		if sc.ID == pm.current.ID {
			pm.current = sc
		}
	}
	return pm
}

// Schemas are the table's schemas, shared: read only.
func (t *Table) Schemas() []*iceberg.Schema {
	if t.schemas == nil {
		return t.Meta.Schemas()
	}
	return t.schemas
}

// CurrentSchema is the table's current schema, shared: read only.
func (t *Table) CurrentSchema() *iceberg.Schema {
	if t.current == nil {
		return t.Meta.CurrentSchema()
	}
	return t.current
}

// Name is a validated table name: nothing in it can leave the warehouse.
type Name struct {
	Warehouse string // table bucket
	Namespace string // "a" or "a.b" for multi-level namespaces, as s3tables stores them
	Table     string
	Full      string // namespace.table as requested
}

// ParseName validates a request's warehouse (defaultWarehouse when empty)
// and "ns.table" (multi-level namespaces: "a.b.table") without looking
// anything up: every part non-empty, no "/" or "\\", no "." or ".." parts,
// no control characters.
func ParseName(warehouse, name, defaultWarehouse string) (Name, error) {
	if warehouse == "" {
		warehouse = defaultWarehouse
	}
	if err := checkPart("warehouse", warehouse); err != nil {
		return Name{}, err
	}
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return Name{}, perr.New(perr.InvalidArgument, "table %s: want namespace.table", perr.Quote(name))
	}
	for _, p := range strings.Split(name, ".") {
		if err := checkPart("table name part", p); err != nil { // the part quoted, not the whole name again
			return Name{}, err
		}
	}
	return Name{Warehouse: warehouse, Namespace: name[:i], Table: name[i+1:], Full: name}, nil
}

func checkPart(what, p string) error {
	switch {
	case p == "":
		return perr.New(perr.InvalidArgument, "%s is empty", what)
	case p == "." || p == "..":
		return perr.New(perr.InvalidArgument, "%s %s is not a name", what, perr.Quote(p))
	case strings.ContainsAny(p, "/\\"):
		return perr.New(perr.InvalidArgument, "%s %s holds a path separator", what, perr.Quote(p))
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return perr.New(perr.InvalidArgument, "%s %s holds a control character", what, perr.Quote(p))
		}
	}
	return nil
}

// Load resolves the table's current metadata.
func (r *Resolver) Load(ctx context.Context, n Name) (*Table, error) {
	warehouse, ns, tbl := n.Warehouse, n.Namespace, n.Table
	name := perr.Quote(n.Full) // as messages name it
	var entry *filer_pb.Entry
	err := r.Reader.WithFilerClient(false, func(c filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, c, &filer_pb.LookupDirectoryEntryRequest{Directory: s3tables.GetNamespacePath(warehouse, ns), Name: tbl})
		if err != nil {
			return err
		}
		entry = resp.Entry
		return nil
	})
	if err != nil {
		if errors.Is(err, filer_pb.ErrNotFound) {
			return nil, perr.New(perr.NotFound, "table %s not found in warehouse %s", name, perr.Quote(warehouse))
		}
		return nil, perr.Wrap(perr.Unavailable, fmt.Errorf("look up table %s: %w", name, err))
	}
	ext := entry.GetExtended()
	if s3tables.EntryType(ext) != s3tables.EntryTypeTable {
		return nil, perr.New(perr.NotFound, "%s in warehouse %s is not a table", name, perr.Quote(warehouse))
	}
	if c := string(ext[s3tables.ExtendedKeyDeleting]); c != "" {
		return nil, perr.New(perr.NotFound, "table %s is not ready (%s in progress)", name, c)
	}
	raw, ok := ext[s3tables.ExtendedKeyMetadata]
	if !ok {
		return nil, perr.New(perr.NotFound, "table %s has no catalog record", name)
	}
	loc, ok := r.records.Get(string(raw))
	if !ok {
		var rec struct {
			MetadataLocation string `json:"metadataLocation"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil || rec.MetadataLocation == "" {
			return nil, perr.New(perr.Corrupt, "table %s: catalog record without a metadata location", name)
		}
		loc = rec.MetadataLocation
		r.records.Add(string(raw), loc)
	}
	pm, err := r.metadataAt(ctx, loc)
	if err != nil {
		return nil, err
	}
	return &Table{Warehouse: warehouse, Name: n.Full, MetadataLocation: loc, Meta: pm.md, NameMapping: pm.nm, Specs: pm.specs, schemas: pm.schemas, current: pm.current}, nil
}

func (r *Resolver) metadataAt(ctx context.Context, loc string) (*parsedMetadata, error) {
	if pm, ok := r.metadata.Get(loc); ok {
		return pm, nil
	}
	b, err := r.readAll(ctx, loc)
	if err != nil {
		return nil, err
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, perr.New(perr.Corrupt, "metadata %s: %v", loc, err)
		}
		if b, err = io.ReadAll(io.LimitReader(zr, 1<<30)); err != nil {
			return nil, perr.New(perr.Corrupt, "metadata %s: %v", loc, err)
		}
	}
	md, err := table.ParseMetadataBytes(b)
	if err != nil {
		return nil, perr.New(perr.Corrupt, "metadata %s: %v", loc, err)
	}
	pm := parsed(md)
	r.metadata.Add(loc, pm)
	return pm, nil
}

func (r *Resolver) readAll(ctx context.Context, loc string) ([]byte, error) {
	f, err := r.Reader.Open(ctx, loc)
	if err != nil {
		if errors.Is(err, fileread.ErrNotFound) {
			return nil, perr.New(perr.NotFound, "%s: %v", loc, err)
		}
		if errors.Is(err, fileread.ErrBadLocation) {
			return nil, perr.New(perr.FailedPrecondition, "%v", err)
		}
		return nil, perr.Wrap(perr.Unavailable, err)
	}
	buf := make([]byte, f.Size)
	if _, err := f.ReadAtContext(ctx, buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, perr.Wrap(perr.Unavailable, fmt.Errorf("read %s: %w", loc, err))
	}
	return buf, nil
}

// Snapshot returns the snapshot id (or the current one when id is nil).
func (t *Table) Snapshot(id *int64) (*table.Snapshot, error) {
	if id == nil {
		s := t.Meta.CurrentSnapshot()
		if s == nil {
			return nil, nil
		}
		return s, nil
	}
	s := t.Meta.SnapshotByID(*id)
	if s == nil {
		return nil, perr.New(perr.NotFound, "snapshot %d is not a snapshot of table %s", *id, t.Name)
	}
	return s, nil
}

// Schema returns the schema with the given id; nil id picks the snapshot's
// schema (or the current schema).
func (t *Table) Schema(id *int32, snap *table.Snapshot) (*iceberg.Schema, error) {
	if id != nil {
		for _, s := range t.Schemas() {
			if s.ID == int(*id) {
				return s, nil
			}
		}
		var ids []int
		for _, s := range t.Schemas() {
			ids = append(ids, s.ID)
		}
		return nil, perr.New(perr.InvalidArgument, "schema id %d is not a schema of table %s (it has %v)", *id, t.Name, ids)
	}
	if snap != nil && snap.SchemaID != nil {
		for _, s := range t.Schemas() {
			if s.ID == *snap.SchemaID {
				return s, nil
			}
		}
	}
	return t.CurrentSchema(), nil
}

// Files are the live data and delete files of a snapshot, with the delete
// files that apply to each data file resolved by Iceberg's rules.
type Files struct {
	Data    []plan.DataFile // HasDeletes set where deletes apply
	ByPath  map[string]int  // data file path → index in Data
	Deletes []deletes.File  // every live delete file
	// Applied maps a data file path to the delete files that apply to it
	// (sorted deterministically); absent = none.
	Applied map[string][]deletes.File
	// Derived holds what consumers compute once per snapshot from these
	// files (the REST scan-planning front's encoded data files), keyed by
	// the consumer; it is dropped with the cached Files.
	Derived sync.Map
}

// DataFiles lists the live files of snapshot s and resolves which delete
// files apply to which data file. The result is cached per snapshot (the
// files of a snapshot never change); callers must not modify it.
func (r *Resolver) DataFiles(ctx context.Context, t *Table, s *table.Snapshot) (*Files, error) {
	if s == nil {
		return &Files{ByPath: map[string]int{}, Applied: map[string][]deletes.File{}}, nil
	}
	key := t.Meta.TableUUID().String() + "@" + strconv.FormatInt(s.SnapshotID, 10) + "@" + s.ManifestList
	if f, ok := r.snapshots.Get(key); ok {
		return f, nil
	}
	out := &Files{ByPath: map[string]int{}, Applied: map[string][]deletes.File{}}
	fio := &filerIO{ctx: ctx, r: r}
	list, err := r.manifestList(fio, s)
	if err != nil {
		return nil, err
	}
	for _, m := range list {
		entries, err := r.entries(fio, m)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			df := e.DataFile()
			switch df.ContentType() {
			case iceberg.EntryContentData:
				if df.FileFormat() != iceberg.ParquetFile {
					return nil, perr.New(perr.FailedPrecondition, "data file %s is %s; pushdown plans Parquet files only", df.FilePath(), df.FileFormat())
				}
				if _, dup := out.ByPath[df.FilePath()]; dup {
					return nil, perr.New(perr.Corrupt, "snapshot %d lists data file %s twice", s.SnapshotID, df.FilePath())
				}
				out.ByPath[df.FilePath()] = len(out.Data)
				out.Data = append(out.Data, dataFileOf(e))
			default:
				d, err := deletes.FromIceberg(df, e.SequenceNum())
				if err != nil {
					return nil, perr.New(perr.Corrupt, "snapshot %d: %v", s.SnapshotID, err)
				}
				out.Deletes = append(out.Deletes, d)
			}
		}
	}
	if len(out.Deletes) > 0 {
		specs := t.Specs
		if specs == nil {
			specs = map[int]iceberg.PartitionSpec{}
			for _, sp := range t.Meta.PartitionSpecs() {
				specs[sp.ID()] = sp
			}
		}
		ix := deletes.NewIndex(out.Deletes, specs)
		for i := range out.Data {
			d := &out.Data[i]
			if ds := ix.For(DeleteTarget(d)); len(ds) > 0 {
				out.Applied[d.Path] = ds
				d.HasDeletes = true
			}
		}
	}
	r.snapshots.Add(key, out)
	return out, nil
}

// dataFileOf is the planner's view of a data file's manifest entry.
func dataFileOf(e iceberg.ManifestEntry) plan.DataFile {
	df := e.DataFile()
	return plan.DataFile{
		Path: df.FilePath(), Size: df.FileSizeBytes(), RecordCount: df.Count(), SpecID: df.SpecID(),
		Partition: df.Partition(), DataSeq: e.SequenceNum(), SplitOffsets: df.SplitOffsets(),
		Stats: plan.ManifestStats{Lower: df.LowerBoundValues(), Upper: df.UpperBoundValues(), Nulls: df.NullValueCounts(),
			NaNs: df.NaNValueCounts(), Values: df.ValueCounts(), ColumnSizes: df.ColumnSizes()},
	}
}

// DeleteTarget describes a planned data file to the delete engine.
func DeleteTarget(d *plan.DataFile) deletes.DataFile {
	return deletes.DataFile{Path: d.Path, Size: d.Size, RecordCount: d.RecordCount, SpecID: d.SpecID, Partition: d.Partition, DataSeq: d.DataSeq}
}

func (r *Resolver) manifestList(fio *filerIO, s *table.Snapshot) ([]iceberg.ManifestFile, error) {
	key := s.ManifestList
	if key == "" {
		key = strings.Join(s.ManifestLocations, "\x00")
	}
	if l, ok := r.lists.Get(key); ok {
		return l, nil
	}
	l, err := safeManifests(s, fio)
	if err != nil {
		if pe := perrOf(err); pe != nil {
			return nil, pe
		}
		return nil, perr.New(perr.Corrupt, "manifest list of snapshot %d: %v", s.SnapshotID, err)
	}
	r.lists.Add(key, l)
	return l, nil
}

func safeManifests(s *table.Snapshot, fio icebergio.IO) (l []iceberg.ManifestFile, err error) {
	defer func() {
		if p := recover(); p != nil {
			l, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return s.Manifests(fio)
}

func (r *Resolver) entries(fio *filerIO, m iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	if e, ok := r.manifests.Get(m.FilePath()); ok {
		return e, nil
	}
	e, err := safeEntries(m, fio)
	if err != nil {
		if pe := perrOf(err); pe != nil {
			return nil, pe
		}
		return nil, perr.New(perr.Corrupt, "manifest %s: %v", m.FilePath(), err)
	}
	r.manifests.Add(m.FilePath(), e)
	return e, nil
}

func safeEntries(m iceberg.ManifestFile, fio icebergio.IO) (e []iceberg.ManifestEntry, err error) {
	defer func() {
		if p := recover(); p != nil {
			e, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return m.FetchEntries(fio, true)
}

func perrOf(err error) error {
	var pe *perr.Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// filerIO is an iceberg-go IO reading through the filer.
type filerIO struct {
	ctx context.Context
	r   *Resolver
}

func (f *filerIO) Open(name string) (icebergio.File, error) {
	b, err := f.r.readAll(f.ctx, name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &memFile{Reader: bytes.NewReader(b), name: name, size: int64(len(b))}, nil
}

func (f *filerIO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrPermission}
}

type memFile struct {
	*bytes.Reader
	name string
	size int64
}

func (m *memFile) Close() error               { return nil }
func (m *memFile) Stat() (fs.FileInfo, error) { return memInfo{m}, nil }

type memInfo struct{ f *memFile }

func (i memInfo) Name() string       { return i.f.name }
func (i memInfo) Size() int64        { return i.f.size }
func (i memInfo) Mode() fs.FileMode  { return 0444 }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }
