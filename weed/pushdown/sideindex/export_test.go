package sideindex

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
)

// Test helpers for the external tests (package sideindex_test, which may
// import packages that import this one).

// NewTestFile is the first generated file of rows rows.
func NewTestFile(t testing.TB, rows int64) *testFile { return generatedFiles(t, rows)[0] }

func (f *testFile) Schema() *iceberg.Schema { return f.schema }
func (f *testFile) Oracle() *oracle.File    { return f.df }
func (f *testFile) Input(t testing.TB, fieldID int, params map[string]string) Input {
	return f.input(t, fieldID, params)
}

var (
	WantOf     = wantOf
	RandomLeaf = randomLeaf
)

// ForgedCase is one kind's committed payload of a data file and a forgery
// of it (another file's payload under its header, checksums recomputed).
type ForgedCase struct {
	Kind         Kind
	Want         Header
	Good, Forged []byte
}

// ForgedCases are the forgery cases of every kind.
func ForgedCases(t testing.TB) []ForgedCase {
	var out []ForgedCase
	for _, c := range payloadCases(t) {
		out = append(out, ForgedCase{Kind: c.kind, Want: c.want, Good: c.good, Forged: c.forged["another file's"]})
	}
	return out
}
