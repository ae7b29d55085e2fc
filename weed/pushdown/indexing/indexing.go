// Package indexing is the machinery every side-index kind shares: where a
// payload lives, which indexes a table wants, the registry of what was
// built, and how answers from several leaves combine. The kinds themselves
// (one builder and one evaluator each) live in weed/pushdown/sideindex.
//
//	table property lakeweed.indexes ──▶ Wanted (field id, kind, params)
//	      │ catalog: live files lacking a committed entry
//	      ▼
//	volume BuildIndexes: footer identity ─▶ Kind.Build ─▶ <payload>.tmp-… ─▶ read back, Kind.Open
//	                     ─▶ rename to <parent>/.index/<file>/<identity>/<kind>.fid_<id>
//	                     ─▶ Registry: committed, with the payload's size and SHA-256
//	Plan: leaves with committed entries ─▶ volume EvaluateIndexes (one call per endpoint;
//	      each probe names the committed size and SHA-256, verified before the payload opens)
//	      ─▶ Combine(expr): AND ∩, OR ∪, unknown = identity under AND, absorbing under OR
//	      ─▶ positions narrow row groups, row ranges and pages (plan's side_index tier)
//
// Soundness: an index that is missing, stale, corrupt or unreadable, or an
// endpoint that is down, answers "unknown" — fewer prunes, never fewer rows.
package indexing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/indexstore"
	"github.com/lakeweed/seaweedfs/weed/pushdown/perr"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// Property is the table property naming the side indexes a table wants.
const Property = "lakeweed.indexes"

// Spec is one wanted index.
type Spec struct {
	FieldID int               `json:"field-id"`
	Kind    string            `json:"kind"`
	Params  map[string]string `json:"params,omitempty"`
}

// Key names a spec within a table.
func (s Spec) Key() string { return s.Kind + ".fid_" + strconv.Itoa(s.FieldID) }

// Wanted parses the table property (absent: none).
func Wanted(props iceberg.Properties) ([]Spec, error) {
	raw, ok := props[Property]
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var specs []Spec
	if err := json.Unmarshal([]byte(raw), &specs); err != nil {
		return nil, perr.New(perr.FailedPrecondition, "table property %s is not a JSON list of {\"field-id\", \"kind\", \"params\"}: %v", Property, err)
	}
	seen := map[string]bool{}
	out := specs[:0]
	for _, s := range specs {
		if s.FieldID <= 0 || s.Kind == "" {
			return nil, perr.New(perr.FailedPrecondition, "table property %s: entry %+v needs a positive field-id and a kind", Property, s)
		}
		if !seen[s.Key()] {
			seen[s.Key()] = true
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, nil
}

// Encode is the property value of specs.
func Encode(specs []Spec) string {
	if len(specs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(specs)
	return string(b)
}

// PayloadName is a payload's file name: <kind>.fid_<field id>.
func PayloadName(kind string, fieldID int) string { return kind + ".fid_" + strconv.Itoa(fieldID) }

// PayloadPath is where the payload of (data file, identity, kind, field
// id) lives: <data parent>/.index/<file name>/<identity>/<kind>.fid_<id>.
func PayloadPath(dataFile, identity, kind string, fieldID int) string {
	return indexstore.Dir(dataFile, identity) + "/" + PayloadName(kind, fieldID)
}

// TempPrefix starts the names of payloads being written; a name with it is
// never read as a payload and is collected when left behind.
const TempPrefix = ".tmp-"

// States of a registry entry.
const (
	StateBuilding  = "building"
	StateCommitted = "committed"
	StateStale     = "stale"
	StateMissing   = "missing"
	StateCorrupt   = "corrupt"
	StateFailed    = "failed"
)

// Entry is one registry row: an index of one data file.
type Entry struct {
	DataFile     string `json:"data-file"`
	FieldID      int    `json:"field-id"`
	Kind         string `json:"kind"`
	Identity     string `json:"identity"`
	PayloadPath  string `json:"payload-path,omitempty"`
	PayloadBytes int64  `json:"payload-bytes,omitempty"`
	// PayloadSHA256 is the hex SHA-256 of the committed payload's bytes:
	// the volume opens the payload only while its bytes still hash to it
	// (sideindex.Commit). An entry without one is not trusted.
	PayloadSHA256 string `json:"payload-sha256,omitempty"`
	State         string `json:"state"`
	Reason        string `json:"reason,omitempty"`
	BuiltUnixMs   int64  `json:"built-unix-ms,omitempty"`
	VerifiedMs    int64  `json:"verified-unix-ms,omitempty"`
	// Params are the build parameters of the spec the entry was built
	// for; a spec whose params differ is built again.
	Params map[string]string `json:"params,omitempty"`
	// OrphanedMs is when maintenance first found the data file in no
	// snapshot the table lists (0 = it is live); the entry and its payload
	// are removed a grace period later.
	OrphanedMs int64 `json:"orphaned-unix-ms,omitempty"`
}

// Serves reports whether the entry is a committed index of the file
// identity built with sp's parameters, whose payload's size and SHA-256
// the registry recorded.
func (e Entry) Serves(sp Spec, identity string) bool {
	return e.State == StateCommitted && e.Commit().Known() && e.Identity == identity && maps.Equal(e.Params, sp.Params)
}

// Commit is the entry's commitment to its payload's bytes.
func (e Entry) Commit() sideindex.Commit {
	return sideindex.Commit{Bytes: e.PayloadBytes, SHA256: e.PayloadSHA256}
}

// OpenPayload opens payload as kind's index when its bytes are the ones
// committed (sideindex.OpenCommitted); otherwise the state says why it
// cannot be used: stale when the registry recorded no size and SHA-256
// (an entry committed before payloads were hashed: rebuilt), corrupt when
// the bytes are not the committed ones or do not open.
func OpenPayload(ctx context.Context, kind sideindex.Kind, payload []byte, want sideindex.Header, c sideindex.Commit) (sideindex.Index, string, error) {
	idx, err := sideindex.OpenCommitted(ctx, kind, payload, want, c)
	switch {
	case err == nil:
		return idx, "", nil
	case errors.Is(err, sideindex.ErrNoCommit):
		return nil, StateStale, err
	}
	return nil, StateCorrupt, err
}

// Unhashed is the reason an entry committed without a payload hash is
// not used (and is rebuilt).
const Unhashed = "committed before payloads were hashed: not trusted, rebuilt"

// Key names the entry within its data file.
func (e Entry) Key() string { return e.Kind + ".fid_" + strconv.Itoa(e.FieldID) }

func (e Entry) String() string {
	return fmt.Sprintf("%s of field %d of %s: %s", e.Kind, e.FieldID, e.DataFile, e.State)
}
