package restplan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/seaweedfs/seaweedfs/weed/glog"

	"github.com/lakeweed/seaweedfs/weed/pushdown/catalog"
	"github.com/lakeweed/seaweedfs/weed/pushdown/deletes"
	"github.com/lakeweed/seaweedfs/weed/pushdown/descriptor"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/plan"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
)

// planRequest is the REST spec's PlanTableScanRequest.
type planRequest struct {
	SnapshotID        *int64          `json:"snapshot-id"`
	Select            []string        `json:"select"`
	Filter            json.RawMessage `json:"filter"`
	MinRowsRequested  *int64          `json:"min-rows-requested"`
	CaseSensitive     *bool           `json:"case-sensitive"`
	UseSnapshotSchema *bool           `json:"use-snapshot-schema"`
	StartSnapshotID   *int64          `json:"start-snapshot-id"`
	EndSnapshotID     *int64          `json:"end-snapshot-id"`
	StatsFields       []string        `json:"stats-fields"`

	// omitFullResidual leaves out a task's residual filter when it is the
	// request's whole filter (see residualOmitted).
	omitFullResidual bool
}

// residualOmitted reports whether the client of r reads a task without a
// residual filter as the spec says — "the client must produce the
// residual or use the original filter" — so a residual equal to the
// request's filter can be left out. iceberg-go (User-Agent GoIceberg/…)
// does: its decoder falls back to the scan's row filter, and its reader
// applies the scan's filter to every task anyway. Other clients get every
// residual: PyIceberg 0.12 reads a missing residual as TRUE (its count()
// then trusts record counts) and Iceberg Java 1.12 as null.
func residualOmitted(r *http.Request) bool {
	return strings.HasPrefix(r.UserAgent(), "GoIceberg/")
}

// Request bounds beyond the body size.
const (
	maxNames    = 10_000
	maxNameLen  = 4096
	planTimeout = time.Hour // a plan that runs longer is cancelled
)

// readBody reads a bounded request body; a larger one is refused.
func (f *Front) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.cfg.MaxRequestBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusBadRequest, "BadRequestException", "request body is over "+strconv.FormatInt(f.cfg.MaxRequestBytes, 10)+" bytes")
		} else {
			writeError(w, http.StatusBadRequest, "BadRequestException", "read request body: "+err.Error())
		}
		return nil, false
	}
	return b, true
}

func (req *planRequest) check() error {
	if req.SnapshotID != nil && (req.StartSnapshotID != nil || req.EndSnapshotID != nil) {
		return perr.New(perr.InvalidArgument, "snapshot-id cannot be combined with start-snapshot-id/end-snapshot-id")
	}
	if req.StartSnapshotID != nil && req.EndSnapshotID == nil {
		return perr.New(perr.InvalidArgument, "start-snapshot-id needs end-snapshot-id")
	}
	for what, names := range map[string][]string{"select": req.Select, "stats-fields": req.StatsFields} {
		if len(names) > maxNames {
			return perr.New(perr.InvalidArgument, "%s lists %d fields, the limit is %d", what, len(names), maxNames)
		}
		for _, n := range names {
			if len(n) > maxNameLen {
				return perr.New(perr.InvalidArgument, "%s names a field of %d bytes, the limit is %d", what, len(n), maxNameLen)
			}
		}
	}
	return nil
}

func (f *Front) servePlan(w http.ResponseWriter, r *http.Request, rt route) {
	planner := f.scanPlanner()
	if planner == nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "server-side scan planning starts with the catalog pushdown service; retry shortly")
		return
	}
	// the caller is authorized (as LoadTable of the table) before its body
	// is read: a caller who may not read the table learns nothing, not
	// even whether its request parses
	ref, fail := f.authorizeCurrent(r.Context(), r, rt, planner)
	if fail != nil {
		fail.write(w)
		return
	}
	body, ok := f.readBody(w, r)
	if !ok {
		return
	}
	var req planRequest
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestException", "malformed PlanTableScanRequest: "+perr.Truncate(err.Error(), 200))
			return
		}
	}
	if err := req.check(); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	req.omitFullResidual = residualOmitted(r)
	ctx, cancel := context.WithTimeout(context.Background(), planTimeout)
	p, callerFull := f.plans.add(ref.caller, ref.key, cancel)
	if p == nil {
		cancel()
		w.Header().Set("Retry-After", "1")
		if callerFull {
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", fmt.Sprintf("this caller holds %d scan plans, its share of -pushdown.rest.maxPlans: fetch their tasks or cancel them (DELETE …/plan/{plan-id}), or retry once they expire", f.plans.perCaller()))
			return
		}
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "too many scan plans are kept; retry shortly (-pushdown.rest.maxPlans)")
		return
	}
	safe.Go("REST scan plan", func() { f.run(ctx, p, planner, ref, &req) })
	if f.cfg.SyncWait > 0 {
		t := time.NewTimer(f.cfg.SyncWait)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
		case <-r.Context().Done():
		}
	}
	f.answer(w, p, true)
}

// answer writes a plan's state: submitted, failed (the plan is dropped),
// cancelled, or completed (a plan answered whole leaves a tombstone).
func (f *Front) answer(w http.ResponseWriter, p *scanPlan, first bool) {
	p.mu.Lock()
	status, errModel, reqErr := p.status, p.err, p.requestError
	var body []byte
	whole := false
	if status == statusCompleted {
		body, whole = completed(p, first)
	}
	p.mu.Unlock()
	switch status {
	case statusSubmitted, statusCancelled:
		out := map[string]any{"status": status}
		if first {
			out["plan-id"] = p.id
		}
		writeJSON(w, http.StatusOK, out)
	case statusFailed:
		f.plans.drop(p)
		if first && reqErr {
			writeError(w, errModel.Code, errModel.Type, errModel.Message)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": statusFailed, "error": errModel})
	case statusCompleted:
		if whole {
			f.plans.retire(p)
		}
		writeRaw(w, http.StatusOK, body)
	}
}

// completed is a completed answer: the first page inline, the others as
// plan tasks; whole reports there are none. Called with p.mu held.
func completed(p *scanPlan, withID bool) (body []byte, whole bool) {
	first := p.pages[0].members()
	b := make([]byte, 0, len(first)+128+24*len(p.pages))
	b = append(b, `{"status":"completed"`...)
	if withID {
		b = append(b, `,"plan-id":"`...)
		b = append(b, p.id...) // base64url: nothing to escape
		b = append(b, '"')
	}
	b = append(b, ',')
	b = append(b, first...)
	if len(p.pages) > 1 {
		b = append(b, `,"plan-tasks":[`...)
		for i := 1; i < len(p.pages); i++ {
			if i > 1 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, p.id...)
			b = append(b, '.')
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	return append(b, '}'), len(p.pages) == 1
}

func (f *Front) serveFetchResult(w http.ResponseWriter, r *http.Request, rt route) {
	ref, fail := f.authorize(r.Context(), r, rt)
	if fail != nil {
		fail.write(w)
		return
	}
	p := f.plans.get(rt.planID, ref.caller, ref.key)
	if p == nil {
		writeError(w, http.StatusNotFound, "NoSuchPlanIdException", "plan "+perr.Quote(rt.planID)+" does not exist or has expired")
		return
	}
	f.answer(w, p, false)
}

func (f *Front) serveCancel(w http.ResponseWriter, r *http.Request, rt route) {
	ref, fail := f.authorize(r.Context(), r, rt)
	if fail != nil {
		fail.write(w)
		return
	}
	if !f.plans.remove(rt.planID, ref.caller, ref.key) {
		writeError(w, http.StatusNotFound, "NoSuchPlanIdException", "plan "+perr.Quote(rt.planID)+" does not exist or has expired")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (f *Front) serveTasks(w http.ResponseWriter, r *http.Request, rt route) {
	ref, fail := f.authorize(r.Context(), r, rt)
	if fail != nil {
		fail.write(w)
		return
	}
	body, ok := f.readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		PlanTask *string `json:"plan-task"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.PlanTask == nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", "malformed FetchScanTasksRequest: it needs a \"plan-task\" string")
		return
	}
	noSuch := func() {
		writeError(w, http.StatusNotFound, "NoSuchPlanTaskException", "plan task "+perr.Quote(*req.PlanTask)+" does not exist or has expired")
	}
	id, n, ok := strings.Cut(*req.PlanTask, ".")
	page, err := strconv.Atoi(n)
	if !ok || err != nil || page < 1 {
		noSuch()
		return
	}
	p := f.plans.get(id, ref.caller, ref.key)
	if p == nil {
		noSuch()
		return
	}
	p.mu.Lock()
	if p.status != statusCompleted || page >= len(p.pages) {
		p.mu.Unlock()
		noSuch()
		return
	}
	p.markFetched(page)
	out := p.pages[page].body // immutable once the plan completed
	p.mu.Unlock()
	writeRaw(w, http.StatusOK, out)
}

// run plans p in the background and records its outcome.
func (f *Front) run(ctx context.Context, p *scanPlan, planner ScanPlanner, ref *tableRef, req *planRequest) {
	defer close(p.done)
	start := time.Now()
	pages, files, total, err := f.plan(ctx, planner, ref, req)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status == statusCancelled || ctx.Err() != nil && err != nil {
		p.status = statusCancelled
		return
	}
	if err != nil {
		status, typ, reqErr := errorOf(err)
		m := newError(status, typ, err.Error())
		p.status, p.err, p.requestError = statusFailed, &m, reqErr
		glog.V(1).Infof("pushdown: REST scan plan of %s failed: %v", perr.Quote(ref.name.Full), err)
		return
	}
	p.status, p.pages = statusCompleted, pages
	glog.V(1).Infof("pushdown: REST scan plan of %s: %d of %d files, %d pages, %s", perr.Quote(ref.name.Full), files, total, len(pages), time.Since(start))
}

// page is one ScanTasks envelope, encoded once when the plan completes:
// body is the whole FetchScanTasks answer, {"file-scan-tasks":[...]} with
// "delete-files" when its tasks reference any (delete-file references
// index the page's own delete files).
type page struct {
	body []byte
}

const pageStart = `{"file-scan-tasks":[`

// members is the page's body without its braces (the inline page of a
// completed answer).
func (p *page) members() []byte { return p.body[1 : len(p.body)-1] }

func (f *Front) plan(ctx context.Context, planner ScanPlanner, ref *tableRef, req *planRequest) (pages []page, files, total int, err error) {
	caseSensitive := req.CaseSensitive == nil || *req.CaseSensitive
	var filter *compiledFilter
	var statsIDs map[int]bool
	res, err := planner.PlanScan(ctx, catalog.ScanRequest{
		Name: ref.name, SnapshotID: req.SnapshotID, StartSnapshotID: req.StartSnapshotID, EndSnapshotID: req.EndSnapshotID,
		UseSnapshotSchema: req.UseSnapshotSchema != nil && *req.UseSnapshotSchema,
		Bind: func(schema *iceberg.Schema) ([]byte, []int, error) {
			var ids []byte
			if len(req.Filter) > 0 && !bytes.Equal(bytes.TrimSpace(req.Filter), []byte("null")) {
				var err error
				if filter, err = compileFilter(req.Filter, schema, caseSensitive); err != nil {
					return nil, nil, err
				}
				ids = filter.ids
			}
			projection, err := fieldIDs("select", req.Select, schema, caseSensitive)
			if err != nil {
				return nil, nil, err
			}
			stats, err := fieldIDs("stats-fields", req.StatsFields, schema, caseSensitive)
			if err != nil {
				return nil, nil, err
			}
			if len(stats) > 0 {
				statsIDs = map[int]bool{}
				for _, id := range stats {
					statsIDs[id] = true
				}
			}
			return ids, projection, nil
		},
	})
	if err != nil {
		return nil, 0, 0, err
	}
	b := &taskBuilder{specs: res.Table.Specs, src: descriptor.SchemasSourceType(res.Table.Schemas()), schema: res.Schema, filter: filter, stats: statsIDs,
		omitFullResidual: req.omitFullResidual}
	if statsIDs == nil {
		b.memo = encodedFilesOf(res)
	}
	if b.specs == nil {
		b.specs = map[int]iceberg.PartitionSpec{}
		for _, sp := range res.Table.Meta.PartitionSpecs() {
			b.specs[sp.ID()] = sp
		}
	}
	pages, files, err = b.pages(res.Files, f.cfg.TasksPerPage)
	return pages, files, res.FilesTotal, err
}

// fieldIDs resolves field names (nested ones dotted) to ids.
func fieldIDs(what string, names []string, schema *iceberg.Schema, caseSensitive bool) ([]int, error) {
	var out []int
	for _, n := range names {
		var fl iceberg.NestedField
		var ok bool
		if caseSensitive {
			fl, ok = schema.FindFieldByName(n)
		} else {
			fl, ok = schema.FindFieldByNameCaseInsensitive(n)
		}
		if !ok {
			return nil, perr.New(perr.InvalidArgument, "%s: no field %s in schema %d (case-sensitive: %v)", what, perr.Quote(n), schema.ID, caseSensitive)
		}
		out = append(out, fl.ID)
	}
	return out, nil
}

// taskBuilder writes FileScanTasks in the REST spec's JSON.
type taskBuilder struct {
	specs  map[int]iceberg.PartitionSpec
	src    descriptor.SourceType
	schema *iceberg.Schema
	filter *compiledFilter
	stats  map[int]bool // fields whose column stats are sent
	// omitFullResidual: see planRequest
	omitFullResidual bool
	// memo holds the snapshot's data files encoded by earlier plans (nil:
	// encode every file, e.g. with column stats)
	memo *encodedFiles
}

// encodedFiles memoizes each data file's REST DataFile JSON (without column
// stats) for one snapshot's file list, under one table metadata: a data
// file's JSON never changes, so a warm plan of 10,000 files copies bytes
// instead of encoding 10,000 objects. It lives in the catalog's cached
// file list (catalog.ScanResult.Derived) and is dropped with it.
type encodedFiles struct {
	location string // the table metadata the files were encoded under
	files    []atomic.Pointer[[]byte]
}

type encodedFilesKey struct{}

// encodedFilesOf is res's memo of encoded data files (nil: none kept).
func encodedFilesOf(res *catalog.ScanResult) *encodedFiles {
	if res.Derived == nil || res.Table == nil {
		return nil
	}
	if v, ok := res.Derived.Load(encodedFilesKey{}); ok {
		if e := v.(*encodedFiles); e.location == res.Table.MetadataLocation && len(e.files) == res.FilesTotal {
			return e
		}
	}
	e := &encodedFiles{location: res.Table.MetadataLocation, files: make([]atomic.Pointer[[]byte], res.FilesTotal)}
	res.Derived.Store(encodedFilesKey{}, e)
	return e
}

// encodedDataFile is sf's DataFile JSON, from the memo when an earlier
// plan encoded it.
func (b *taskBuilder) encodedDataFile(sf *catalog.ScanFile) ([]byte, error) {
	if b.memo == nil || sf.Index < 0 || sf.Index >= len(b.memo.files) {
		return b.appendDataFile(nil, sf.Data)
	}
	slot := &b.memo.files[sf.Index]
	if enc := slot.Load(); enc != nil {
		return *enc, nil
	}
	enc, err := b.appendDataFile(nil, sf.Data)
	if err != nil {
		return nil, err
	}
	slot.Store(&enc)
	return enc, nil
}

// countMap and valueMap are the spec's CountMap and ValueMap.
type countMap struct {
	Keys   []int   `json:"keys"`
	Values []int64 `json:"values"`
}

type valueMap struct {
	Keys   []int    `json:"keys"`
	Values []string `json:"values"`
}

type deleteFileJSON struct {
	Content            string          `json:"content"`
	FilePath           string          `json:"file-path"`
	FileFormat         string          `json:"file-format"`
	SpecID             int32           `json:"spec-id"`
	Partition          json.RawMessage `json:"partition"`
	FileSizeInBytes    int64           `json:"file-size-in-bytes"`
	RecordCount        int64           `json:"record-count"`
	EqualityIDs        []int           `json:"equality-ids,omitempty"`
	ReferencedDataFile *string         `json:"referenced-data-file,omitempty"`
	ContentOffset      *int64          `json:"content-offset,omitempty"`
	ContentSizeInBytes *int64          `json:"content-size-in-bytes,omitempty"`
}

func (b *taskBuilder) pages(files []catalog.ScanFile, perPage int) ([]page, int, error) {
	var pages []page
	var cur pageBuilder
	n := 0
	for i := range files {
		sf := &files[i]
		residual, keep, err := b.residual(sf.Data)
		if err != nil {
			return nil, 0, err
		}
		if !keep {
			continue // the file's partition rules the filter out
		}
		if b.omitFullResidual && b.filter != nil && bytes.Equal(residual, b.filter.full) {
			residual = nil
		}
		if len(cur.tasks) == perPage {
			pages = append(pages, cur.page())
			cur.reset()
		}
		t := pageTask{residual: residual, refs: len(cur.refs)}
		for _, d := range sf.Deletes {
			key := d.Path + "\x00" + strconv.FormatInt(d.BlobOffset, 10)
			i, ok := cur.deleteIndex[key]
			if !ok {
				raw, err := b.deleteFile(d, sf.Data.Path)
				if err != nil {
					return nil, 0, err
				}
				if cur.deleteIndex == nil {
					cur.deleteIndex = map[string]int{}
				}
				i = len(cur.deletes)
				cur.deletes = append(cur.deletes, raw)
				cur.deleteIndex[key] = i
			}
			cur.refs = append(cur.refs, i)
		}
		t.nrefs = len(cur.refs) - t.refs
		if t.dataFile, err = b.encodedDataFile(sf); err != nil {
			return nil, 0, err
		}
		cur.tasks = append(cur.tasks, t)
		n++
	}
	return append(pages, cur.page()), n, nil
}

// pageBuilder collects one page's tasks, then writes its body in one
// allocation of the exact size.
type pageBuilder struct {
	tasks       []pageTask
	refs        []int // the tasks' delete-file references, in task order
	deletes     [][]byte
	deleteIndex map[string]int // delete file (path, blob offset) → index in deletes
}

type pageTask struct {
	dataFile, residual []byte
	refs, nrefs        int // the task's references: refs[refs:refs+nrefs]
}

func (p *pageBuilder) reset() {
	p.tasks, p.refs, p.deletes, p.deleteIndex = p.tasks[:0], p.refs[:0], nil, nil
}

const (
	taskStart     = `{"data-file":`
	refsStart     = `,"delete-file-references":[`
	residualStart = `,"residual-filter":`
	deletesStart  = `,"delete-files":[`
)

// page writes the collected tasks as a page.
func (p *pageBuilder) page() page {
	size := len(pageStart) + 2 + len(deletesStart) + 1
	for _, t := range p.tasks {
		size += len(taskStart) + len(t.dataFile) + 2
		if t.nrefs > 0 {
			size += len(refsStart) + 1 + 21*t.nrefs
		}
		if t.residual != nil {
			size += len(residualStart) + len(t.residual)
		}
	}
	for _, d := range p.deletes {
		size += len(d) + 1
	}
	b := append(make([]byte, 0, size), pageStart...)
	for i, t := range p.tasks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, taskStart...)
		b = append(b, t.dataFile...)
		if t.nrefs > 0 {
			b = append(b, refsStart...)
			for j, r := range p.refs[t.refs : t.refs+t.nrefs] {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(r), 10)
			}
			b = append(b, ']')
		}
		if t.residual != nil {
			b = append(b, residualStart...)
			b = append(b, t.residual...)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(p.deletes) > 0 {
		b = append(b, deletesStart...)
		for i, d := range p.deletes {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, d...)
		}
		b = append(b, ']')
	}
	return page{body: append(b, '}')}
}

// residual is the task's residual filter (nil: the scan has none); keep
// is false when the file's partition makes it FALSE.
func (b *taskBuilder) residual(d *plan.DataFile) (json.RawMessage, bool, error) {
	if b.filter == nil {
		return nil, true, nil
	}
	spec, ok := b.specs[int(d.SpecID)]
	if !ok {
		return b.filter.full, true, nil
	}
	vals := identityValues(spec, d.Partition, b.schema)
	if vals == nil {
		return b.filter.full, true, nil
	}
	r := b.filter.root.residual(vals)
	if v, ok := r.(bool); ok && !v {
		return nil, false, nil
	}
	raw, err := json.Marshal(r)
	return raw, true, err
}

func (b *taskBuilder) partition(specID int32, p map[int]any) (json.RawMessage, error) {
	spec, ok := b.specs[int(specID)]
	if !ok {
		return nil, perr.New(perr.Corrupt, "partition spec %d is not a spec of the table", specID)
	}
	if spec.NumFields() == 0 {
		return json.RawMessage("[]"), nil
	}
	obj, err := descriptor.EncodePartition(spec, b.src, p)
	if err != nil {
		return nil, perr.New(perr.Corrupt, "partition values: %v", err)
	}
	var byID map[string]json.RawMessage
	if err := json.Unmarshal(obj, &byID); err != nil {
		return nil, err
	}
	arr := make([]json.RawMessage, 0, spec.NumFields())
	for _, pf := range spec.Fields() {
		v := byID[strconv.Itoa(pf.FieldID)]
		if st, ok := b.src(pf.SourceID()); ok {
			switch pf.Transform.ResultType(st).(type) {
			case iceberg.BinaryType, iceberg.FixedType:
				v = bytes.ToUpper(v) // the spec's uppercase hex
			}
		}
		arr = append(arr, v)
	}
	return json.Marshal(arr)
}

// appendDataFile appends the data file's REST ContentFile JSON.
func (b *taskBuilder) appendDataFile(out []byte, d *plan.DataFile) ([]byte, error) {
	part, err := b.partition(d.SpecID, d.Partition)
	if err != nil {
		return nil, err
	}
	out = append(out, `{"content":"data","file-path":`...)
	out = appendString(out, d.Path)
	out = append(out, `,"file-format":"parquet","spec-id":`...)
	out = strconv.AppendInt(out, int64(d.SpecID), 10)
	out = append(out, `,"partition":`...)
	out = append(out, part...)
	out = append(out, `,"file-size-in-bytes":`...)
	out = strconv.AppendInt(out, d.Size, 10)
	out = append(out, `,"record-count":`...)
	out = strconv.AppendInt(out, d.RecordCount, 10)
	if increasing(d.SplitOffsets) {
		out = append(out, `,"split-offsets":[`...)
		for i, o := range d.SplitOffsets {
			if i > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendInt(out, o, 10)
		}
		out = append(out, ']')
	}
	if len(b.stats) > 0 {
		stats, err := json.Marshal(struct {
			ColumnSizes     *countMap `json:"column-sizes,omitempty"`
			ValueCounts     *countMap `json:"value-counts,omitempty"`
			NullValueCounts *countMap `json:"null-value-counts,omitempty"`
			NaNValueCounts  *countMap `json:"nan-value-counts,omitempty"`
			LowerBounds     *valueMap `json:"lower-bounds,omitempty"`
			UpperBounds     *valueMap `json:"upper-bounds,omitempty"`
		}{b.counts(d.Stats.ColumnSizes), b.counts(d.Stats.Values), b.counts(d.Stats.Nulls), b.counts(d.Stats.NaNs),
			b.bounds(d.Stats.Lower), b.bounds(d.Stats.Upper)})
		if err != nil {
			return nil, err
		}
		if len(stats) > 2 {
			out = append(out, ',')
			out = append(out, stats[1:len(stats)-1]...)
		}
	}
	return append(out, '}'), nil
}

// appendString appends s as a JSON string.
func appendString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(out, q...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

func increasing(o []int64) bool {
	if len(o) == 0 {
		return false
	}
	for i, v := range o {
		if v < 0 || i > 0 && v <= o[i-1] {
			return false
		}
	}
	return true
}

func (b *taskBuilder) counts(m map[int]int64) *countMap {
	var out countMap
	for id, v := range m {
		if b.stats[id] && v >= 0 {
			out.Keys = append(out.Keys, id)
		}
	}
	if len(out.Keys) == 0 {
		return nil
	}
	sort.Ints(out.Keys)
	for _, id := range out.Keys {
		out.Values = append(out.Values, m[id])
	}
	return &out
}

func (b *taskBuilder) bounds(m map[int][]byte) *valueMap {
	var out valueMap
	for id := range m {
		if b.stats[id] {
			out.Keys = append(out.Keys, id)
		}
	}
	if len(out.Keys) == 0 {
		return nil
	}
	sort.Ints(out.Keys)
	for _, id := range out.Keys {
		out.Values = append(out.Values, strings.ToUpper(hexString(m[id])))
	}
	return &out
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

func (b *taskBuilder) deleteFile(d deletes.File, dataPath string) (json.RawMessage, error) {
	part, err := b.partition(d.SpecID, d.Partition)
	if err != nil {
		return nil, err
	}
	j := deleteFileJSON{FilePath: d.Path, FileFormat: strings.ToLower(d.Format.String()), SpecID: d.SpecID, Partition: part,
		FileSizeInBytes: d.Size, RecordCount: d.RecordCount}
	switch d.Content {
	case deletes.PositionDeletes:
		j.Content = "position-deletes"
		if d.IsDV() {
			off, n, ref := d.BlobOffset, d.BlobLength, dataPath
			j.ContentOffset, j.ContentSizeInBytes, j.ReferencedDataFile = &off, &n, &ref
		}
	case deletes.EqualityDeletes:
		j.Content = "equality-deletes"
		j.EqualityIDs = d.EqualityFieldIDs
	default:
		return nil, perr.New(perr.Corrupt, "delete file %s has content %s", d.Path, d.Content)
	}
	return json.Marshal(j)
}
