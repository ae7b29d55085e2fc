package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
)

// A data file truncated, cut short or grown after the catalog cached its
// footer: the plan still describes the old bytes, and the connector's
// ranged GETs meet HTTP 416, a short body or another object size. The
// read fails FAILED_PRECONDITION naming the file and both sizes, in both
// decoding modes — never a raw S3 error, never rows decoded from other
// bytes.
func TestADataFileChangedAfterPlanningFailsThePushdownReadNamingTheFileAndSizes(t *testing.T) {
	c := sharedCluster(t)
	ctx := context.Background()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "msg", Type: iceberg.PrimitiveTypes.String},
	)
	tbl := appendedTable(t, c, table.Identifier{"trunc_it", "events"}, sc, func(b *array.RecordBuilder) {
		for i := 0; i < 5000; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("message %d of the truncation test", i))
		}
	})
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("plan files: %d tasks, %v", len(tasks), err)
	}
	path, size := tasks[0].File.FilePath(), tasks[0].File.FileSizeBytes()
	original := fetchAll(t, c, path)
	bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "s3://"), "/")
	put := func(body []byte) {
		t.Helper()
		if _, err := c.S3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	defer put(original)

	q := connector.Query{Table: "trunc_it.events", Where: "id >= 10"}
	// the catalog caches the file's footer
	for i := range pushdownModes {
		conn := modeConnector(t, c, i)
		res, err := conn.Query(ctx, q)
		if err != nil || res.NumRows() != 4990 || !res.Stats.Pushdown {
			t.Fatalf("%s before the change: %v", pushdownModes[i].name, err)
		}
		res.Release()
		conn.Close()
	}
	for _, change := range []struct {
		name string
		body []byte
	}{
		{"truncated to half", original[:len(original)/2]},
		{"cut short by 4 bytes", original[:len(original)-4]},
		{"grown by 100 bytes", append(append([]byte{}, original...), make([]byte, 100)...)},
	} {
		put(change.body)
		for i := range pushdownModes {
			conn := modeConnector(t, c, i) // a fresh range cache
			res, err := conn.Query(ctx, q)
			conn.Close()
			if err == nil {
				t.Errorf("%s, %s: %d rows, want FAILED_PRECONDITION", change.name, pushdownModes[i].name, res.NumRows())
				res.Release()
				continue
			}
			msg := err.Error()
			t.Logf("%s, %s: %v", change.name, pushdownModes[i].name, err)
			if status.Code(err) != codes.FailedPrecondition || !strings.Contains(msg, path) ||
				!strings.Contains(msg, fmt.Sprint(size)) || !strings.Contains(msg, fmt.Sprint(len(change.body))) {
				t.Errorf("%s, %s: got %v (code %s), want FAILED_PRECONDITION naming %s, its planned size %d and its size %d",
					change.name, pushdownModes[i].name, err, status.Code(err), path, size, len(change.body))
			}
			if strings.Contains(msg, "InvalidRange") || strings.Contains(msg, "StatusCode: 416") {
				t.Errorf("%s, %s: the raw S3 error leaks: %v", change.name, pushdownModes[i].name, err)
			}
		}
	}
}
