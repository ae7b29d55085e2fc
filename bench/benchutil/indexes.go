package benchutil

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pb/pushdown_pb"
)

// P50 is the median of d in milliseconds.
func P50(d []time.Duration) float64 {
	s := append([]time.Duration{}, d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// Median is the median of xs (the upper one of an even count).
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// MinMax formats the range of xs as "lo–hi" with format.
func MinMax(xs []float64, format string) string {
	return fmt.Sprintf(format+"–"+format, slices.Min(xs), slices.Max(xs))
}

func tasksOf(t *testing.T, c *harness.Cluster, name string) (*table.Table, []table.FileScanTask) {
	ctx := context.Background()
	ns, tn, _ := strings.Cut(name, ".")
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{ns, tn})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, tasks
}

// BuildSeconds is the median wall time of one volume BuildIndexes call
// building kind on column for every data file of the table (3 calls), and
// the builds' summed build_micros: the volume-side build alone, without
// the CLI, the property commit or the catalog's scheduling.
func BuildSeconds(t *testing.T, c *harness.Cluster, name, column, kind string) (wall, busy float64) {
	tbl, tasks := tasksOf(t, c, name)
	field, ok := tbl.Schema().FindFieldByName(column)
	if !ok {
		t.Fatalf("no column %s", column)
	}
	schemaJSON, err := json.Marshal(tbl.Schema())
	if err != nil {
		t.Fatal(err)
	}
	req := &pushdown_pb.BuildIndexesRequest{SchemaJson: schemaJSON, Indexes: []*pushdown_pb.IndexSpec{{FieldId: int32(field.ID), Kind: kind}}}
	for _, task := range tasks {
		req.DataFiles = append(req.DataFiles, &pushdown_pb.DataFileDescriptor{Path: task.File.FilePath(), SizeBytes: task.File.FileSizeBytes(), RecordCount: task.File.Count()})
	}
	var walls []time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		resp, err := c.Volume(t).BuildIndexes(context.Background(), req)
		if err != nil {
			t.Fatalf("build %s(%s): %v", kind, column, err)
		}
		walls = append(walls, time.Since(t0))
		var micros int64
		for _, b := range resp.GetBuilt() {
			if b.GetError() != "" {
				t.Fatalf("build %s(%s) of %s: %s", kind, column, b.GetDataFile(), b.GetError())
			}
			micros += b.GetBuildMicros()
		}
		busy = float64(micros) / 1e6
	}
	return P50(walls) / 1000, busy
}

// OpenParquet reads the file at an s3:// location through the S3 gateway
// and opens it with arrow-go.
func OpenParquet(t testing.TB, c *harness.Cluster, location string) *file.Reader {
	t.Helper()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(location, "s3://"), "/")
	obj, err := c.S3(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return rdr
}

// ColumnBytes sums the compressed bytes of a top-level column (all its
// leaves) over the table's files.
func ColumnBytes(t *testing.T, c *harness.Cluster, name, column string) int64 {
	_, tasks := tasksOf(t, c, name)
	var n int64
	for _, task := range tasks {
		rdr := OpenParquet(t, c, task.File.FilePath())
		md := rdr.MetaData()
		for col := 0; col < md.Schema.NumColumns(); col++ {
			if p := md.Schema.Column(col).ColumnPath().String(); p != column && !strings.HasPrefix(p, column+".") {
				continue
			}
			for rg := 0; rg < md.NumRowGroups(); rg++ {
				cc, _ := md.RowGroup(rg).ColumnChunk(col)
				n += cc.TotalCompressedSize()
			}
		}
		rdr.Close()
	}
	return n
}

// PayloadBytes sums the committed payloads of kind (on fieldID; 0: any).
func PayloadBytes(t *testing.T, c *harness.Cluster, name, kind string, fieldID int32) int64 {
	list, err := c.Catalog(t).ListIndexes(context.Background(), &pushdown_pb.ListIndexesRequest{Table: name})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range list.GetEntries() {
		if e.GetKind() == kind && e.GetState() == "committed" && (fieldID == 0 || e.GetFieldId() == fieldID) {
			n += e.GetPayloadBytes()
		}
	}
	return n
}
