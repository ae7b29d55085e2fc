package connector

// A plain read (no catalog, through the S3 gateway) of files storing a
// column iceberg-go's scan cannot project, read with the connector's own
// decoder:
//
//	iceberg-go PlanFiles (manifest pruning, the delete files of each file)
//	   ─▶ per file: footer (ranged GET) ─▶ stores a needed column as a
//	      fixed-size list? (iceberg-go v0.7.0's projection has no case for
//	      FIXED_SIZE_LIST and fails: "error encountered during schema visitor")
//	         ├─ no file does ─▶ iceberg-go's scan, as before
//	         └─ some file does ─▶ every file of the scan read here: a plan made
//	            on the client (every row group, whole; deleted positions from
//	            the file's delete files, deletes.Computer) read by readPlan
//	            through the S3 gateway, the predicate evaluated on the rows
//
// The rows and their order are those of iceberg-go's scan: files in the
// order it plans them, rows in file order.

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
)

// plainDeleteCacheBytes bounds the delete bitmaps a connector keeps for
// its own plain reads.
const plainDeleteCacheBytes = 64 << 20

// plainReadKey marks a context whose file reads go through the S3 gateway
// only (a plain read names no volume pushdown service).
type plainReadKey struct{}

func isPlainRead(ctx context.Context) bool {
	v, _ := ctx.Value(plainReadKey{}).(bool)
	return v
}

// unprojectable reports whether iceberg-go v0.7.0's scan cannot project a
// column stored with Arrow type t: its projection visitor has no case for
// fixed-size lists (the demo's embedding, written by arrow-go with the
// stored ARROW:schema).
func unprojectable(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.FixedSizeListType:
		return true
	case arrow.ListLikeType:
		return unprojectable(t.Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if unprojectable(f.Type) {
				return true
			}
		}
	}
	return false
}

// hasList reports whether an Iceberg type holds a list (only lists can be
// stored as fixed-size lists).
func hasList(t iceberg.Type) bool {
	switch t := t.(type) {
	case *iceberg.ListType:
		return true
	case *iceberg.StructType:
		for _, f := range t.FieldList {
			if hasList(f.Type) {
				return true
			}
		}
	case *iceberg.MapType:
		return hasList(t.KeyType) || hasList(t.ValueType)
	}
	return false
}

// plainFile is a scan task's file as a plan would describe it, its footer
// read through the S3 gateway (and its layout cached as planned files'
// are).
type plainFile struct {
	task table.FileScanTask
	pf   *pushdown_pb.PlannedFile
	fl   *fileLayout
}

// ownDecoderFiles lists the scan's files (tasks) with their footers when
// a field the query needs is stored by some file in a form iceberg-go
// cannot project (nil otherwise, without reading a footer when no needed
// field is a list).
func (c *Connector) ownDecoderFiles(ctx context.Context, p *prepared, tasks []table.FileScanTask) ([]*plainFile, error) {
	ids := p.selectIDsAndPredicate()
	lists := false
	for _, id := range ids {
		if f, ok := p.schema.FindFieldByID(id); ok && hasList(f.Type) {
			lists = true
		}
	}
	if !lists {
		return nil, nil
	}
	files := make([]*plainFile, len(tasks))
	ctx = context.WithValue(ctx, plainReadKey{}, true)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, t := range tasks {
		g.Go(func() error {
			pf, err := c.plainPlannedFile(gctx, t.File)
			if err != nil {
				return err
			}
			fl, err := c.layoutOf(gctx, pf, p.mapping)
			if err != nil {
				return err
			}
			files[i] = &plainFile{task: t, pf: pf, fl: fl}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("plain read of %s: %w", p.q.Table, err)
	}
	for _, f := range files {
		for _, id := range ids {
			if top, ok := f.fl.topFieldOf(id); ok && unprojectable(f.fl.arrow.Field(top).Type) {
				return files, nil
			}
		}
	}
	return nil, nil
}

// plainTasks are the scan's file tasks (manifest pruning by the
// predicate, when iceberg-go can evaluate it).
func (c *Connector) plainTasks(ctx context.Context, p *prepared, tbl *table.Table) ([]table.FileScanTask, error) {
	opts := []table.ScanOption{table.WithCaseSensitive(true)}
	if p.snapshot != 0 {
		opts = append(opts, table.WithSnapshotID(p.snapshot))
	}
	tasks, err := tbl.Scan(append([]table.ScanOption{table.WithRowFilter(p.unbound)}, opts...)...).PlanFiles(ctx)
	if err != nil && strings.Contains(err.Error(), "not implemented") {
		tasks, err = tbl.Scan(opts...).PlanFiles(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("plain read of %s: %w", p.q.Table, err)
	}
	return tasks, nil
}

// plainPlannedFile reads df's footer (through the range cache) and
// describes the file as the catalog's plan would.
func (c *Connector) plainPlannedFile(ctx context.Context, df iceberg.DataFile) (*pushdown_pb.PlannedFile, error) {
	pf := &pushdown_pb.PlannedFile{File: df.FilePath(), SizeBytes: df.FileSizeBytes()}
	ft, err := footer.Load(ctx, footer.Identity{Path: pf.File, Size: pf.SizeBytes}, &s3Source{c: c, pf: pf})
	if err != nil {
		return nil, err
	}
	pf.RecordCount, pf.Identity = ft.NumRows(), ft.IdentityDir()
	pf.FooterOffset, pf.FooterLength = ft.TrailerOffset(), ft.TrailerLength()
	pf.RowGroupsTotal = int32(ft.Meta.NumRowGroups())
	pf.RowGroupsPlanned = pf.RowGroupsTotal
	return pf, nil
}

// plainDecoded reads files (the scan's, in its order) with the
// connector's decoder: every row group whole, less the positions the
// files' delete files delete, the predicate evaluated on the rows.
func (c *Connector) plainDecoded(ctx context.Context, p *prepared, files []*plainFile, reason string, t0 time.Time) (*Result, error) {
	ctx = context.WithValue(ctx, plainReadKey{}, true)
	resp := &pushdown_pb.ParquetPushdownResponse{}
	dels := c.plainDeletes()
	for _, f := range files {
		deleted, err := c.plainDeleted(ctx, p, dels, f.task)
		if err != nil {
			return nil, err
		}
		resp.Files = append(resp.Files, f.pf)
		var first int64
		for rg := range f.fl.md.NumRowGroups() {
			n := f.fl.md.RowGroup(rg).NumRows()
			ref := &pushdown_pb.RowGroupRef{File: f.pf.File, RowGroup: int32(rg), FirstRow: first, RowCount: n}
			if deleted != nil && !deleted.IsEmpty() {
				in := deleted.Clone()
				in.RemoveRange(0, uint64(first))
				in.RemoveRange(uint64(first+n), math.MaxUint64)
				if !in.IsEmpty() {
					if ref.DeletedPositions, err = in.ToBytes(); err != nil {
						return nil, err
					}
				}
			}
			resp.RowGroups = append(resp.RowGroups, ref)
			first += n
			// the row group's extent, as a plan of every column gives it:
			// what a row group's read-ahead is charged by (a row group
			// reads only what it needs of it)
			if chunks := f.fl.chunks[rg]; len(chunks) > 0 {
				lo, hi := chunks[0].Start, chunks[0].Start+chunks[0].Length
				for _, ch := range chunks[1:] {
					lo, hi = min(lo, ch.Start), max(hi, ch.Start+ch.Length)
				}
				resp.FileRanges = append(resp.FileRanges, &pushdown_pb.FileRange{File: f.pf.File, Offset: lo, Length: hi - lo})
			}
		}
	}
	res, err := c.readPlan(ctx, p, resp)
	if err != nil {
		return nil, err
	}
	res.Stats.Pushdown, res.Stats.FallbackReason = false, reason
	res.Stats.Mode = "plain, decoded by the connector (iceberg-go cannot project a fixed-size list)"
	res.Stats.ReadMs = time.Since(t0).Milliseconds()
	return res, nil
}

// plainDeleted is the deleted positions of a task's data file (nil: none).
func (c *Connector) plainDeleted(ctx context.Context, p *prepared, dels *deletes.Computer, task table.FileScanTask) (*roaring64.Bitmap, error) {
	var files []deletes.File
	for _, group := range [][]iceberg.DataFile{task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles} {
		for _, df := range group {
			f, err := deletes.FromIceberg(df, -1)
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, nil
	}
	seq := int64(-1)
	if task.DataSequenceNumber != nil {
		seq = *task.DataSequenceNumber
	}
	r, err := dels.Deleted(ctx, deletes.DataFileFromIceberg(task.File, seq), files, p.schema, p.mapping)
	if err != nil {
		return nil, fmt.Errorf("deletes of %s: %w", task.File.FilePath(), err)
	}
	return r.Deleted, nil
}

// plainDeletes is the connector's delete computer for plain reads.
func (c *Connector) plainDeletes() *deletes.Computer {
	c.plainDelOnce.Do(func() {
		c.plainDel = deletes.NewComputer(c.openS3, nil, deletes.Options{CacheBytes: plainDeleteCacheBytes})
	})
	return c.plainDel
}

// openS3 opens a file of the table for the delete computer: its size from
// a HEAD, its bytes by ranged GETs through the range cache.
func (c *Connector) openS3(ctx context.Context, location string) (deletes.Source, error) {
	bucket, key, err := splitS3(location)
	if err != nil {
		return nil, err
	}
	head, err := c.plainS3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", location, err)
	}
	return &s3Source{c: c, pf: &pushdown_pb.PlannedFile{File: location, SizeBytes: aws.ToInt64(head.ContentLength)}}, nil
}

// s3Source reads a file through the connector's fetcher (range cache,
// ranged GETs through the S3 gateway): a footer.Source and a
// deletes.Source.
type s3Source struct {
	c  *Connector
	pf *pushdown_pb.PlannedFile
}

func (s *s3Source) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	ctx = context.WithValue(ctx, plainReadKey{}, true)
	sf, err := s.c.fetch.fetch(ctx, s.pf, nil, []byteRange{{Off: off, Len: int64(len(p))}})
	if err != nil {
		return 0, err
	}
	return sf.ReadAt(p, off)
}

func (s *s3Source) Size() int64 { return s.pf.SizeBytes }

// plainOwn holds what a connector keeps for its own plain reads.
type plainOwn struct {
	plainDelOnce sync.Once
	plainDel     *deletes.Computer
}
