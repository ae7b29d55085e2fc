package tableimport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/uuid"

	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// Options configure Import.
type Options struct {
	Dir          string // local table folder
	Table        string // namespace.name (a.b.name for nested namespaces)
	StripPrefix  string // prefix of the written paths that is Dir; "" = the metadata's location
	MetadataFile string // "" = version-hint.text, else the newest
	Endpoints    lakeclient.Endpoints
	Replace      bool // drop an existing table of that name (after the upload)
	DryRun       bool // check and rewrite, upload and register nothing
	// AllowSizeMismatch imports files whose size differs from their
	// manifest entry's file_size_in_bytes instead of refusing the table.
	AllowSizeMismatch bool
	// SkipUnreadableSnapshots leaves out the snapshots whose manifest list
	// cannot be read (see PrepareOptions).
	SkipUnreadableSnapshots bool
	Concurrency             int // parallel uploads (default 8)
	// Progress is called as bytes are uploaded (may be nil).
	Progress func(done, total int64)
	// Log receives one line per step (may be nil).
	Log io.Writer
}

// Result describes an import.
type Result struct {
	*Plan
	Table      string
	Registered bool
	Replaced   bool
	Elapsed    time.Duration
}

// TableLocation is where the import puts a table: the layout SeaweedFS's
// Iceberg REST catalog gives tables it creates, s3://<bucket>/<ns>/<name>-<uuid>
// (nested namespaces joined by dots). A fresh uuid per import keeps a
// replaced table's files apart from the new ones.
func TableLocation(bucket string, ident table.Identifier, id uuid.UUID) string {
	ns := strings.Join(ident[:len(ident)-1], ".")
	return fmt.Sprintf("s3://%s/%s/%s-%s", bucket, ns, ident[len(ident)-1], id)
}

// Import checks the table folder, rewrites its metadata onto the new
// location, uploads everything through the S3 gateway and registers the
// table with the Iceberg REST catalog. Nothing is uploaded when the source
// has a problem or the table exists without Replace; uploaded files are
// removed again when registration fails.
func Import(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	ident, err := lakeclient.ParseIdentifier(o.Table)
	if err != nil {
		return nil, err
	}
	e := o.Endpoints.Defaults()
	location := TableLocation(e.Warehouse, ident, uuid.New())
	plan, err := Prepare(PrepareOptions{Dir: o.Dir, StripPrefix: o.StripPrefix, MetadataFile: o.MetadataFile, Location: location,
		AllowSizeMismatch: o.AllowSizeMismatch, SkipUnreadableSnapshots: o.SkipUnreadableSnapshots})
	if err != nil {
		return nil, err
	}
	defer plan.Close()
	res := &Result{Plan: plan, Table: o.Table}
	logf("metadata: %s (%s)", plan.MetadataFile, plan.MetadataReason)
	logf("paths under %q move to %s", plan.SourcePrefix, plan.Location)
	for _, n := range plan.Notes {
		logf("note: %s", n)
	}
	if o.DryRun {
		res.Elapsed = time.Since(start)
		return res, nil
	}

	if created, err := lakeclient.EnsureTableBucket(ctx, e); err != nil {
		return nil, fmt.Errorf("%w; nothing was imported", err)
	} else if created {
		logf("created table bucket %q (it did not exist)", e.Warehouse)
	}
	cat, err := lakeclient.NewIcebergCatalog(ctx, e)
	if err != nil {
		return nil, fmt.Errorf("iceberg REST catalog %s: %w", e.Iceberg, err)
	}
	exists, err := cat.CheckTableExists(ctx, ident)
	if err != nil && !errors.Is(err, catalog.ErrNoSuchNamespace) {
		return nil, fmt.Errorf("check table %s: %w", o.Table, err)
	}
	if exists && !o.Replace {
		return nil, fmt.Errorf("table %s already exists (use -replace to drop it and import again); nothing was imported", o.Table)
	}

	client := lakeclient.NewS3Client(e)
	logf("uploading %d files, %s, to s3://%s", len(plan.Objects), humanBytes(plan.Bytes()), plan.Bucket)
	uploaded, err := upload(ctx, client, plan, o.Concurrency, o.Progress)
	if err != nil {
		removeObjects(client, plan.Bucket, uploaded)
		return nil, err
	}
	undo := func(cause error) error {
		if n := removeObjects(client, plan.Bucket, uploaded); n > 0 {
			return fmt.Errorf("%w (removed the %d uploaded files again)", cause, n)
		}
		return cause
	}
	ns := ident[:len(ident)-1]
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, undo(fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err))
	}
	if exists {
		if err := cat.DropTable(ctx, ident); err != nil && !errors.Is(err, catalog.ErrNoSuchTable) {
			return nil, undo(fmt.Errorf("drop table %s: %w", o.Table, err))
		}
		res.Replaced = true
	}
	if _, err := cat.RegisterTable(ctx, ident, plan.MetadataLocation); err != nil {
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			return nil, undo(fmt.Errorf("table %s already exists (created while importing; use -replace)", o.Table))
		}
		return nil, undo(fmt.Errorf("register %s at %s: %w", o.Table, plan.MetadataLocation, err))
	}
	res.Registered = true
	res.Elapsed = time.Since(start)
	return res, nil
}

// multipartThreshold is the size above which a file goes up in parts.
const (
	multipartThreshold = 64 << 20
	multipartPartSize  = 16 << 20
)

// upload puts every object of the plan into the bucket, largest first, and
// returns the keys it put (also on failure, for cleanup).
func upload(ctx context.Context, client *s3.Client, plan *Plan, concurrency int, progress func(done, total int64)) ([]string, error) {
	if concurrency <= 0 {
		concurrency = 8
	}
	total := plan.Bytes()
	var done atomic.Int64
	report := func(n int64) {
		d := done.Add(n)
		if progress != nil {
			progress(d, total)
		}
	}
	if progress != nil {
		progress(0, total)
	}
	var mu sync.Mutex
	var keys []string
	g, gctx := safe.Group(ctx, "tableimport")
	g.SetLimit(concurrency)
	// The metadata file the catalog will point at goes last, after
	// everything it references is in place.
	var current *Object
	for i := range plan.Objects {
		obj := plan.Objects[i]
		if obj.Key == strings.TrimPrefix(plan.MetadataLocation, "s3://"+plan.Bucket+"/") {
			current = &plan.Objects[i]
			continue
		}
		g.Go(func() error {
			if err := putFile(gctx, client, plan.Bucket, obj, report); err != nil {
				return err
			}
			mu.Lock()
			keys = append(keys, obj.Key)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return keys, err
	}
	if current != nil {
		if err := putFile(ctx, client, plan.Bucket, *current, report); err != nil {
			return keys, err
		}
		keys = append(keys, current.Key)
	}
	return keys, nil
}

func putFile(ctx context.Context, client *s3.Client, bucket string, obj Object, report func(int64)) error {
	f, err := os.Open(obj.Source)
	if err != nil {
		return err
	}
	defer f.Close()
	if obj.Size <= multipartThreshold {
		_, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(obj.Key),
			Body: f, ContentLength: aws.Int64(obj.Size)})
		if err != nil {
			return fmt.Errorf("upload s3://%s/%s: %w", bucket, obj.Key, err)
		}
		report(obj.Size)
		return nil
	}
	mp, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(obj.Key)})
	if err != nil {
		return fmt.Errorf("upload s3://%s/%s: %w", bucket, obj.Key, err)
	}
	abort := func(cause error) error {
		_, _ = client.AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(obj.Key), UploadId: mp.UploadId})
		return fmt.Errorf("upload s3://%s/%s: %w", bucket, obj.Key, cause)
	}
	var parts []types.CompletedPart
	for off, num := int64(0), int32(1); off < obj.Size; off, num = off+multipartPartSize, num+1 {
		n := min(int64(multipartPartSize), obj.Size-off)
		out, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(obj.Key), UploadId: mp.UploadId,
			PartNumber: aws.Int32(num), Body: io.NewSectionReader(f, off, n), ContentLength: aws.Int64(n)})
		if err != nil {
			return abort(err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
		report(n)
	}
	if _, err := client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(obj.Key),
		UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		return abort(err)
	}
	return nil
}

// removeObjects deletes keys (best effort) and returns how many went.
func removeObjects(client *s3.Client, bucket string, keys []string) int {
	n := 0
	for _, k := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err == nil {
			n++
		}
		cancel()
	}
	return n
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Summary is a few lines describing the import for people.
func (r *Result) Summary() string {
	var b strings.Builder
	kinds := r.CountByKind()
	var parts []string
	for _, k := range sortedKinds(kinds) {
		parts = append(parts, fmt.Sprintf("%d %s", kinds[k], k))
	}
	verb := "imported"
	switch {
	case !r.Registered:
		verb = "checked (dry run, nothing uploaded)"
	case r.Replaced:
		verb = "imported (replacing the previous table)"
	}
	fmt.Fprintf(&b, "%s %s: format v%d, %d snapshots\n", verb, r.Table, r.FormatVersion, r.Snapshots)
	fmt.Fprintf(&b, "  files:     %d (%s), %s\n", len(r.Objects), strings.Join(parts, ", "), humanBytes(r.Bytes()))
	fmt.Fprintf(&b, "  rewritten: %d paths in %d files\n", r.PathsRewritten, r.rewrittenFiles())
	fmt.Fprintf(&b, "  location:  %s\n", r.Location)
	fmt.Fprintf(&b, "  metadata:  %s\n", r.MetadataLocation)
	if r.SkippedSnapshots > 0 {
		fmt.Fprintf(&b, "  skipped:   %d unreadable snapshots (see the note above)\n", r.SkippedSnapshots)
	}
	if r.Unreferenced > 0 {
		fmt.Fprintf(&b, "  left out:  %d files in the folder that the table does not reference\n", r.Unreferenced)
	}
	fmt.Fprintf(&b, "  elapsed:   %s\n", r.Elapsed.Round(time.Millisecond))
	return b.String()
}

func (p *Plan) rewrittenFiles() int {
	n := 0
	for _, o := range p.Objects {
		if o.Rewritten {
			n++
		}
	}
	return n
}
