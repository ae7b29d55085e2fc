package fileread

import (
	"context"
	"fmt"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/operation"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
)

// AdjustedUrl and GetDataCenter make a Reader a filer_pb.FilerClient.
func (r *Reader) AdjustedUrl(loc *filer_pb.Location) string { return loc.Url }
func (r *Reader) GetDataCenter() string                     { return "" }

// WriteFile stores data at location (s3://bucket/key or a filer path),
// replacing what was there. The chunk is placed on this Reader's local
// volume server when it has one, so side files live beside their data.
func (r *Reader) WriteFile(ctx context.Context, location string, data []byte) error {
	fp, err := FilerPath(location)
	if err != nil {
		return err
	}
	dir, name := util.FullPath(fp).DirAndName()
	now := time.Now()
	entry := &filer_pb.Entry{Name: name, Attributes: &filer_pb.FuseAttributes{
		Mtime: now.Unix(), Crtime: now.Unix(), FileMode: uint32(0644), FileSize: uint64(len(data)), Mime: "application/octet-stream",
	}}
	if len(data) > 0 {
		uploader, err := operation.NewUploader()
		if err != nil {
			return fmt.Errorf("write %s: %w", perr.Quote(fp), err)
		}
		assign := &filer_pb.AssignVolumeRequest{Count: 1, Path: fp, DataNode: r.localHost}
		fileID, res, err, _ := uploader.UploadWithRetry(r, assign, &operation.UploadOption{Filename: name, MimeType: "application/octet-stream", MaxAttempts: 3},
			util.NewBytesReader(data))
		if err != nil {
			return fmt.Errorf("write %s: upload: %w", perr.Quote(fp), err)
		}
		if res.Error != "" {
			return fmt.Errorf("write %s: upload: %s", perr.Quote(fp), res.Error)
		}
		entry.Chunks = []*filer_pb.FileChunk{res.ToPbFileChunk(fileID, 0, now.UnixNano())}
	}
	return r.WithFilerClient(false, func(c filer_pb.SeaweedFilerClient) error {
		return filer_pb.CreateEntry(ctx, c, &filer_pb.CreateEntryRequest{Directory: dir, Entry: entry, SkipCheckParentDirectory: false})
	})
}
