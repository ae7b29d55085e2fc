package sideindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Commit is what the registry records of a payload when its build
// commits: its size and the SHA-256 of its bytes. The header and the
// checksums inside a payload only catch accidents — anyone who can write
// the payload's file can stamp another payload with a valid header and
// checksum (Restamp) — so a payload is trusted only while its bytes are
// the ones committed:
//
//	build ─▶ CommitOf(payload) ─▶ BuiltIndex ─▶ registry entry ─▶ every probe
//	probe ─▶ read the payload ─▶ Commit.Verify (size, SHA-256) ─▶ Kind.Open ─▶ Index
//	                                  └─ mismatch: ErrNotCommitted (the entry is corrupt)
type Commit struct {
	Bytes  int64
	SHA256 string // lower-case hex
}

// ErrNotCommitted is the error of payload bytes that are not the ones the
// registry committed.
var ErrNotCommitted = errors.New("the payload is not the one the registry committed")

// ErrNoCommit is the error of a probe naming no committed size and hash
// (an entry committed before payloads were hashed): it is not trusted.
var ErrNoCommit = errors.New("the registry recorded no SHA-256 for this payload (committed before payloads were hashed); it is rebuilt")

// CommitOf is the commitment to payload.
func CommitOf(payload []byte) Commit {
	sum := sha256.Sum256(payload)
	return Commit{Bytes: int64(len(payload)), SHA256: hex.EncodeToString(sum[:])}
}

// Known reports whether c records a size and a well-formed SHA-256.
func (c Commit) Known() bool {
	if c.Bytes <= 0 || len(c.SHA256) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(c.SHA256)
	return err == nil
}

// Verify checks that payload is the committed one: ErrNoCommit when c is
// not Known, an error wrapping ErrNotCommitted when the size or the
// SHA-256 differs.
func (c Commit) Verify(payload []byte) error {
	if !c.Known() {
		return ErrNoCommit
	}
	if int64(len(payload)) != c.Bytes {
		return fmt.Errorf("%w (%d bytes, %d were committed)", ErrNotCommitted, len(payload), c.Bytes)
	}
	if got := CommitOf(payload); got.SHA256 != c.SHA256 {
		return fmt.Errorf("%w (SHA-256 %.16s…, %.16s… was committed)", ErrNotCommitted, got.SHA256, c.SHA256)
	}
	return nil
}

// OpenCommitted opens payload as k's Index after checking it is the
// committed one (Commit.Verify) — the only way a service opens a payload
// it did not just build.
func OpenCommitted(ctx context.Context, k Kind, payload []byte, want Header, c Commit) (Index, error) {
	if err := c.Verify(payload); err != nil {
		return nil, fmt.Errorf("%s side index: %w", k.Name(), err)
	}
	return k.Open(ctx, payload, want)
}
