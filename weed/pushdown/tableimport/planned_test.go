package tableimport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// bucketIO reads s3://<bucket>/<key> objects of a Plan from a local folder
// laid out like the bucket.
type bucketIO struct{ root string }

func (b bucketIO) Open(name string) (icebergio.File, error) {
	rest, ok := strings.CutPrefix(name, "s3://")
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return os.Open(filepath.Join(b.root, filepath.FromSlash(rest)))
}

func (b bucketIO) Remove(string) error { return os.ErrPermission }

// materialize lays the plan's objects out under root/<bucket>/<key>, as the
// warehouse would hold them.
func materialize(t testing.TB, plan *Plan, root string) {
	t.Helper()
	for _, o := range plan.Objects {
		dst := filepath.Join(root, plan.Bucket, filepath.FromSlash(o.Key))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(o.Source)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openPlanned opens the rewritten table from a materialized plan.
func openPlanned(t testing.TB, plan *Plan, root string) *table.Table {
	t.Helper()
	fsys := bucketIO{root: root}
	tbl, err := table.NewFromLocation(context.Background(), table.Identifier{"dst", "events"}, plan.MetadataLocation,
		func(context.Context) (icebergio.IO, error) { return fsys, nil }, nil)
	if err != nil {
		t.Fatalf("open the rewritten table at %s: %v", plan.MetadataLocation, err)
	}
	return tbl
}
