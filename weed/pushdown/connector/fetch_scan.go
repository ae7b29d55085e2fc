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
//	   ├─ volume: ScanRows(planned ranges, deleted positions, predicate,
//	   │          projection, LIMIT) ─▶ batches (rows, Arrow IPC) ─▶ project
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
// -filterAt volume overrides.

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

// volumeFilter reads a row group whose predicate is to be evaluated by
// asking the volume holding the file; ok false: read it here (the site
// chosen was here, the volume cannot, or the call failed — counted).
func (c *Connector) volumeFilter(ctx context.Context, p *prepared, f *fileRead, r *rowGroupRead) (rec arrow.RecordBatch, ok bool, err error) {
	sc := scanCountersOf(ctx)
	if _, isConst := p.expr.(predicate.Const); sc == nil || r.exact || isConst {
		return nil, false, nil // nothing to filter
	}
	if c.opts.FilterAt == FilterHere {
		sc.chose(false, "here: -filterAt here")
		return nil, false, nil
	}
	if why := volumeCanFilter(p, f); why != "" {
		sc.chose(false, "here: "+why)
		return nil, false, nil
	}
	addr, routed, err := c.fetch.volumeRoute(f.pf)
	if err != nil || !routed {
		sc.chose(false, "here: the plan names no reachable volume pushdown service holding the file")
		return nil, false, err
	}
	cands := r.numRows
	if r.rows != nil {
		cands = r.rows.Rows()
	}
	if r.deleted != nil {
		cands -= int64(r.deleted.GetCardinality())
	}
	in := filterSiteInput{Candidates: max(0, cands), RowBytes: f.fl.rowBytesOf(r.rg, f.need.outTopsPresent()),
		Selectivity: sc.selectivity(), Limit: p.q.Limit, Local: isLocalAddr(addr)}
	for _, br := range f.fl.needRanges(f.need.tops, r, c.opts.Mode == PageAware) {
		in.PlannedBytes += br.Len
	}
	volume, reason := chooseFilterSite(in)
	if c.opts.FilterAt == FilterVolume {
		volume, reason = true, "volume: -filterAt volume"
	}
	sc.chose(volume, reason)
	if !volume {
		return nil, false, nil
	}
	rec, err = c.fetch.scanRows(ctx, addr, p, f, r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		if code := status.Code(err); code == codes.Unavailable || code == codes.DeadlineExceeded {
			c.fetch.volume.markDown(addr, err) // its other row groups skip it for a while
		}
		sc.fellBack(err)
		c.fetch.fellBack(addr, f.pf, err)
		return nil, false, nil
	}
	return rec, true, nil
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

// scanRows calls ScanRows for row group r and projects the batches it
// streams back.
func (ft *fetcher) scanRows(ctx context.Context, addr string, p *prepared, f *fileRead, r *rowGroupRead) (arrow.RecordBatch, error) {
	fl, n, pf := f.fl, f.need, f.pf
	sc := scanCountersOf(ctx)
	schemaJSON, err := p.scanSchemaJSON()
	if err != nil {
		return nil, fmt.Errorf("encode the schema: %w", err)
	}
	g := &pushdown_pb.ScanRowGroup{RowGroup: int32(r.rg)}
	for _, rr := range r.rows {
		g.RowRanges = append(g.RowRanges, &pushdown_pb.RowRange{Start: rr.Start, End: rr.End})
	}
	if r.deleted != nil && !r.deleted.IsEmpty() {
		if g.DeletedPositions, err = r.deleted.ToBytes(); err != nil {
			return nil, err
		}
	}
	req := &pushdown_pb.ScanRowsRequest{Path: pf.GetFile(), SizeBytes: pf.GetSizeBytes(), RecordCount: pf.GetRecordCount(), Identity: pf.GetIdentity(),
		RowGroups: []*pushdown_pb.ScanRowGroup{g}, SchemaJson: schemaJSON, PredicateKind: p.req.GetPredicateKind(), Predicate: p.req.GetPredicate(), Limit: max(0, p.q.Limit)}
	tops := map[string]int{} // the file's top-level name → top
	for i, top := range n.outTops {
		if top >= 0 {
			req.ProjectedFieldIds = append(req.ProjectedFieldIds, int32(p.selectIDs[i]))
			tops[fl.arrow.Field(top).Name] = top
		}
	}
	if fl.mapping != nil {
		if req.NameMappingJson, err = json.Marshal(fl.mapping); err != nil {
			return nil, err
		}
	}
	conn, err := ft.volume.conn(addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, volumeCallTimeout)
	defer cancel()
	if cctx, err = ft.volume.sign(cctx, addr, "ScanRows", req); err != nil {
		return nil, fmt.Errorf("sign ScanRows: %w", err)
	}
	stream, err := pushdown_pb.NewPushdownVolumeClient(conn).ScanRows(cctx, req)
	if err != nil {
		return nil, fmt.Errorf("ScanRows %s: %w", pf.GetFile(), err)
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	var got, received, evaluated int64
	last := int64(-1)
	done := false
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ScanRows %s: %w", pf.GetFile(), err)
		}
		if done || msg.GetRowGroup() != int32(r.rg) {
			return nil, fmt.Errorf("ScanRows %s: a batch of row group %d after row group %d ended", pf.GetFile(), msg.GetRowGroup(), r.rg)
		}
		received += int64(len(msg.GetColumnsIpc()) + len(msg.GetRows()))
		keep, err := scanBatchRows(msg, r, last)
		if err != nil {
			return nil, fmt.Errorf("ScanRows %s row group %d: %w", pf.GetFile(), r.rg, err)
		}
		if len(keep) > 0 {
			last = keep[len(keep)-1]
		}
		if len(keep) > 0 {
			cols := map[int]*column{}
			if len(tops) > 0 {
				if err := ipcColumns(msg.GetColumnsIpc(), fl, keep, tops, cols); err != nil {
					return nil, fmt.Errorf("ScanRows %s row group %d: %w", pf.GetFile(), r.rg, err)
				}
			}
			rec, err := project(ctx, p, fl, r, cols, keep, n.outSchema, n.outTops)
			releaseColumns(cols)
			if err != nil {
				return nil, err
			}
			recs = append(recs, rec)
			got += int64(len(keep))
		}
		if msg.GetRowGroupDone() {
			done, evaluated = true, msg.GetRowsEvaluated()
		}
	}
	limited := p.q.Limit > 0 && got >= p.q.Limit
	if !done && !limited {
		return nil, fmt.Errorf("ScanRows %s: the stream ended before row group %d did", pf.GetFile(), r.rg)
	}
	if p.q.Limit > 0 && got > p.q.Limit {
		return nil, fmt.Errorf("ScanRows %s: %d rows for a LIMIT of %d", pf.GetFile(), got, p.q.Limit)
	}
	var rec arrow.RecordBatch
	if len(recs) == 0 {
		rec, err = project(ctx, p, fl, r, nil, nil, n.outSchema, n.outTops)
	} else {
		rec, err = concatRecords(n.outSchema, recs)
	}
	if err != nil {
		return nil, err
	}
	ft.vol.bytes.Add(received)
	ft.vol.calls.Add(1)
	if sc != nil {
		sc.volumeBytes.Add(received)
		sc.volumeRows.Add(got)
		if done && !limited {
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

// ipcColumns decodes an answer's Arrow IPC (ReadRows, a ScanRows batch)
// of the rows keep into cols, each wanted top typed as the file's layout
// types it.
func ipcColumns(raw []byte, fl *fileLayout, keep []int64, want map[string]int, cols map[int]*column) error {
	rd, err := ipc.NewReader(bytes.NewReader(raw), ipc.WithAllocator(decodeMem))
	if err != nil {
		return fmt.Errorf("Arrow IPC: %w", err)
	}
	defer rd.Release()
	if !rd.Next() {
		return fmt.Errorf("Arrow IPC holds no record: %v", rd.Err())
	}
	got := rd.RecordBatch()
	if got.NumRows() != int64(len(keep)) {
		return fmt.Errorf("%d rows decoded for %d asked", got.NumRows(), len(keep))
	}
	for j, fd := range got.Schema().Fields() {
		top, ok := want[fd.Name]
		if !ok {
			continue
		}
		if !arrow.TypeEqual(fd.Type, fl.arrow.Field(top).Type) {
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
	planned, groups := map[string]int64{}, map[string]int64{}
	for _, fr := range resp.GetFileRanges() {
		planned[fr.GetFile()] += fr.GetLength()
	}
	for _, rg := range resp.GetRowGroups() {
		groups[rg.GetFile()]++
	}
	endpoint := map[string]string{}
	for _, pf := range resp.GetFiles() {
		endpoint[pf.GetFile()] = pf.GetReadEndpoint()
	}
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
	for _, rg := range resp.GetRowGroups() {
		if rg.GetRowsExact() {
			out.Exact++
			continue
		}
		addr := endpoint[rg.GetFile()]
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
		in := filterSiteInput{PlannedBytes: planned[rg.GetFile()] / max(1, groups[rg.GetFile()]), Candidates: cands,
			Selectivity: scanPriorSelectivity, Limit: limit, Local: isLocalAddr(addr)}
		if cands > 0 {
			in.RowBytes = 4 * float64(in.PlannedBytes) / float64(cands)
		}
		note(chooseFilterSite(in))
	}
	return out
}
