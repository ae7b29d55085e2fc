package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/seaweedfs/seaweedfs/weed/filer"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"github.com/seaweedfs/seaweedfs/weed/util"

	"github.com/lakeweed/seaweedfs/weed/pushdown/fileread"
	"github.com/lakeweed/seaweedfs/weed/pushdown/footer"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/indexstore"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/tables"
)

// Background maintenance of side indexes, paced and bounded:
//
//	every Config.IndexReconcileEvery ─▶ tables with registry entries (memory ∪ filer)
//	   │ at most Config.IndexReconcileBatch entries per pass, resuming where the last stopped
//	   ├─ file in no snapshot the metadata lists ─▶ orphaned since T (recorded in the entry)
//	   │      T + Config.IndexGracePeriod passed ─▶ remove .index/<file>/<identity>/ and the rows
//	   └─ committed entry of a live file:
//	          no payload hash ─▶ stale · payload absent ─▶ missing · size differs ─▶ corrupt
//	          data file moved on ─▶ stale
//	          any entry of a current file not committed ─▶ builds.enqueue(table)
//
// New commits schedule builds without it (OnTableEntryUpdate); the
// reconciler repairs what went wrong out of band.

// TableNamesDir records, per table uuid, the table's name when its indexes
// were last built, so maintenance can find the table of registry entries
// after a restart.
const TableNamesDir = "/etc/pushdown/index-tables"

// DefaultReconcileBatch bounds the registry entries one pass checks.
const DefaultReconcileBatch = 2000

type maintenance struct {
	mu     sync.Mutex
	names  map[string]tables.Name // uuid → table name
	cursor struct {
		table string // uuid the last pass stopped in ("" = start)
		file  string // first data file not yet checked in it
	}
	passes, checked, marked, expired, rebuilds int64
	byState                                    map[string]int64
	last                                       time.Time
}

func newMaintenance() *maintenance {
	return &maintenance{names: map[string]tables.Name{}, byState: map[string]int64{}}
}

// rememberTable records the name of the table with uuid (in memory, and
// once per process in the filer).
func (s *Service) rememberTable(ctx context.Context, uuid string, n tables.Name) {
	m := s.maint
	m.mu.Lock()
	prev, ok := m.names[uuid]
	m.names[uuid] = n
	m.mu.Unlock()
	if ok && prev == n {
		return
	}
	b, _ := json.Marshal(n)
	now := time.Now().Unix()
	err := s.Reader.WithFilerClient(false, func(c filer_pb.SeaweedFilerClient) error {
		return filer_pb.CreateEntry(ctx, c, &filer_pb.CreateEntryRequest{Directory: TableNamesDir, Entry: &filer_pb.Entry{
			Name: uuid, Content: b, Attributes: &filer_pb.FuseAttributes{Mtime: now, Crtime: now, FileMode: 0o600, FileSize: uint64(len(b))},
		}})
	})
	if err != nil {
		glog.V(1).Infof("pushdown: record the name of table %s: %v", uuid, err)
	}
}

// knownTables returns the tables with side indexes: those named in memory
// and under TableNamesDir.
func (s *Service) knownTables(ctx context.Context) map[string]tables.Name {
	out := map[string]tables.Name{}
	_ = s.Reader.WithFilerClient(false, func(c filer_pb.SeaweedFilerClient) error {
		return filer_pb.SeaweedList(ctx, c, TableNamesDir, "", func(e *filer_pb.Entry, _ bool) error {
			var n tables.Name
			if !e.IsDirectory && json.Unmarshal(e.Content, &n) == nil && n.Full != "" {
				out[e.Name] = n
			}
			return nil
		}, "", false, 100_000)
	})
	s.maint.mu.Lock()
	for u, n := range s.maint.names {
		out[u] = n
	}
	s.maint.mu.Unlock()
	return out
}

// RunMaintenance runs reconcile passes every Config.IndexReconcileEvery
// until ctx ends (never when that is 0).
func (s *Service) RunMaintenance(ctx context.Context) {
	every := s.Config.IndexReconcileEvery
	if every <= 0 || s.Reader == nil {
		return
	}
	for ctx.Err() == nil {
		if !sleepCtx(ctx, every) {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, max(every, time.Minute))
		s.ReconcileIndexes(pctx)
		cancel()
	}
}

// sleepCtx waits d, false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ReconcileIndexes runs one bounded maintenance pass.
func (s *Service) ReconcileIndexes(ctx context.Context) {
	budget := s.Config.IndexReconcileBatch
	if budget <= 0 {
		budget = DefaultReconcileBatch
	}
	known := s.knownTables(ctx)
	uuids := make([]string, 0, len(known))
	for u := range known {
		uuids = append(uuids, u)
	}
	sort.Strings(uuids)
	s.maint.mu.Lock()
	startTable, startFile := s.maint.cursor.table, s.maint.cursor.file
	s.maint.mu.Unlock()
	// Resume at the table the last pass stopped in, then wrap around.
	first := sort.SearchStrings(uuids, startTable)
	if first == len(uuids) || (first < len(uuids) && uuids[first] != startTable) {
		startFile = ""
	}
	var stopTable, stopFile string
	for k := 0; k < len(uuids) && budget > 0; k++ {
		u := uuids[(first+k)%len(uuids)]
		from := ""
		if k == 0 {
			from = startFile
		}
		used, next := s.reconcileTable(ctx, u, known[u], from, budget)
		budget -= used
		if next != "" {
			stopTable, stopFile = u, next
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	s.maint.mu.Lock()
	s.maint.cursor.table, s.maint.cursor.file = stopTable, stopFile
	s.maint.passes++
	s.maint.last = time.Now()
	s.maint.mu.Unlock()
}

// reconcileTable checks the registry entries of one table's data files
// from the file named from on, at most budget of them; it returns how many
// it checked and the first file left for the next pass ("" = all done).
func (s *Service) reconcileTable(ctx context.Context, uuid string, n tables.Name, from string, budget int) (used int, next string) {
	all, err := s.Registry.All(ctx, uuid)
	if err != nil || len(all) == 0 {
		return 0, ""
	}
	tbl, err := s.Tables.Load(ctx, n)
	switch {
	case err != nil && perr.KindOf(err) == perr.NotFound, err == nil && tbl.Meta.TableUUID().String() != uuid:
		// Dropped, or renamed: every file counts as having left the table.
		// A plan or build under the new name records it (rememberTable)
		// and the next pass clears the marks; a dropped table's indexes go
		// after the grace period.
		return s.expireTable(ctx, uuid, n, all, from, budget)
	case err != nil:
		glog.V(1).Infof("pushdown: index maintenance: table %s (%s): %v", uuid, n.Full, err)
		return 0, ""
	}
	// Files of the current snapshot, and of every snapshot the metadata
	// still lists; expiry needs the whole list, so any failure skips it.
	current := map[string]int{}
	var cur *tables.Files
	if snap := tbl.Meta.CurrentSnapshot(); snap != nil {
		if cur, err = s.Tables.DataFiles(ctx, tbl, snap); err != nil {
			glog.V(1).Infof("pushdown: index maintenance: table %s: %v", n.Full, err)
			return 0, ""
		}
		current = cur.ByPath
	}
	live, liveKnown := map[string]bool{}, true
	for _, snap := range tbl.Meta.Snapshots() {
		fs, err := s.Tables.DataFiles(ctx, tbl, &snap)
		if err != nil {
			liveKnown = false
			glog.V(1).Infof("pushdown: index maintenance: table %s snapshot %d: %v; no expiry this pass", n.Full, snap.SnapshotID, err)
			break
		}
		for p := range fs.ByPath {
			live[p] = true
		}
	}
	files := make([]string, 0, len(all))
	for f := range all {
		if f >= from {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	rebuild := false
	now := time.Now()
	for _, f := range files {
		if used >= budget {
			return used, f
		}
		entries := all[f]
		used += len(entries)
		if !live[f] {
			if liveKnown {
				s.expireFile(ctx, uuid, f, entries, now)
			}
			continue
		}
		var update []indexing.Entry
		for _, e := range entries {
			changed := false
			if e.OrphanedMs != 0 {
				e.OrphanedMs, changed = 0, true
			}
			if e.State == indexing.StateCommitted {
				if state, reason := s.checkEntry(ctx, cur, e); state != "" {
					e.State, e.Reason, changed = state, reason, true
					s.countMark(state)
					glog.V(0).Infof("pushdown: index maintenance: %s: %s (%s); rebuilding", e.Key(), state, reason)
				} else {
					e.VerifiedMs, changed = now.UnixMilli(), true
				}
			}
			if _, ok := current[f]; ok && e.State != indexing.StateCommitted {
				rebuild = true
			}
			if changed {
				update = append(update, e)
			}
		}
		s.putIfUnchanged(ctx, uuid, update)
	}
	s.maint.mu.Lock()
	s.maint.checked += int64(used)
	if rebuild {
		s.maint.rebuilds++
	}
	s.maint.mu.Unlock()
	if rebuild {
		s.builds.enqueue(s, n)
	}
	return used, ""
}

// expireTable expires the files of a table whose name no longer leads to
// it, and forgets the table once no entry is left.
func (s *Service) expireTable(ctx context.Context, uuid string, n tables.Name, all map[string][]indexing.Entry, from string, budget int) (used int, next string) {
	files := make([]string, 0, len(all))
	for f := range all {
		if f >= from {
			files = append(files, f)
		}
	}
	sort.Strings(files)
	now := time.Now()
	for _, f := range files {
		if used >= budget {
			return used, f
		}
		used += len(all[f])
		s.expireFile(ctx, uuid, f, all[f], now)
	}
	if left, err := s.Registry.All(ctx, uuid); err == nil && len(left) == 0 {
		s.maint.mu.Lock()
		delete(s.maint.names, uuid)
		s.maint.mu.Unlock()
		err := s.Reader.WithFilerClient(false, func(c filer_pb.SeaweedFilerClient) error {
			return filer_pb.DoRemove(ctx, c, TableNamesDir, uuid, true, false, true, false, nil)
		})
		if err != nil && !errors.Is(err, filer_pb.ErrNotFound) {
			glog.V(1).Infof("pushdown: index maintenance: forget table %s: %v", uuid, err)
		} else {
			glog.V(0).Infof("pushdown: index maintenance: table %s (last named %s) is gone and so are its side indexes", uuid, n.Full)
		}
	}
	s.maint.mu.Lock()
	s.maint.checked += int64(used)
	s.maint.mu.Unlock()
	return used, ""
}

// checkEntry says why a committed entry can no longer be used ("" = it
// can): no payload hash was recorded (committed before payloads were
// hashed), its payload is absent or not the size recorded, or the data
// file is no longer the version it was built against. (The payload's
// SHA-256 is checked by the volume each time it reads the payload.)
func (s *Service) checkEntry(ctx context.Context, cur *tables.Files, e indexing.Entry) (state, reason string) {
	if !e.Commit().Known() {
		return indexing.StateStale, indexing.Unhashed
	}
	size, found, err := s.lookupSize(ctx, e.PayloadPath)
	switch {
	case err != nil:
		return "", "" // the filer did not answer: check again next pass
	case !found:
		return indexing.StateMissing, "payload " + e.PayloadPath + " not found"
	case size != e.PayloadBytes:
		return indexing.StateCorrupt, fmt.Sprintf("payload is %d bytes, %d were committed", size, e.PayloadBytes)
	}
	if cur == nil {
		return "", ""
	}
	i, ok := cur.ByPath[e.DataFile]
	if !ok {
		return "", "" // only in older snapshots: kept until it expires
	}
	d := cur.Data[i]
	hash, err := s.Footers.Identify(ctx, d.Path, d.Size, d.RecordCount)
	if err != nil {
		return indexing.StateStale, "the data file cannot be identified: " + boundedMsg(err)
	}
	if id := footer.IdentityDir(d.Size, d.RecordCount, hash); id != e.Identity {
		return indexing.StateStale, fmt.Sprintf("the data file is now %s, the index was built against %s", id, e.Identity)
	}
	return "", ""
}

// lookupSize is the size of the file at location, if it exists.
func (s *Service) lookupSize(ctx context.Context, location string) (int64, bool, error) {
	fp, err := fileread.FilerPath(location)
	if err != nil {
		return 0, false, nil
	}
	dir, name := util.FullPath(fp).DirAndName()
	var size int64
	err = s.Reader.WithFilerClient(false, func(c filer_pb.SeaweedFilerClient) error {
		resp, err := filer_pb.LookupEntry(ctx, c, &filer_pb.LookupDirectoryEntryRequest{Directory: dir, Name: name})
		if err != nil {
			return err
		}
		size = int64(filer.FileSize(resp.GetEntry()))
		return nil
	})
	if errors.Is(err, filer_pb.ErrNotFound) {
		return 0, false, nil
	}
	return size, err == nil, err
}

// expireFile handles a data file in no snapshot the table lists: the
// first pass records when, a pass after the grace period removes its
// payload folders and registry rows.
func (s *Service) expireFile(ctx context.Context, uuid, dataFile string, entries []indexing.Entry, now time.Time) {
	since := int64(0)
	for _, e := range entries {
		if e.OrphanedMs != 0 && (since == 0 || e.OrphanedMs < since) {
			since = e.OrphanedMs
		}
	}
	if since == 0 {
		var update []indexing.Entry
		for _, e := range entries {
			e.OrphanedMs = now.UnixMilli()
			update = append(update, e)
		}
		s.putIfUnchanged(ctx, uuid, update)
		return
	}
	if now.Sub(time.UnixMilli(since)) < s.Config.IndexGracePeriod {
		return
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.Identity != "" {
			dirs[indexstore.Dir(dataFile, e.Identity)] = true
		}
	}
	for d := range dirs {
		if err := s.removeTree(ctx, d); err != nil {
			glog.V(0).Infof("pushdown: index maintenance: remove %s: %v; trying again next pass", d, err)
			return
		}
	}
	// The file's .index/<file> folder goes too when nothing else is left in it.
	if i := strings.LastIndexByte(dataFile, '/'); i >= 0 {
		_ = s.removeDir(ctx, dataFile[:i+1]+".index/"+dataFile[i+1:], false)
	}
	if err := s.Registry.Remove(ctx, uuid, dataFile); err != nil {
		glog.V(0).Infof("pushdown: index maintenance: %v", err)
		return
	}
	s.maint.mu.Lock()
	s.maint.expired += int64(len(entries))
	s.maint.mu.Unlock()
	glog.V(0).Infof("pushdown: index maintenance: %s left every snapshot of table %s over %s ago; its %d side indexes are removed", dataFile, uuid, s.Config.IndexGracePeriod, len(entries))
}

func (s *Service) removeTree(ctx context.Context, location string) error {
	return s.removeDir(ctx, location, true)
}

func (s *Service) removeDir(ctx context.Context, location string, recursive bool) error {
	fp, err := fileread.FilerPath(location)
	if err != nil {
		return err
	}
	dir, name := util.FullPath(fp).DirAndName()
	return s.Reader.WithFilerClient(false, func(c filer_pb.SeaweedFilerClient) error {
		err := filer_pb.DoRemove(ctx, c, dir, name, true, recursive, true, false, nil)
		if err != nil && (errors.Is(err, filer_pb.ErrNotFound) || strings.Contains(err.Error(), "not found")) {
			return nil
		}
		return err
	})
}

// putIfUnchanged writes entries whose registry row is still the one they
// were read from (same identity, state and build time), so a pass never
// overwrites a build that committed meanwhile.
func (s *Service) putIfUnchanged(ctx context.Context, uuid string, entries []indexing.Entry) {
	var keep []indexing.Entry
	for _, e := range entries {
		cur, ok, err := s.Registry.Lookup(ctx, uuid, e.DataFile, e.Kind, e.FieldID)
		if err != nil || !ok || cur.Identity != e.Identity || cur.BuiltUnixMs != e.BuiltUnixMs || (cur.State != e.State && cur.State != indexing.StateCommitted) {
			continue
		}
		keep = append(keep, e)
	}
	if len(keep) == 0 {
		return
	}
	if err := s.Registry.Put(ctx, uuid, keep...); err != nil {
		glog.V(1).Infof("pushdown: index maintenance: %v", err)
	}
}

func (s *Service) countMark(state string) {
	s.maint.mu.Lock()
	s.maint.marked++
	s.maint.byState[state]++
	s.maint.mu.Unlock()
}

// health is the reconciler's part of the side-index summary of Status.
func (m *maintenance) health() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.passes == 0 {
		return "reconciler: no pass yet"
	}
	var states []string
	for st, n := range m.byState {
		states = append(states, fmt.Sprintf("%s %d", st, n))
	}
	sort.Strings(states)
	marked := ""
	if len(states) > 0 {
		marked = " (" + strings.Join(states, ", ") + ")"
	}
	return fmt.Sprintf("reconciler: %d passes, %d entries checked, %d marked%s, %d rebuilds asked, %d expired", m.passes, m.checked, m.marked, marked, m.rebuilds, m.expired)
}
