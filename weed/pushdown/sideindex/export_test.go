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
