package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// LoadOptions configure Load.
type LoadOptions struct {
	Endpoints lakeclient.Endpoints
	Table     string // "namespace.table"
	Spec      Spec
	Replace   bool // drop an existing table of that name first
	// Append adds the spec's files to an existing demo table in a new
	// snapshot, continuing its ids, timestamps and file numbers (the
	// table's lakeweed.demo.rows and lakeweed.demo.files; Spec.FirstRow
	// and FirstFile are set from them).
	Append   bool
	Progress io.Writer // one line per file; nil = silent
}

// LoadResult describes what Load wrote.
type LoadResult struct {
	Table      string
	Location   string
	SnapshotID int64
	Files      []string
	Bytes      int64
	Rows       int64
	Elapsed    time.Duration
}

// Load generates the spec's files, uploads them through the S3 gateway and
// commits them as one snapshot of a new table through the REST catalog.
func Load(ctx context.Context, o LoadOptions) (*LoadResult, error) {
	start := time.Now()
	if err := o.Spec.Validate(); err != nil && !(o.Append && o.Spec.Indexed == "") {
		return nil, err
	}
	ident, err := lakeclient.ParseIdentifier(o.Table)
	if err != nil {
		return nil, err
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if created, err := lakeclient.EnsureTableBucket(ctx, o.Endpoints); err != nil {
		return nil, err
	} else if created {
		fmt.Fprintf(progress, "created table bucket %q (it did not exist)\n", o.Endpoints.Defaults().Warehouse)
	}
	cat, err := lakeclient.NewIcebergCatalog(ctx, o.Endpoints)
	if err != nil {
		return nil, fmt.Errorf("iceberg REST catalog %s: %w", o.Endpoints.Defaults().Iceberg, err)
	}
	ns := ident[:len(ident)-1]
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err)
	}
	var tbl *table.Table
	if o.Append {
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			return nil, fmt.Errorf("load table %s to append to: %w", o.Table, err)
		}
		if o.Spec, err = continueSpec(o.Spec, tbl.Properties()); err != nil {
			return nil, fmt.Errorf("append to %s: %w", o.Table, err)
		}
	} else if tbl, err = createTable(ctx, cat, ident, o); err != nil {
		return nil, err
	}
	if !tbl.Schema().Equals(IcebergSchema()) {
		return nil, fmt.Errorf("table %s has field ids %s, the demo files carry %s", o.Table, tbl.Schema(), IcebergSchema())
	}
	return writeFiles(ctx, o, tbl, start, progress)
}

// continueSpec sets s to continue the demo table whose properties are
// props (an empty Indexed takes the table's).
func continueSpec(s Spec, props iceberg.Properties) (Spec, error) {
	rows, err1 := strconv.ParseInt(props["lakeweed.demo.rows"], 10, 64)
	files, err2 := strconv.Atoi(props["lakeweed.demo.files"])
	if err1 != nil || err2 != nil || rows < 1 || files < 1 {
		return s, fmt.Errorf("it is not a demo table (no lakeweed.demo.rows and lakeweed.demo.files properties)")
	}
	s.FirstRow, s.FirstFile = rows, files
	if s.Indexed == "" {
		s.Indexed = Indexed(props["lakeweed.demo.indexed"])
	}
	s.PartitionTenant = props["lakeweed.demo.partition"] == "tenant"
	// appended files keep the table's layout
	s.BurstWindow, _ = strconv.ParseInt(props["lakeweed.demo.burst-window"], 10, 64)
	s.PlainTimestamps = props["lakeweed.demo.plain-timestamps"] == "true"
	return s, s.Validate()
}

// TenantPartitionSpec is the identity partition on tenant_id of demo
// -partition tenant.
func TenantPartitionSpec() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{FieldTenant}, FieldID: 1000, Name: "tenant_id", Transform: iceberg.IdentityTransform{}})
}

// createTable creates the demo table (dropping an existing one with
// o.Replace).
func createTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier, o LoadOptions) (*table.Table, error) {
	if exists, err := cat.CheckTableExists(ctx, ident); err != nil {
		return nil, fmt.Errorf("check table %s: %w", o.Table, err)
	} else if exists {
		if !o.Replace {
			return nil, fmt.Errorf("table %s already exists (use -replace to drop and reload it)", o.Table)
		}
		if err := cat.DropTable(ctx, ident); err != nil {
			return nil, fmt.Errorf("drop table %s: %w", o.Table, err)
		}
	}
	props := iceberg.Properties{
		"write.parquet.compression-codec": "zstd",
		"lakeweed.demo.rows":              fmt.Sprint(o.Spec.Rows),
		"lakeweed.demo.files":             fmt.Sprint(o.Spec.Files),
		"lakeweed.demo.indexed":           string(o.Spec.Indexed),
		"lakeweed.demo.seed":              fmt.Sprint(o.Spec.Seed),
		"lakeweed.demo.burst-window":      fmt.Sprint(o.Spec.BurstWindow),
		"lakeweed.demo.plain-timestamps":  fmt.Sprint(o.Spec.PlainTimestamps),
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(props)}
	if o.Spec.PartitionTenant {
		props["lakeweed.demo.partition"] = "tenant"
		spec := TenantPartitionSpec()
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	tbl, err := cat.CreateTable(ctx, ident, IcebergSchema(), opts...)
	if err != nil {
		return nil, fmt.Errorf("create table %s: %w", o.Table, err)
	}
	return tbl, nil
}

// writeFiles generates, uploads and commits the spec's files to tbl in one
// snapshot.
func writeFiles(ctx context.Context, o LoadOptions, tbl *table.Table, start time.Time, progress io.Writer) (*LoadResult, error) {
	location := strings.TrimSuffix(tbl.Location(), "/")
	bucket, prefix, ok := splitS3(location)
	if !ok {
		return nil, fmt.Errorf("table %s has location %q, want s3://bucket/...", o.Table, location)
	}
	client := lakeclient.NewS3Client(o.Endpoints)
	res := &LoadResult{Table: o.Table, Location: location}
	files := make(chan GeneratedFile, 1)
	g, gctx := safe.Group(ctx, "demo")
	g.Go(func() error {
		defer close(files)
		return Files(o.Spec, func(f GeneratedFile) error {
			select {
			case files <- f:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	var mu sync.Mutex
	dataFiles := make([]iceberg.DataFile, o.Spec.Files)
	for w := 0; w < 8; w++ {
		g.Go(func() error {
			for f := range files {
				key := fmt.Sprintf("%s/data/part-%05d.parquet", prefix, o.Spec.FirstFile+f.Index)
				loc := "s3://" + bucket + "/" + key
				// The manifest entry (size, column statistics) comes from
				// the footer of the bytes in hand: iceberg-go's AddFiles
				// would open each uploaded file with a whole-object GET
				// and drop it after the footer, which the gateway logs as
				// a reset connection per file.
				df, err := table.FileToDataFile(gctx, localFile{path: loc, b: f.Bytes}, loc, tbl.Schema(), tbl.Spec(), 0, tbl.Properties())
				if err != nil {
					return fmt.Errorf("statistics of %s: %w", key, err)
				}
				if _, err := client.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(f.Bytes)}); err != nil {
					return fmt.Errorf("upload s3://%s/%s: %w", bucket, key, err)
				}
				idx := "no page index, no bloom filters"
				if f.Indexed {
					idx = "page index + bloom filters on id, tenant_id"
				}
				mu.Lock()
				dataFiles[f.Index] = df
				res.Bytes += int64(len(f.Bytes))
				res.Rows += f.Rows
				if o.Spec.Files <= 100 || (f.Index+1)%100 == 0 {
					fmt.Fprintf(progress, "  [%d/%d] %s  %d rows  %.1f MiB  %s\n", f.Index+1, o.Spec.Files, key, f.Rows, float64(len(f.Bytes))/(1<<20), idx)
				}
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, df := range dataFiles {
		res.Files = append(res.Files, df.FilePath())
	}
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(ctx, dataFiles, iceberg.Properties{"lakeweed.loader": "weed pushdown demo"}); err != nil {
		return nil, fmt.Errorf("add files to %s: %w", o.Table, err)
	}
	if o.Append {
		if err := txn.SetProperties(iceberg.Properties{
			"lakeweed.demo.rows":  fmt.Sprint(o.Spec.FirstRow + o.Spec.Rows),
			"lakeweed.demo.files": fmt.Sprint(o.Spec.FirstFile + o.Spec.Files),
		}); err != nil {
			return nil, err
		}
	}
	tbl, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", o.Table, err)
	}
	res.SnapshotID = tbl.CurrentSnapshot().SnapshotID
	res.Elapsed = time.Since(start)
	return res, nil
}

func splitS3(loc string) (bucket, prefix string, ok bool) {
	rest, found := strings.CutPrefix(loc, "s3://")
	if !found {
		return "", "", false
	}
	bucket, prefix, found = strings.Cut(rest, "/")
	return bucket, prefix, found && bucket != "" && prefix != ""
}

// localFile is a read-only iceberg-go IO holding one file's bytes under its
// warehouse path, for reading the footer of a file about to be uploaded.
type localFile struct {
	path string
	b    []byte
}

func (l localFile) Open(name string) (icebergio.File, error) {
	if name != l.path {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &openBytes{Reader: bytes.NewReader(l.b), name: path.Base(name), size: int64(len(l.b))}, nil
}

func (l localFile) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrPermission}
}

// openBytes is an open localFile: its own fs.FileInfo.
type openBytes struct {
	*bytes.Reader
	name string
	size int64
}

func (f *openBytes) Close() error               { return nil }
func (f *openBytes) Stat() (fs.FileInfo, error) { return f, nil }
func (f *openBytes) Name() string               { return f.name }
func (f *openBytes) Size() int64                { return f.size }
func (f *openBytes) Mode() fs.FileMode          { return 0o444 }
func (f *openBytes) ModTime() time.Time         { return time.Time{} }
func (f *openBytes) IsDir() bool                { return false }
func (f *openBytes) Sys() any                   { return nil }
