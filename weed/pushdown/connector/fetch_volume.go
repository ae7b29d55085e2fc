package connector

// Reads next to the data: the plan names, per file, the healthy volume
// pushdown service beside a volume server holding its chunks
// (PlannedFile.read_endpoint). The fetch stage reads the file's ranges
// there with ReadRanges, batched and bounded per call:
//
//	ranges of one file ─▶ pieces ≤ volumeBatchBytes ─▶ batches (≤ volumeBatchBytes, ≤ volumeBatchRanges)
//	   │ ReadRanges, signed with the caller's own S3 credentials (SigV4, as Plan)
//	   ├─ ok ──────────────────────────▶ bytes
//	   └─ any failure (-read auto) ─────▶ the same ranges through the S3 gateway
//	      (unavailable, refused, too large, changed, a wrong answer); an
//	      unreachable endpoint is skipped for volumeDownFor
//
// Access control: the call carries the caller's own S3 identity, which the
// volume service checks with the S3 gateway's IAM code (Read on the file's
// bucket and key). A refusal falls back to a ranged GET through the S3
// gateway signed with the same credentials, which the gateway authorizes
// itself: the fallback reads only what the caller could read from S3
// directly, so it never widens access; a caller S3 refuses gets the
// gateway's AccessDenied. -read volume turns every fallback into an error.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/glog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// ReadPath is where the connector reads planned files' bytes.
type ReadPath int

const (
	// ReadAuto reads from the volume pushdown service the plan names for a
	// file, through the S3 gateway where it names none or the read fails.
	ReadAuto ReadPath = iota
	// ReadVolume reads every planned file from its volume pushdown service;
	// a file without one, or a failed read, is an error.
	ReadVolume
	// ReadS3 reads everything through the S3 gateway.
	ReadS3
)

func (r ReadPath) String() string {
	switch r {
	case ReadVolume:
		return "volume"
	case ReadS3:
		return "s3"
	}
	return "auto"
}

// ParseReadPath parses "auto", "volume" or "s3".
func ParseReadPath(s string) (ReadPath, error) {
	for _, r := range []ReadPath{ReadAuto, ReadVolume, ReadS3} {
		if s == r.String() {
			return r, nil
		}
	}
	return ReadAuto, fmt.Errorf("read path %s: want auto, volume or s3", perr.Quote(s))
}

// Bounds of one ReadRanges call (the service's defaults allow 128 MiB and
// 100,000 ranges) and of the calls in flight for one fetch.
const (
	volumeBatchBytes    = 8 << 20
	volumeBatchRanges   = 1024
	volumeCallsInFlight = 8
	volumeCallTimeout   = 30 * time.Second
	// volumeDownFor is how long an endpoint that could not be reached is
	// skipped (its files read through the S3 gateway meanwhile).
	volumeDownFor = 10 * time.Second
)

// volumeReader calls ReadRanges on volume pushdown services.
type volumeReader struct {
	conn func(addr string) (grpc.ClientConnInterface, error)
	// sign adds the caller's credentials to a call of method at addr.
	sign func(ctx context.Context, addr, method string, req proto.Message) (context.Context, error)

	mu   sync.Mutex
	down map[string]downEndpoint
}

// downEndpoint is an endpoint skipped until a time, and why.
type downEndpoint struct {
	until time.Time
	err   error
}

// volumeCounters are what the fetcher read from volume pushdown services.
type volumeCounters struct {
	bytes, local, ranges, calls, fallbacks atomic.Int64
	reason                                 atomic.Pointer[string] // the last fallback's
}

// isDown returns why addr is skipped (nil: it is not).
func (v *volumeReader) isDown(addr string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if d, ok := v.down[addr]; ok && time.Now().Before(d.until) {
		return d.err
	}
	return nil
}

func (v *volumeReader) markDown(addr string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.down == nil {
		v.down = map[string]downEndpoint{}
	}
	v.down[addr] = downEndpoint{time.Now().Add(volumeDownFor), err}
}

// volumeRoute is the volume pushdown service to read pf from (ok false:
// read through the S3 gateway).
func (ft *fetcher) volumeRoute(pf *pushdown_pb.PlannedFile) (addr string, ok bool, err error) {
	if ft.path == ReadS3 || ft.volume == nil {
		return "", false, nil
	}
	addr = pf.GetReadEndpoint()
	switch {
	case addr == "" && ft.path == ReadVolume:
		return "", false, fmt.Errorf("%s: the plan names no volume pushdown service holding it (-read volume reads only from one)", pf.GetFile())
	case addr == "":
		return "", false, nil
	}
	if down := ft.volume.isDown(addr); down != nil && ft.path == ReadAuto {
		ft.fellBack(addr, pf, fmt.Errorf("skipped for %s after failing: %w", volumeDownFor, down))
		return "", false, nil
	}
	return addr, true, nil
}

// piece is [r.Off, r.Off+r.Len) of ranges[of], at offset at of it.
type piece struct {
	r      byteRange
	of, at int
}

// readVolume reads rs of pf from the volume pushdown service at addr, in
// batched calls; a failed call's ranges are read through the S3 gateway
// (ReadAuto) or fail the read (ReadVolume).
func (ft *fetcher) readVolume(ctx context.Context, addr string, pf *pushdown_pb.PlannedFile, id fileVersion, rs []byteRange) ([][]byte, error) {
	out := make([][]byte, len(rs))
	var batches [][]piece
	var cur []piece
	var curBytes int64
	for i, r := range rs {
		out[i] = make([]byte, r.Len)
		for at := int64(0); at < r.Len; at += volumeBatchBytes {
			p := piece{r: byteRange{Off: r.Off + at, Len: min(volumeBatchBytes, r.Len-at)}, of: i, at: int(at)}
			if len(cur) > 0 && (curBytes+p.r.Len > volumeBatchBytes || len(cur) >= volumeBatchRanges) {
				batches, cur, curBytes = append(batches, cur), nil, 0
			}
			cur, curBytes = append(cur, p), curBytes+p.r.Len
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	g, gctx := safe.Group(ctx, "connector")
	g.SetLimit(volumeCallsInFlight)
	for _, b := range batches {
		g.Go(func() error {
			err := ft.volumeCall(gctx, addr, pf, b, out)
			if err == nil {
				return nil
			}
			if gctx.Err() != nil {
				return gctx.Err()
			}
			var changed *FileChangedError
			if ft.path == ReadVolume || errors.As(err, &changed) {
				return err
			}
			ft.fellBack(addr, pf, err)
			pieces := make([]byteRange, len(b))
			for i, p := range b {
				pieces[i] = p.r
			}
			got, err := ft.readS3(gctx, id, pieces)
			if err != nil {
				return err
			}
			for i, p := range b {
				copy(out[p.of][p.at:], got[i])
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// volumeCall reads one batch with ReadRanges into out.
func (ft *fetcher) volumeCall(ctx context.Context, addr string, pf *pushdown_pb.PlannedFile, batch []piece, out [][]byte) error {
	req := &pushdown_pb.ReadRangesRequest{Path: pf.GetFile(), ExpectedSize: pf.GetSizeBytes(), Ranges: make([]*pushdown_pb.FileRange, len(batch))}
	for i, p := range batch {
		req.Ranges[i] = &pushdown_pb.FileRange{Offset: p.r.Off, Length: p.r.Len}
	}
	conn, err := ft.volume.conn(addr)
	if err != nil {
		err = fmt.Errorf("dial: %w", err)
		ft.volume.markDown(addr, err)
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, volumeCallTimeout)
	defer cancel()
	if cctx, err = ft.volume.sign(cctx, addr, "ReadRanges", req); err != nil {
		return fmt.Errorf("sign ReadRanges: %w", err)
	}
	resp, err := pushdown_pb.NewPushdownVolumeClient(conn).ReadRanges(cctx, req)
	if err != nil {
		err = fmt.Errorf("ReadRanges %s: %w", pf.GetFile(), err)
		if code := status.Code(err); ctx.Err() == nil && (code == codes.Unavailable || code == codes.DeadlineExceeded) {
			ft.volume.markDown(addr, err)
		}
		return err
	}
	if resp.GetFileSize() != pf.GetSizeBytes() {
		return &FileChangedError{File: pf.GetFile(), PlannedSize: pf.GetSizeBytes(), Size: resp.GetFileSize(), Detail: "its size differs (volume pushdown service " + addr + ")"}
	}
	if len(resp.GetData()) != len(batch) {
		return fmt.Errorf("ReadRanges %s: %d ranges answered, %d asked", pf.GetFile(), len(resp.GetData()), len(batch))
	}
	for i, p := range batch {
		if int64(len(resp.Data[i])) != p.r.Len {
			return fmt.Errorf("ReadRanges %s: range [%d, %d) answered with %d bytes", pf.GetFile(), p.r.Off, p.r.Off+p.r.Len, len(resp.Data[i]))
		}
	}
	for i, p := range batch {
		copy(out[p.of][p.at:], resp.Data[i])
		ft.vol.bytes.Add(p.r.Len)
	}
	ft.vol.local.Add(resp.GetBytesLocal())
	ft.vol.ranges.Add(int64(len(batch)))
	ft.vol.calls.Add(1)
	return nil
}

// fellBack counts a volume read done through the S3 gateway instead.
func (ft *fetcher) fellBack(addr string, pf *pushdown_pb.PlannedFile, err error) {
	ft.vol.fallbacks.Add(1)
	reason := fmt.Sprintf("volume pushdown service %s: %v", addr, err)
	if len(reason) > 300 {
		reason = reason[:300]
	}
	ft.vol.reason.Store(&reason)
	glog.V(1).Infof("pushdown: %s read through the S3 gateway: %s", pf.GetFile(), reason)
}
