package sideindex_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/lakeweed/seaweedfs/weed/pushdown/indexing"
	"github.com/lakeweed/seaweedfs/weed/pushdown/sideindex"
)

// What the volume reports for a probe's payload, for every kind: the
// committed bytes open; a forgery that passes every check the payload
// carries, a flipped byte or a truncation under the committed size and
// SHA-256 is corrupt (the plan loses that pruning, the catalog marks the
// entry); a probe without a recorded hash is stale (rebuilt).
func TestAPayloadThatIsNotTheCommittedOneIsCorruptForEveryKind(t *testing.T) {
	ctx := context.Background()
	cases := sideindex.ForgedCases(t)
	if len(cases) != len(sideindex.Kinds()) {
		t.Fatalf("%d cases for %d kinds", len(cases), len(sideindex.Kinds()))
	}
	for _, c := range cases {
		commit := sideindex.CommitOf(c.Good)
		if idx, state, err := indexing.OpenPayload(ctx, c.Kind, c.Good, c.Want, commit); idx == nil || state != "" || err != nil {
			t.Fatalf("%s: the committed payload: state %q, %v", c.Kind.Name(), state, err)
		}
		if _, err := c.Kind.Open(ctx, c.Forged, c.Want); err != nil {
			t.Fatalf("%s: the forgery does not even open without the hash (it forges nothing): %v", c.Kind.Name(), err)
		}
		flipped := bytes.Clone(c.Good)
		flipped[len(flipped)/2] ^= 0x10
		for what, p := range map[string][]byte{"a forgery": c.Forged, "a flipped byte": flipped, "a truncation": c.Good[:len(c.Good)-7]} {
			if idx, state, err := indexing.OpenPayload(ctx, c.Kind, p, c.Want, commit); idx != nil || state != indexing.StateCorrupt || err == nil {
				t.Errorf("%s: %s under the committed hash: state %q, %v; want corrupt", c.Kind.Name(), what, state, err)
			}
		}
		if idx, state, err := indexing.OpenPayload(ctx, c.Kind, c.Good, c.Want, sideindex.Commit{}); idx != nil || state != indexing.StateStale || err == nil {
			t.Errorf("%s: no recorded hash: state %q, %v; want stale", c.Kind.Name(), state, err)
		}
	}
}
