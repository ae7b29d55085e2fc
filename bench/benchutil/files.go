package benchutil

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// DownloadTable copies the data files of table name (namespace.table) to
// a temporary folder through the S3 gateway, for a peer reading local
// disk; it returns their paths.
func DownloadTable(t testing.TB, c *harness.Cluster, name string) []string {
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

// CanMount says why weed mount (FUSE) cannot run here ("" when it can).
func CanMount() string {
	if os.Geteuid() != 0 {
		return "weed mount (FUSE) needs root here"
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "weed mount needs FUSE (/dev/fuse is missing)"
	}
	return ""
}

// MountTableData mounts the namespace folder of the table at location
// (s3://warehouse/<ns>/...) read-only with weed mount under the cluster's
// directory (sub names the mount point and its cache, so one cluster can
// mount several times) and returns the table's data directory and the
// mount process; the mount is undone when the test ends.
func MountTableData(t testing.TB, c *harness.Cluster, location, sub string) (string, *harness.Process) {
	t.Helper()
	mnt := filepath.Join(c.Dir, sub)
	_ = os.MkdirAll(mnt, 0o755)
	ns, rest, _ := strings.Cut(strings.TrimPrefix(location, "s3://"+c.Warehouse+"/"), "/")
	p := harness.StartProcess(t, c.Dir, sub, nil, "mount", "-filer="+c.FilerGrpcAddress(), "-dir="+mnt,
		"-filer.path="+BucketSafeMountPath(c.Warehouse, ns), "-readOnly", "-cacheDir="+filepath.Join(c.Dir, sub+"cache"))
	WaitMounted(t, mnt)
	t.Cleanup(func() { Unmount(mnt) })
	return filepath.Join(mnt, rest, "data"), p
}

// Unmount lazily unmounts a weed mount point.
func Unmount(dir string) { _ = exec.Command("umount", "-l", dir).Run() }

// BucketSafeMountPath is the filer folder to mount for namespace ns of a
// table bucket: a folder inside the bucket, never the bucket itself —
// weed mount of a bucket root rewrites the bucket's entry (its
// allow-empty-folders policy) and the table-bucket marker is lost with
// it, after which the pushdown services rightly refuse the bucket.
func BucketSafeMountPath(bucket, ns string) string { return "/buckets/" + bucket + "/" + ns }

// WaitMounted waits until weed mount serves dir (at most 30 s).
func WaitMounted(t testing.TB, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile("/proc/mounts"); err == nil && strings.Contains(string(b), dir) {
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("weed mount at %s did not come up", dir)
}
