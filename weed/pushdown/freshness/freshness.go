// Package freshness tells caches keyed by (path, size) when a path's bytes
// may have changed, so a file rewritten in place — even with the same size —
// is never served what was cached for its old bytes.
//
//	filer SubscribeMetadata(/buckets/) ──▶ Follow ──▶ Tracker.Changed(path)   (update, delete, rename)
//	                                         │          directory events, reconnects ─▶ Tracker.Reset()
//	cache hit: entry loaded at t ──▶ Tracker.Fresh(path, t)? ── no ──▶ reload
//
// The tracker remembers recent changes in a bounded LRU; when it forgets
// one, it raises a floor below which every entry counts as stale, so
// forgetting costs reloads, never a stale answer. Iceberg files are
// immutable, so changes are rare: creations of new files are not changes.
package freshness

import (
	"context"
	mrand "math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	"github.com/seaweedfs/seaweedfs/weed/pb"
	"github.com/seaweedfs/seaweedfs/weed/pb/filer_pb"
	"google.golang.org/grpc"
)

var metricEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "SeaweedFS", Subsystem: "pushdown", Name: "freshness_events_total",
	Help: "Filer metadata events seen by the pushdown caches' freshness tracker, by effect (changed, reset, ignored).",
}, []string{"effect"})

// Register adds the tracker metrics to reg (once).
func Register(reg prometheus.Registerer) { _ = reg.Register(metricEvents) }

// DefaultRemembered is how many changed paths a Tracker remembers.
const DefaultRemembered = 200_000

// Tracker records when paths last changed.
type Tracker struct {
	changes *lru.Cache[string, int64] // filer path → unix ns of its last change
	floor   atomic.Int64              // entries loaded at or before this are stale
	// OnDirectoryUpdate, when set before Follow, is told of every update of
	// a directory entry's attributes in place (an Iceberg table's catalog
	// record lives on such an entry: a commit updates it).
	OnDirectoryUpdate func(parent string, old, updated *filer_pb.Entry)
}

// New returns a tracker remembering up to remembered changed paths.
func New(remembered int) *Tracker {
	t := &Tracker{}
	t.changes, _ = lru.NewWithEvict[string, int64](max(1, remembered), func(_ string, at int64) {
		t.raiseFloor(at)
	})
	return t
}

// Now is the load time a cache records for an entry: take it before
// reading the bytes, so a change during the load makes the entry stale.
func Now() int64 { return time.Now().UnixNano() }

// Changed records that path (a filer path or an s3:// location) changed
// now.
func (t *Tracker) Changed(path string) {
	if t == nil {
		return
	}
	t.changes.Add(filerPath(path), Now())
}

// Reset makes every entry loaded until now stale (events may have been
// missed).
func (t *Tracker) Reset() {
	if t == nil {
		return
	}
	t.raiseFloor(Now())
}

func (t *Tracker) raiseFloor(at int64) {
	for {
		cur := t.floor.Load()
		if at <= cur || t.floor.CompareAndSwap(cur, at) {
			return
		}
	}
}

// Fresh reports whether an entry for path (a filer path or an s3://
// location) loaded at loadedAt (Now() before the load) may still be
// served. A nil tracker trusts every entry.
func (t *Tracker) Fresh(path string, loadedAt int64) bool {
	if t == nil {
		return true
	}
	if loadedAt <= t.floor.Load() {
		return false
	}
	if t.changes.Len() == 0 {
		return true
	}
	if at, ok := t.changes.Peek(filerPath(path)); ok && loadedAt <= at {
		return false
	}
	return true
}

// filerPath maps an s3://bucket/key location to its filer path the way
// fileread.FilerPath does (without validating it).
func filerPath(loc string) string {
	if strings.HasPrefix(loc, "/") {
		return loc
	}
	_, rest, ok := strings.Cut(loc, "://")
	if !ok {
		return loc
	}
	bucket, key, _ := strings.Cut(rest, "/")
	return "/buckets/" + bucket + "/" + strings.TrimLeft(key, "/")
}

// Follow subscribes to the filer's metadata events under /buckets/ and
// feeds t until ctx ends. A stream that ends is resumed from the last event
// seen (the filer keeps its metadata log, so nothing is missed); when the
// filer could not be reached at all, t is reset once the subscription is
// back, since events may have been lost meanwhile.
func (t *Tracker) Follow(ctx context.Context, filer pb.ServerAddress, dial grpc.DialOption, clientName string) {
	since := Now()
	lost := false
	backoff := time.Second
	logged := false
	// The filer keeps a subscription open only for a client that names
	// itself (id) and counts its reconnections (epoch); an anonymous one
	// gets EOF at once.
	clientID := int32(mrand.Uint32()>>1) | 1
	var epoch int32
	for ctx.Err() == nil {
		established := false
		epoch++
		err := pb.WithFilerClient(true, 0, filer, dial, func(c filer_pb.SeaweedFilerClient) error {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			stream, err := c.SubscribeMetadata(sctx, &filer_pb.SubscribeMetadataRequest{
				ClientName: clientName, PathPrefix: "/buckets/", SinceNs: since, ClientSupportsBatching: true,
				ClientId: clientID, ClientEpoch: epoch,
			})
			if err != nil {
				return err
			}
			established = true
			if lost {
				t.Reset()
				metricEvents.WithLabelValues("reset").Inc()
				lost = false
			}
			for {
				resp, err := stream.Recv()
				if err != nil {
					return err
				}
				backoff = time.Second
				for _, ev := range append([]*filer_pb.SubscribeMetadataResponse{resp}, resp.GetEvents()...) {
					if ev.GetTsNs() > since {
						since = ev.GetTsNs()
					}
					t.apply(ev)
				}
			}
		})
		if ctx.Err() != nil {
			return
		}
		if !established {
			lost = true
		}
		if !logged {
			glog.V(0).Infof("pushdown: filer metadata subscription of %s ended (%v); resuming", clientName, err)
			logged = true
		} else {
			glog.V(1).Infof("pushdown: filer metadata subscription of %s ended (%v); resuming", clientName, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// apply records what one metadata event changed. Creating a file changes
// nothing a cache holds; an update, deletion or rename changes the old
// path (and the new one, which a rename may overwrite). Anything touching
// a directory resets the tracker.
func (t *Tracker) apply(ev *filer_pb.SubscribeMetadataResponse) {
	n := ev.GetEventNotification()
	if n == nil {
		return
	}
	old, neu := n.GetOldEntry(), n.GetNewEntry()
	if old == nil {
		if neu != nil && n.GetNewParentPath() != "" && n.GetNewParentPath() != ev.GetDirectory() {
			// A rename reported without the old entry: be safe.
			t.Reset()
			metricEvents.WithLabelValues("reset").Inc()
			return
		}
		metricEvents.WithLabelValues("ignored").Inc()
		return
	}
	if old.GetIsDirectory() {
		if neu != nil && neu.GetIsDirectory() && (n.GetNewParentPath() == "" || n.GetNewParentPath() == ev.GetDirectory()) && old.GetName() == neu.GetName() {
			metricEvents.WithLabelValues("ignored").Inc() // attributes of a directory changed
			if t.OnDirectoryUpdate != nil {
				t.OnDirectoryUpdate(ev.GetDirectory(), old, neu)
			}
			return
		}
		t.Reset()
		metricEvents.WithLabelValues("reset").Inc()
		return
	}
	t.Changed(join(ev.GetDirectory(), old.GetName()))
	if neu != nil {
		parent := n.GetNewParentPath()
		if parent == "" {
			parent = ev.GetDirectory()
		}
		t.Changed(join(parent, neu.GetName()))
	}
	metricEvents.WithLabelValues("changed").Inc()
}

func join(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}
