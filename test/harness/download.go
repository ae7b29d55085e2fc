package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// DownloadTable copies the data files of table name (namespace.table) to
// a temporary folder through the S3 gateway, in the order iceberg-go's
// scan plans them, for a peer reading local disk; it returns their paths.
func DownloadTable(t testing.TB, c *Cluster, name string) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier(strings.Split(name, ".")))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, client := t.TempDir(), c.S3(t)
	var out []string
	for i, task := range tasks {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(task.File.FilePath(), "s3://"), "/")
		obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("f%03d.parquet", i))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(f, obj.Body)
		obj.Body.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, path)
	}
	return out
}
