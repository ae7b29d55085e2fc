package benchutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakeweed/seaweedfs/test/harness"
)

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
