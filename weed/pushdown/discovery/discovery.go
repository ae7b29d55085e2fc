// Package discovery lets the catalog find every volume pushdown service of
// the cluster without configuration.
//
//	volume pushdown service                     catalog pushdown service
//	  │ Announce: one entry per service            │ Watcher, every Interval:
//	  │   /etc/pushdown/volumes/<volume server>    │   list the registry directory
//	  │   {address, volume_server, version}        │   probe each endpoint (Status)
//	  │ refreshed every RefreshInterval            │   healthy → routed
//	  │ removed on clean shutdown                  │   unreachable → not routed
//	  ▼                                            │   unreachable > GCAfter → entry deleted
//	filer  ◀───────────────────────────────────────┘
//
// The registry says where an endpoint might be; a live Status probe decides
// whether the catalog routes to it. A killed process leaves its entry, which
// stops being routed at the next probe and is collected later.
package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
	"github.com/lakeweed/seaweedfs/weed/pushdown/grpcutil"
	"github.com/lakeweed/seaweedfs/weed/pushdown/safe"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
)

// RegistryDir is the filer directory holding one entry per volume pushdown
// service.
const RegistryDir = "/etc/pushdown/volumes"

// FilerFunc runs fn against a filer.
type FilerFunc func(fn func(filer_pb.SeaweedFilerClient) error) error

// Registration is what a volume pushdown service announces.
type Registration struct {
	Address      string `json:"address"`       // host:port of the PushdownVolume service
	VolumeServer string `json:"volume_server"` // host:port of the volume server beside it
	Version      string `json:"version"`
	StartedUnix  int64  `json:"started_unix"`
}

// EntryName is the registry entry name for a volume server.
func EntryName(volumeServer string) string {
	return url.PathEscape(volumeServer)
}

// Announce writes r into the registry and keeps it fresh until ctx ends;
// then it removes the entry. Filer errors are retried; Announce returns
// after the removal attempt.
func Announce(ctx context.Context, filer FilerFunc, r Registration, refresh time.Duration) {
	body, _ := json.Marshal(r)
	name := EntryName(r.VolumeServer)
	put := func() error {
		return filer(func(c filer_pb.SeaweedFilerClient) error {
			now := time.Now().Unix()
			return filer_pb.CreateEntry(ctx, c, &filer_pb.CreateEntryRequest{Directory: RegistryDir, Entry: &filer_pb.Entry{
				Name:       name,
				Content:    body,
				Attributes: &filer_pb.FuseAttributes{Mtime: now, Crtime: now, FileMode: 0644, FileSize: uint64(len(body))},
			}})
		})
	}
	announced := false
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			if announced {
				rmCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				err := filer(func(c filer_pb.SeaweedFilerClient) error {
					return filer_pb.DoRemove(rmCtx, c, RegistryDir, name, false, false, false, false, nil)
				})
				cancel()
				if err != nil {
					glog.Warningf("pushdown: withdraw %s from %s: %v", r.Address, RegistryDir, err)
				}
			}
			return
		case <-retry.C:
			if err := put(); err != nil {
				glog.V(1).Infof("pushdown: announce %s in %s: %v (retrying)", r.Address, RegistryDir, err)
				retry.Reset(time.Second)
				continue
			}
			if !announced {
				glog.V(0).Infof("pushdown: volume pushdown service %s announced for volume server %s", r.Address, r.VolumeServer)
			}
			announced = true
			retry.Reset(refresh)
		}
	}
}

// List reads the registry.
func List(ctx context.Context, filer FilerFunc) ([]Registration, error) {
	var out []Registration
	err := filer(func(c filer_pb.SeaweedFilerClient) error {
		return filer_pb.SeaweedList(ctx, c, RegistryDir, "", func(e *filer_pb.Entry, isLast bool) error {
			if e.IsDirectory {
				return nil
			}
			var r Registration
			if err := json.Unmarshal(e.Content, &r); err != nil || r.Address == "" {
				glog.Warningf("pushdown: ignoring malformed registry entry %s/%s: %v", RegistryDir, e.Name, err)
				return nil
			}
			out = append(out, r)
			return nil
		}, "", false, 10000)
	})
	if err != nil && strings.Contains(err.Error(), "no entry is found") {
		return nil, nil
	}
	return out, err
}

// Endpoint is a discovered volume pushdown service.
type Endpoint struct {
	Registration
	Healthy   bool
	LastSeen  time.Time // last successful probe
	LastError string
	Status    *pushdown_pb.VolumeStatus
}

// Watcher keeps the set of volume pushdown endpoints current.
type Watcher struct {
	Filer    FilerFunc
	Pool     *grpcutil.ConnPool
	Interval time.Duration // between refreshes
	Probe    time.Duration // Status probe timeout
	GCAfter  time.Duration // unreachable this long → registry entry deleted
	// Credentials, when set, adds the caller's proof (a service token) to
	// the context of each Status probe.
	Credentials func(ctx context.Context) (context.Context, error)

	mu        sync.RWMutex
	endpoints map[string]*Endpoint // by volume server
	firstSeen map[string]time.Time
	refreshed chan struct{}
}

// NewWatcher returns a Watcher with default timings.
func NewWatcher(filer FilerFunc, pool *grpcutil.ConnPool) *Watcher {
	return &Watcher{Filer: filer, Pool: pool, Interval: 2 * time.Second, Probe: 2 * time.Second, GCAfter: 2 * time.Minute,
		endpoints: map[string]*Endpoint{}, firstSeen: map[string]time.Time{}, refreshed: make(chan struct{})}
}

// Run refreshes until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		w.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh lists the registry and probes every endpoint once.
func (w *Watcher) Refresh(ctx context.Context) {
	regs, err := List(ctx, w.Filer)
	if err != nil {
		glog.V(1).Infof("pushdown: list %s: %v", RegistryDir, err)
		return
	}
	now := time.Now()
	// probed 16 at a time (a cluster of hundreds of volume servers does
	// not open hundreds of connections at once)
	results := make([]*Endpoint, len(regs))
	safe.ForEach(len(regs), 16, 1, func(i, _ int) { results[i] = w.probe(ctx, regs[i]) })

	w.mu.Lock()
	seen := map[string]bool{}
	var collect []string
	for _, ep := range results {
		key := ep.VolumeServer
		seen[key] = true
		prev := w.endpoints[key]
		if ep.Healthy {
			ep.LastSeen = now
		} else if prev != nil {
			ep.LastSeen = prev.LastSeen
		}
		if _, ok := w.firstSeen[key]; !ok {
			w.firstSeen[key] = now
		}
		last := ep.LastSeen
		if last.IsZero() {
			last = w.firstSeen[key]
		}
		if !ep.Healthy && now.Sub(last) > w.GCAfter {
			collect = append(collect, key)
			delete(w.firstSeen, key)
			delete(w.endpoints, key)
			continue
		}
		if prev != nil && prev.Healthy != ep.Healthy {
			if ep.Healthy {
				glog.V(0).Infof("pushdown: volume endpoint %s (volume server %s) is reachable", ep.Address, key)
			} else {
				glog.V(0).Infof("pushdown: volume endpoint %s (volume server %s) went away: %s", ep.Address, key, ep.LastError)
			}
		} else if prev == nil && ep.Healthy {
			glog.V(0).Infof("pushdown: discovered volume endpoint %s (volume server %s)", ep.Address, key)
		}
		w.endpoints[key] = ep
	}
	for key := range w.endpoints {
		if !seen[key] {
			glog.V(0).Infof("pushdown: volume endpoint for %s withdrew", key)
			delete(w.endpoints, key)
			delete(w.firstSeen, key)
		}
	}
	close(w.refreshed)
	w.refreshed = make(chan struct{})
	w.mu.Unlock()

	for _, key := range collect {
		glog.V(0).Infof("pushdown: removing registry entry of %s, unreachable for more than %s", key, w.GCAfter)
		_ = w.Filer(func(c filer_pb.SeaweedFilerClient) error {
			return filer_pb.DoRemove(ctx, c, RegistryDir, EntryName(key), false, false, false, false, nil)
		})
	}
}

func (w *Watcher) probe(ctx context.Context, r Registration) *Endpoint {
	ep := &Endpoint{Registration: r}
	conn, err := w.Pool.Get(r.Address)
	if err != nil {
		ep.LastError = err.Error()
		return ep
	}
	pctx, cancel := context.WithTimeout(ctx, w.Probe)
	defer cancel()
	if w.Credentials != nil {
		if pctx, err = w.Credentials(pctx); err != nil {
			ep.LastError = err.Error()
			return ep
		}
	}
	st, err := pushdown_pb.NewPushdownVolumeClient(conn).Status(pctx, &pushdown_pb.StatusRequest{})
	if err != nil {
		ep.LastError = err.Error()
		return ep
	}
	if st.GetVolumeServer() != r.VolumeServer {
		ep.LastError = fmt.Sprintf("answers for volume server %s, registered for %s", st.GetVolumeServer(), r.VolumeServer)
		return ep
	}
	ep.Healthy = true
	ep.Status = st
	ep.Version = st.GetVersion()
	return ep
}

// Endpoints returns every known endpoint, healthy or not, by volume server.
func (w *Watcher) Endpoints() []Endpoint {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]Endpoint, 0, len(w.endpoints))
	for _, ep := range w.endpoints {
		out = append(out, *ep)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VolumeServer < out[j].VolumeServer })
	return out
}

// Healthy returns the endpoints the catalog routes to.
func (w *Watcher) Healthy() []Endpoint {
	var out []Endpoint
	for _, ep := range w.Endpoints() {
		if ep.Healthy {
			out = append(out, ep)
		}
	}
	return out
}

// ForVolumeServer returns the healthy endpoint beside volume server vs.
func (w *Watcher) ForVolumeServer(vs string) (Endpoint, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	ep, ok := w.endpoints[vs]
	if !ok || !ep.Healthy {
		return Endpoint{}, false
	}
	return *ep, true
}

// WaitRefresh blocks until the next refresh completes or ctx ends.
func (w *Watcher) WaitRefresh(ctx context.Context) {
	w.mu.RLock()
	ch := w.refreshed
	w.mu.RUnlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
