package connector

// Filtering next to the data: a row group whose predicate must still be
// evaluated (not answered exactly by side indexes) is either read here —
// its planned pages fetched, decoded and filtered — or handed to the
// volume pushdown service holding the file (ScanRows), which decodes and
// filters it there and streams back only the matching rows' projected
// columns as Arrow IPC.
//
//	row group, predicate not exact
//	   │ can the volume evaluate it? (a route; a Substrait predicate with
//	   │ no residual, on top-level columns the file stores; not a constant
//	   │ or identity-partition column)
//	   │ -filterAt here ─▶ here;  volume ─▶ volume;  auto ─▶ chooseFilterSite
//	   ├─ volume: one ScanRows call a file (fileScan) for its row groups
//	   │          sent there (planned ranges, deleted positions, predicate,
//	   │          projection, LIMIT) ─▶ batches (rows, pieces of one Arrow
//	   │          IPC stream) ─▶ each row group's unit ─▶ project
//	   └─ here, or any failure of the call (counted, the reason kept):
//	              fetch pages ─▶ decode ─▶ filter ─▶ project
//
// The cost model (chooseFilterSite) compares the bytes each site makes
// cross to this process: here, the row group's planned pages of the
// columns read (predicate and output); from the volume, the Arrow bytes
// of the rows expected to match — candidates × estimated selectivity
// (capped at the LIMIT) × the decoded bytes of a projected row (from the
// footer). The selectivity is what this query has observed so far on
// either site, starting from a prior of 5% worth 4,096 rows of evidence.
// The volume is chosen when its bytes are at most half the pages' (an
// eighth when the volume service runs on this host: moving the decode
// there then saves no network, only this process's CPU) and the pages
// are over 64 KiB (1 MiB on this host): smaller pages cost about a round
// trip and the range cache serves them again to the next query — and
// when it is also the faster site by time: the volume decodes the
// predicate's columns and evaluates them with colfilter, the vectorized
// evaluator this process uses too (about 0.4 µs of CPU a candidate row on
// a string column, BenchmarkVolumeRowFilter in weed/pushdown/volume;
// 2 µs when it evaluated row by row), where this process decodes pages
// vectorized (about 0.2 µs), so the volume wins only where the link is
// the bottleneck: here = pages ÷ link bandwidth (100 MB/s assumed for a
// remote holder, none for one on this host) + candidates × 0.2 µs;
// volume = candidates × 0.4 µs + rows' bytes ÷ link.
// On one host (and for narrow rows anywhere) auto thus reads here;
// -filterAt volume overrides. Both sites keep the zstd pages they decoded
// (the page cache, pqcodec; a connector turns it on in its process), so on
// one host a warm read here decompresses nothing either and is the faster
// site (bench/results/scan.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
	"github.com/lakeweed/seaweedfs/weed/pushdown/rowbits"
)

// FilterSite is where a row group's predicate is evaluated when side
// indexes did not answer it exactly.
type FilterSite int

const (
	// FilterAuto chooses per row group by the cost model (chooseFilterSite).
	FilterAuto FilterSite = iota
	// FilterHere always reads the pages here.
	FilterHere
	// FilterVolume asks the volume whenever it can evaluate the predicate.
	FilterVolume
)

func (s FilterSite) String() string {
	return [...]string{"auto", "here", "volume"}[s]
}

// ParseFilterSite parses -filterAt.
func ParseFilterSite(s string) (FilterSite, error) {
	for _, f := range []FilterSite{FilterAuto, FilterHere, FilterVolume} {
		if s == f.String() {
			return f, nil
		}
	}
	return FilterAuto, fmt.Errorf("filter site %q: want auto, here or volume", s)
}

// Cost model constants (see the file comment).
const (
	scanPriorSelectivity = 0.05
	scanPriorRows        = 4096
	scanRatioRemote      = 2
	scanRatioLocal       = 8
	scanMinBytesRemote   = 64 << 10
	scanMinBytesLocal    = 1 << 20
	// time terms (see the file comment). scanVolumeNsPerRow: the CPU a
	// candidate row costs the volume's filter, BenchmarkVolumeRowFilter
	// (weed/pushdown/volume) cpu-ns/row: 80–170 on equalities of
	// dictionary-encoded columns, 350–480 on a LIKE over a plain string column (the
	// decode of the strings is most of it); 200–1,330 before the filter
	// was vectorized (colfilter)
	scanVolumeNsPerRow   = 400
	scanHereNsPerRow     = 200
	scanRemoteBytesPerNs = 0.1 // 100 MB/s
)

// filterSiteInput is what the cost model decides a row group on.
type filterSiteInput struct {
	PlannedBytes int64   // bytes reading it here fetches
	Candidates   int64   // planned rows less deleted ones
	RowBytes     float64 // decoded bytes of one projected row
	Selectivity  float64 // estimated share of candidates that match
	Limit        int64   // the query's LIMIT (0: none)
	Local        bool    // the volume service runs on this host
}

// chooseFilterSite says whether the volume should filter a row group, and why.
func chooseFilterSite(in filterSiteInput) (volume bool, reason string) {
	rows := float64(in.Candidates) * in.Selectivity
	if in.Limit > 0 {
		rows = min(rows, float64(in.Limit))
	}
	result := int64(rows * in.RowBytes)
	ratio, floor, where := int64(scanRatioRemote), int64(scanMinBytesRemote), "remote"
	if in.Local {
		ratio, floor, where = scanRatioLocal, scanMinBytesLocal, "on this host"
	}
	desc := fmt.Sprintf("pages %d B, %d candidates × selectivity %.3f × %.0f B a row = %d B of rows, holder %s", in.PlannedBytes, in.Candidates, in.Selectivity, in.RowBytes, result, where)
	switch {
	case in.PlannedBytes <= floor:
		return false, fmt.Sprintf("here: %s; pages at most %d B", desc, floor)
	case result*ratio > in.PlannedBytes:
		return false, fmt.Sprintf("here: %s; rows over 1/%d of the pages", desc, ratio)
	}
	hereNs := float64(in.Candidates) * scanHereNsPerRow
	volumeNs := float64(in.Candidates) * scanVolumeNsPerRow
	if !in.Local {
		hereNs += float64(in.PlannedBytes) / scanRemoteBytesPerNs
		volumeNs += float64(result) / scanRemoteBytesPerNs
	}
	if volumeNs >= hereNs {
		return false, fmt.Sprintf("here: %s; faster here (%.1f ms) than filtering beside the data (%.1f ms)", desc, hereNs/1e6, volumeNs/1e6)
	}
	return true, fmt.Sprintf("volume: %s; rows at most 1/%d of the pages", desc, ratio)
}

// scanCounters are one query's figures of where predicates were evaluated.
type scanCounters struct {
	volume, here, fallbacks                  atomic.Int64
	evaluated, matched                       atomic.Int64 // rows, both sites (the selectivity estimate)
	volumeEvaluated                          atomic.Int64
	volumeRows, volumeBytes                  atomic.Int64
	mu                                       sync.Mutex
	volumeReason, hereReason, fallbackReason string
}

type scanCountersKey struct{}

func scanCountersOf(ctx context.Context) *scanCounters {
	s, _ := ctx.Value(scanCountersKey{}).(*scanCounters)
	return s
}

// selectivity is the estimate of the share of candidates that match.
func (s *scanCounters) selectivity() float64 {
	return (float64(s.matched.Load()) + scanPriorSelectivity*scanPriorRows) / (float64(s.evaluated.Load()) + scanPriorRows)
}

func (s *scanCounters) chose(volume bool, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if volume {
		s.volume.Add(1)
		if s.volumeReason == "" {
			s.volumeReason = reason
		}
		return
	}
	s.here.Add(1)
	if s.hereReason == "" {
		s.hereReason = reason
	}
}

func (s *scanCounters) fellBack(err error) {
	s.fallbacks.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallbackReason = truncate(err.Error(), 300)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// fill puts the counters into st.
func (s *scanCounters) fill(st *Stats, site FilterSite) {
	st.FilterAt = site.String()
	st.FilterVolumeRowGroups, st.FilterHereRowGroups, st.FilterVolumeFallbacks = s.volume.Load(), s.here.Load(), s.fallbacks.Load()
	st.FilterVolumeRowsEvaluated, st.FilterVolumeRows, st.BytesFilterVolume = s.volumeEvaluated.Load(), s.volumeRows.Load(), s.volumeBytes.Load()
	s.mu.Lock()
	st.FilterVolumeReason, st.FilterHereReason, st.FilterFallbackReason = s.volumeReason, s.hereReason, s.fallbackReason
	s.mu.Unlock()
}

// volumeCanFilter says why the volume cannot evaluate the query's
// predicate on f ("" : it can).
func volumeCanFilter(p *prepared, f *fileRead) string {
	if _, isConst := p.expr.(predicate.Const); isConst {
		return "no predicate"
	}
	if p.req.GetPredicateKind() != pushdown_pb.PredicateKind_PREDICATE_SUBSTRAIT || len(p.req.GetPredicate()) == 0 {
		return "the predicate has no Substrait form"
	}
	if r := predicate.Residuals(p.expr); len(r) > 0 {
		return "the predicate has a residual part (" + truncate(r[0], 64) + ")"
	}
	if !f.fl.columns.Mapped {
		return "the file's columns are not mapped to field ids"
	}
	for _, id := range f.need.predIDs {
		if _, nested := p.parents[id]; nested {
			return "the predicate reads a nested field"
		}
		if _, isConst := f.fl.consts[id]; isConst {
			return "the predicate reads a column the file does not store"
		}
		if len(f.fl.columns.Leaves(id)) == 0 {
			return "the predicate reads a column the file does not store"
		}
	}
	return ""
}

// isLocalAddr reports whether addr's host is this host (loopback or one
// of its interfaces' addresses).
func isLocalAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// rowBytesOf is the decoded bytes of one row of the tops in row group rg,
// from the footer's uncompressed chunk sizes.
func (fl *fileLayout) rowBytesOf(rg int, tops []int) float64 {
	g := fl.md.RowGroup(rg)
	if g.NumRows() <= 0 {
		return 0
	}
	var n int64
	for _, top := range tops {
		for _, leaf := range fl.leavesOf[top] {
			if cc, err := g.ColumnChunk(leaf); err == nil {
				n += cc.TotalUncompressedSize()
			}
		}
	}
	return float64(n) / float64(g.NumRows())
}

// filter reads a row group whose predicate is to be evaluated by
// asking the volume holding the file; ok false: read it here (the site
// chosen was here, the volume cannot, or the call failed — counted).
// A file's row groups sent to the volume are asked in one ScanRows call
// (fileScan), made by the first of them to get here or started ahead by
// an earlier file's (startFileScan).
func (v *volumeStage) filter(ctx context.Context, p *prepared, f *fileRead, r *rowGroupRead) (rec arrow.RecordBatch, ok bool, err error) {
	sc := scanCountersOf(ctx)
	if _, isConst := p.expr.(predicate.Const); sc == nil || r.exact || isConst {
		return nil, false, nil // nothing to filter
	}
	if v.site == FilterHere {
		sc.chose(false, "here: -filterAt here")
		return nil, false, nil
	}
	if why := volumeCanFilter(p, f); why != "" {
		sc.chose(false, "here: "+why)
		return nil, false, nil
	}
	fs, err := v.fileScanOf(ctx, p, f)
	if p.q.Limit == 0 {
		// the next files' calls run while this one's batches are taken
		// (a LIMIT may not need them)
		for _, g := range f.ahead {
			if g.started.CompareAndSwap(false, true) {
				go v.startFileScan(ctx, p, g)
			}
		}
	}
	if err != nil || fs == nil {
		sc.chose(false, "here: the plan names no reachable volume pushdown service holding the file")
		return nil, false, err
	}
	slot := fs.slots[r.rg]
	if slot == nil {
		sc.chose(false, fs.here[r.rg])
		return nil, false, nil
	}
	sc.chose(true, slot.reason)
	rec, err = v.ft.takeScan(ctx, p, f, fs, slot, r)
	if errors.Is(err, errScanStoppedAtLimit) {
		return nil, false, nil // not evaluated there: read here, if still needed
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if code := status.Code(err); code == codes.Unavailable || code == codes.DeadlineExceeded {
			v.ft.volume.markDown(fs.addr, err) // the other files it holds skip it for a while
		}
		sc.fellBack(err)
		v.ft.fellBack(fs.addr, f.pf, err)
		return nil, false, nil
	}
	return rec, true, nil
}

// startFileScan makes f's ScanRows call ahead of its row groups' units,
// when they would make it (nothing counted: they count their choices).
func (v *volumeStage) startFileScan(ctx context.Context, p *prepared, f *fileRead) {
	if v.site == FilterHere || v.prepare == nil || v.prepare(ctx, p, f) != nil || volumeCanFilter(p, f) != "" {
		return
	}
	v.fileScanOf(ctx, p, f) //nolint:errcheck // its units see the error
}

// filterSiteOf runs the cost model on row group r of f, the volume at
// addr holding it.
func (v *volumeStage) filterSiteOf(p *prepared, f *fileRead, r *rowGroupRead, selectivity float64, local bool) (volume bool, reason string) {
	if v.site == FilterVolume {
		return true, "volume: -filterAt volume"
	}
	cands := r.numRows
	if r.rows != nil {
		cands = r.rows.Rows()
	}
	if r.deleted != nil {
		cands -= int64(r.deleted.GetCardinality())
	}
	in := filterSiteInput{Candidates: max(0, cands), RowBytes: f.fl.rowBytesOf(r.rg, f.need.outTopsPresent()),
		Selectivity: selectivity, Limit: p.q.Limit, Local: local}
	for _, br := range f.fl.needRanges(f.need.tops, r, v.pageAware) {
		in.PlannedBytes += br.Len
	}
	return chooseFilterSite(in)
}

// outTopsPresent are the output's top-level fields the file stores.
func (n *fileNeed) outTopsPresent() []int {
	var out []int
	for _, top := range n.outTops {
		if top >= 0 {
			out = append(out, top)
		}
	}
	return out
}

// scanSchemaJSON is the query schema's Iceberg JSON (encoded once).
func (p *prepared) scanSchemaJSON() ([]byte, error) {
	if p.schemaJSON == nil {
		return json.Marshal(p.schema)
	}
	p.schemaJSON.once.Do(func() { p.schemaJSON.b, p.schemaJSON.err = json.Marshal(p.schema) })
	return p.schemaJSON.b, p.schemaJSON.err
}

// lazyJSON is a JSON encoding made once.
type lazyJSON struct {
	once sync.Once
	b    []byte
	err  error
}

// fileScan is the one ScanRows call of a file: each of its row groups
// the cost model sends to the volume (decided together, when the first
// of them is read), asked at once — one call, one Arrow IPC stream, its
// schema sent once — and each batch handed, in order, to the unit
// reading its row group.
//
//	first unit of the file ─▶ cost model on each row group ─▶ slots
//	runScan: ScanRows(slots' row groups) ─▶ batch ─▶ IPC piece decoded
//	         ─▶ its row group's slot ─▶ takeScan (that unit): check rows,
//	         project ─▶ the row group's record
//
// Units take their slots in the order the stream fills them (both in
// row-group order), so the stream waits only on a unit that runs. A unit
// that fails on its batches cancels the call: the row groups not done
// are read here, counted as fallbacks.
type fileScan struct {
	addr   string
	slots  map[int]*scanSlot // the row groups asked, by row group
	here   map[int]string    // the others: why the cost model kept them here
	cancel context.CancelFunc

	mu  sync.Mutex
	err error // why the call ended before a slot's row group did
}

// scanSlot is one asked row group: its batches, in order, then closed.
type scanSlot struct {
	rg     int
	r      *rowGroupRead
	reason string
	ch     chan scanPiece
}

// scanPiece is one batch of a row group: its rows, checked, and their
// decoded columns (nil: none asked, or no rows).
type scanPiece struct {
	msg  *pushdown_pb.ScanRowsResponse
	keep []int64 // its rows, checked (scanBatchRows)
	rec  arrow.RecordBatch
}

// errScanStoppedAtLimit: the call met the query's LIMIT before it
// reached the row group.
var errScanStoppedAtLimit = errors.New("the file's ScanRows call stopped at the LIMIT before this row group")

func (fs *fileScan) fail(err error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.err == nil {
		fs.err = err
	}
}

func (fs *fileScan) failure() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.err
}

// fileScanOf makes f's ScanRows call once: nil when the plan names no
// volume holding f.
func (v *volumeStage) fileScanOf(ctx context.Context, p *prepared, f *fileRead) (*fileScan, error) {
	f.scanOnce.Do(func() {
		addr, routed, err := v.ft.volumeRoute(f.pf)
		if err != nil || !routed {
			f.scanErr = err
			return
		}
		fs := &fileScan{addr: addr, slots: map[int]*scanSlot{}, here: map[int]string{}}
		sc, local := scanCountersOf(ctx), isLocalAddr(addr)
		var asked []*scanSlot
		last := -1
		for _, ref := range f.rgRefs {
			if ref.GetRowsExact() {
				continue
			}
			r, err := f.rowGroupRead(ref, v.pageAware)
			if err != nil {
				continue // its unit reports it
			}
			if r.rg <= last {
				// the stream is in row-group order, which must be the units'
				fs.here[r.rg] = "here: the plan lists the file's row groups out of order"
				continue
			}
			volume, reason := v.filterSiteOf(p, f, r, sc.selectivity(), local)
			if !volume {
				fs.here[r.rg] = reason
				continue
			}
			last = r.rg
			slot := &scanSlot{rg: r.rg, r: r, reason: reason, ch: make(chan scanPiece, 1)}
			fs.slots[r.rg] = slot
			asked = append(asked, slot)
		}
		f.scan = fs
		if len(asked) == 0 {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, volumeCallTimeout)
		fs.cancel = cancel
		req, err := v.ft.scanRequest(p, f, asked)
		if err != nil {
			fs.fail(err)
			closeSlots(asked)
			cancel()
			return
		}
		go v.ft.runScan(cctx, fs, f.pf, req, asked, p.q.Limit)
	})
	return f.scan, f.scanErr
}

func closeSlots(slots []*scanSlot) {
	for _, s := range slots {
		close(s.ch)
	}
}

// scanRequest is the ScanRows request of f's asked row groups.
func (ft *fetcher) scanRequest(p *prepared, f *fileRead, asked []*scanSlot) (*pushdown_pb.ScanRowsRequest, error) {
	schemaJSON, err := p.scanSchemaJSON()
	if err != nil {
		return nil, fmt.Errorf("encode the schema: %w", err)
	}
	pf := f.pf
	req := &pushdown_pb.ScanRowsRequest{Path: pf.GetFile(), SizeBytes: pf.GetSizeBytes(), RecordCount: pf.GetRecordCount(), Identity: pf.GetIdentity(),
		SchemaJson: schemaJSON, PredicateKind: p.req.GetPredicateKind(), Predicate: p.req.GetPredicate(), Limit: max(0, p.q.Limit), IpcContinuation: true}
	for _, slot := range asked {
		r := slot.r
		g := &pushdown_pb.ScanRowGroup{RowGroup: int32(r.rg)}
		for _, rr := range r.rows {
			g.RowRanges = append(g.RowRanges, &pushdown_pb.RowRange{Start: rr.Start, End: rr.End})
		}
		if r.deleted != nil && !r.deleted.IsEmpty() {
			if g.DeletedPositions, err = r.deleted.ToBytes(); err != nil {
				return nil, err
			}
		}
		req.RowGroups = append(req.RowGroups, g)
	}
	for i, top := range f.need.outTops {
		if top >= 0 {
			req.ProjectedFieldIds = append(req.ProjectedFieldIds, int32(p.selectIDs[i]))
		}
	}
	if f.fl.mapping != nil {
		if req.NameMappingJson, err = json.Marshal(f.fl.mapping); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// runScan makes the call and hands each batch to its row group's slot,
// in order; every slot is closed when the call ends (its row group done,
// or not: fs.err says why).
func (ft *fetcher) runScan(ctx context.Context, fs *fileScan, pf *pushdown_pb.PlannedFile, req *pushdown_pb.ScanRowsRequest, asked []*scanSlot, limit int64) {
	defer fs.cancel()
	next := 0 // the slot being filled
	defer func() { closeSlots(asked[next:]) }()
	fail := func(err error) { fs.fail(fmt.Errorf("ScanRows %s: %w", pf.GetFile(), err)) }
	conn, err := ft.volume.conn(fs.addr)
	if err != nil {
		fail(fmt.Errorf("dial: %w", err))
		return
	}
	if ctx, err = ft.volume.sign(ctx, fs.addr, "ScanRows", req); err != nil {
		fail(fmt.Errorf("sign: %w", err))
		return
	}
	stream, err := pushdown_pb.NewPushdownVolumeClient(conn).ScanRows(ctx, req)
	if err != nil {
		fail(err)
		return
	}
	var ipcs ipcPieces
	defer ipcs.release()
	var rows int64
	last := int64(-1) // the slot's last row so far
	columns := len(req.GetProjectedFieldIds()) > 0
	sc := scanCountersOf(ctx)
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail(err)
			return
		}
		if next == len(asked) || msg.GetRowGroup() != int32(asked[next].rg) {
			fail(fmt.Errorf("a batch of row group %d out of the order asked", msg.GetRowGroup()))
			return
		}
		n := int64(len(msg.GetColumnsIpc()) + len(msg.GetRows()))
		ft.vol.bytes.Add(n)
		if sc != nil {
			sc.volumeBytes.Add(n)
		}
		slot := asked[next]
		piece := scanPiece{msg: msg}
		if piece.keep, err = scanBatchRows(msg, slot.r, last); err == nil && len(piece.keep) > 0 && columns {
			// a batch's columns decode in the order sent: a piece of
			// the call's one IPC stream needs the pieces before it
			if len(msg.GetColumnsIpc()) == 0 {
				err = errors.New("a batch of rows without their columns")
			} else {
				piece.rec, err = ipcs.next(msg.GetColumnsIpc(), msg.GetColumnsIpcContinues())
			}
		}
		if err != nil {
			fail(fmt.Errorf("row group %d: %w", slot.rg, err))
			return
		}
		if len(piece.keep) > 0 {
			last = piece.keep[len(piece.keep)-1]
		}
		rows += int64(len(piece.keep))
		select {
		case asked[next].ch <- piece:
		case <-ctx.Done():
			if piece.rec != nil {
				piece.rec.Release()
			}
			fail(ctx.Err())
			return
		}
		if msg.GetRowGroupDone() {
			close(asked[next].ch)
			next, last = next+1, -1
		}
	}
	ft.vol.calls.Add(1)
	if next < len(asked) {
		if limit > 0 && rows >= limit {
			fs.fail(errScanStoppedAtLimit)
		} else {
			fail(fmt.Errorf("the stream ended before row group %d did", asked[next].rg))
		}
	}
}

// ipcPieces decodes the columns of a call's batches: each either an
// Arrow IPC stream of its own or the next record batch message of the
// stream the previous one was part of.
type ipcPieces struct {
	feed bytes.Reader
	rd   *ipc.Reader
}

// next decodes one batch's columns (the caller releases the record).
func (d *ipcPieces) next(raw []byte, continues bool) (arrow.RecordBatch, error) {
	d.feed.Reset(raw)
	if !continues {
		d.release()
		rd, err := ipc.NewReader(&d.feed, ipc.WithAllocator(decodeMem))
		if err != nil {
			return nil, fmt.Errorf("Arrow IPC: %w", err)
		}
		d.rd = rd
	} else if d.rd == nil {
		return nil, errors.New("Arrow IPC: a batch continues a stream that never started")
	}
	if !d.rd.Next() {
		return nil, fmt.Errorf("Arrow IPC holds no record: %v", d.rd.Err())
	}
	if continues && d.feed.Len() > 0 {
		return nil, fmt.Errorf("Arrow IPC: %d bytes past the batch's record", d.feed.Len())
	}
	rec := d.rd.RecordBatch()
	rec.Retain()
	return rec, nil
}

func (d *ipcPieces) release() {
	if d.rd != nil {
		d.rd.Release()
		d.rd = nil
	}
}

// takeScan collects row group r's batches from its slot and projects
// them. On an error it cancels the file's call (the row groups not done
// are read here).
func (ft *fetcher) takeScan(ctx context.Context, p *prepared, f *fileRead, fs *fileScan, slot *scanSlot, r *rowGroupRead) (rec arrow.RecordBatch, err error) {
	fl, n := f.fl, f.need
	sc := scanCountersOf(ctx)
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
		if err != nil {
			fs.cancel()
			for piece := range slot.ch {
				if piece.rec != nil {
					piece.rec.Release()
				}
			}
		}
	}()
	tops := map[string]int{} // the file's top-level name → top
	for _, top := range n.outTops {
		if top >= 0 {
			tops[fl.arrow.Field(top).Name] = top
		}
	}
	var got, evaluated int64
	done := false
	for piece := range slot.ch {
		if keep := piece.keep; len(keep) > 0 {
			cols := map[int]*column{}
			if len(tops) > 0 {
				err = recordColumns(piece.rec, fl, keep, tops, cols)
			}
			if piece.rec != nil {
				piece.rec.Release()
			}
			if err != nil {
				return nil, fmt.Errorf("ScanRows %s row group %d: %w", f.pf.GetFile(), r.rg, err)
			}
			out, err := n.project(ctx, p, fl, r, cols, keep)
			releaseColumns(cols)
			if err != nil {
				return nil, err
			}
			recs = append(recs, out)
			got += int64(len(keep))
		} else if piece.rec != nil {
			piece.rec.Release()
		}
		if piece.msg.GetRowGroupDone() {
			done, evaluated = true, piece.msg.GetRowsEvaluated()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !done {
		why := fs.failure()
		if why == nil {
			why = fmt.Errorf("ScanRows %s: the call ended before row group %d did", f.pf.GetFile(), r.rg)
		}
		return nil, why
	}
	if p.q.Limit > 0 && got > p.q.Limit {
		return nil, fmt.Errorf("ScanRows %s: %d rows for a LIMIT of %d", f.pf.GetFile(), got, p.q.Limit)
	}
	if len(recs) == 0 {
		rec, err = n.project(ctx, p, fl, r, nil, nil)
	} else {
		rec, err = concatRecords(n.outSchema, recs)
	}
	if err != nil {
		return nil, err
	}
	if sc != nil {
		sc.volumeRows.Add(got)
		if done && p.q.Limit == 0 {
			// a LIMIT's evaluation stops early: only whole row groups count
			sc.volumeEvaluated.Add(evaluated)
			sc.evaluated.Add(evaluated)
			sc.matched.Add(got)
		}
	}
	return rec, nil
}

// scanBatchRows are a batch's row-group-local rows: ascending, after the
// previous batch's last row (last), planned and not deleted.
func scanBatchRows(msg *pushdown_pb.ScanRowsResponse, r *rowGroupRead, last int64) ([]int64, error) {
	bm, err := rowbits.Decode(msg.GetRows())
	if err != nil {
		return nil, fmt.Errorf("rows: %w", err)
	}
	if int64(bm.GetCardinality()) != msg.GetRowCount() {
		return nil, fmt.Errorf("a batch says %d rows and lists %d", msg.GetRowCount(), bm.GetCardinality())
	}
	keep := make([]int64, 0, bm.GetCardinality())
	it := bm.Iterator()
	for it.HasNext() {
		row := int64(it.Next())
		switch {
		case row <= last || row >= r.numRows:
			return nil, fmt.Errorf("row %d is out of order or past the row group's %d rows", row, r.numRows)
		case r.rows != nil && !r.rows.Overlaps(row, row+1):
			return nil, fmt.Errorf("row %d was not planned", row)
		case r.deleted != nil && r.deleted.Contains(uint64(r.firstRow+row)):
			return nil, fmt.Errorf("row %d is deleted", row)
		}
		keep = append(keep, row)
	}
	return keep, nil
}

// ipcColumns decodes an answer's Arrow IPC (a ReadRows file's) of the
// rows keep into cols, each wanted top typed as the file's layout types it.
func ipcColumns(raw []byte, fl *fileLayout, keep []int64, want map[string]int, cols map[int]*column) error {
	rd, err := ipc.NewReader(bytes.NewReader(raw), ipc.WithAllocator(decodeMem))
	if err != nil {
		return fmt.Errorf("Arrow IPC: %w", err)
	}
	defer rd.Release()
	if !rd.Next() {
		return fmt.Errorf("Arrow IPC holds no record: %v", rd.Err())
	}
	return recordColumns(rd.RecordBatch(), fl, keep, want, cols)
}

// recordColumns takes the wanted columns of got (the rows keep) into
// cols, each wanted top typed as the file's layout types it.
func recordColumns(got arrow.RecordBatch, fl *fileLayout, keep []int64, want map[string]int, cols map[int]*column) error {
	if got.NumRows() != int64(len(keep)) {
		return fmt.Errorf("%d rows decoded for %d asked", got.NumRows(), len(keep))
	}
	for j, fd := range got.Schema().Fields() {
		top, ok := want[fd.Name]
		if !ok {
			continue
		}
		if !arrow.TypeEqual(fd.Type, fl.arrow.Field(top).Type) {
			releaseColumns(cols)
			return fmt.Errorf("column %s came back as %s, the file's layout types it %s", fd.Name, fd.Type, fl.arrow.Field(top).Type)
		}
		a := got.Column(j)
		a.Retain()
		cols[top] = &column{arr: a, rows: keep}
	}
	var missing []string
	for name, top := range want {
		if cols[top] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		releaseColumns(cols)
		return fmt.Errorf("column %s is missing from the answer", strings.Join(missing, ", "))
	}
	return nil
}

// FilterSites is what -explain shows of where row groups would be
// filtered: per site the row groups the cost model would send there,
// estimated from the plan alone (no footer is read: a row's decoded
// bytes are taken as 4× its share of the file's planned bytes, the
// selectivity is the prior), and the first reason for each.
type FilterSites struct {
	Setting             FilterSite
	Exact, Here, Volume int
	HereReason          string
	VolumeReason        string
}

// ExplainFilterSites estimates from a plan where its row groups would be
// filtered under site (limit: the query's LIMIT).
func ExplainFilterSites(resp *pushdown_pb.ParquetPushdownResponse, site FilterSite, limit int64) FilterSites {
	out := FilterSites{Setting: site}
	note := func(volume bool, reason string) {
		if volume {
			out.Volume++
			if out.VolumeReason == "" {
				out.VolumeReason = reason
			}
			return
		}
		out.Here++
		if out.HereReason == "" {
			out.HereReason = reason
		}
	}
	for _, f := range filesOf(resp) {
		var planned int64
		for _, r := range f.given {
			planned += r.Len
		}
		addr := f.pf.GetReadEndpoint()
		for _, rg := range f.rgRefs {
			if rg.GetRowsExact() {
				out.Exact++
				continue
			}
			switch {
			case site == FilterHere:
				note(false, "here: -filterAt here")
				continue
			case addr == "":
				note(false, "here: the plan names no volume pushdown service holding the file")
				continue
			case site == FilterVolume:
				note(true, "volume: -filterAt volume")
				continue
			}
			cands := rg.GetRowCount()
			if len(rg.GetRowRanges()) > 0 {
				cands = 0
				for _, rr := range rg.GetRowRanges() {
					cands += rr.GetEnd() - rr.GetStart()
				}
			}
			in := filterSiteInput{PlannedBytes: planned / int64(max(1, len(f.rgRefs))), Candidates: cands,
				Selectivity: scanPriorSelectivity, Limit: limit, Local: isLocalAddr(addr)}
			if cands > 0 {
				in.RowBytes = 4 * float64(in.PlannedBytes) / float64(cands)
			}
			note(chooseFilterSite(in))
		}
	}
	return out
}
