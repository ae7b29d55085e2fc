package integration

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/test/harness"
)

// The first start of `make run` loads the demo into a fresh `weed mini
// -pushdown`; neither the loader nor the cluster reports an error on the
// way (the loader once had iceberg-go open every uploaded file with a
// whole-object GET and drop it after the footer, a screen of "connection
// reset by peer" in the gateway's log), and the manifest entries carry each
// file's true size and row count.
func TestTheDemoLoadOfAFirstStartLogsNoErrorAndRecordsTrueFileSizes(t *testing.T) {
	t.Parallel() // its own cluster: runs beside another such test (CI time)
	c := harness.StartMini(t, harness.MiniOptions{})
	before, err := os.ReadFile(c.Proc.Log)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := harness.Weed(t, "pushdown", "demo", "-table", "demo.events", "-rows", "100000", "-files", "4",
		"-catalog", c.CatalogAddr(), "-iceberg", c.IcebergURI(), "-s3", c.S3Endpoint())
	if err != nil {
		t.Fatalf("weed pushdown demo: %v\n%s%s", err, out, errOut)
	}
	if strings.TrimSpace(errOut) != "" {
		t.Errorf("the loader wrote to stderr:\n%s", errOut)
	}
	after, err := os.ReadFile(c.Proc.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(after[len(before):]), "\n") {
		if strings.Contains(line, "connection reset by peer") || strings.HasPrefix(line, "E") {
			t.Errorf("the cluster logged an error during the demo load: %s", line)
		}
	}
	ctx := context.Background()
	tbl := loadTable(t, c, "demo.events")
	client := c.S3(t)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		df := task.File
		key := strings.TrimPrefix(df.FilePath(), "s3://"+c.Warehouse+"/")
		head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(c.Warehouse), Key: aws.String(key)})
		if err != nil {
			t.Fatalf("head %s: %v", df.FilePath(), err)
		}
		if aws.ToInt64(head.ContentLength) != df.FileSizeBytes() || df.Count() != 25000 {
			t.Errorf("%s: manifest says %d bytes, %d rows; the object has %d bytes, the file 25000 rows",
				key, df.FileSizeBytes(), df.Count(), aws.ToInt64(head.ContentLength))
		}
		if len(df.LowerBoundValues()) == 0 || len(df.ValueCounts()) == 0 {
			t.Errorf("%s: the manifest entry has no column statistics", key)
		}
	}
	if len(tasks) != 4 {
		t.Errorf("the snapshot has %d data files, want 4", len(tasks))
	}
}
