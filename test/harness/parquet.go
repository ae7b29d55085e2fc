package harness

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// WriteParquet writes rec as one Parquet file (field ids, when wanted, go
// in the Arrow fields' "PARQUET:field_id" metadata; arrowOpts e.g.
// pqarrow.WithStoreSchema()).
func WriteParquet(t testing.TB, rec arrow.RecordBatch, props *parquet.WriterProperties, arrowOpts ...pqarrow.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.NewArrowWriterProperties(arrowOpts...))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// WriteParquetRecords writes recs as one Parquet file, one record after
// another (each at most props' row group length, so slices of a record
// are never written: arrow-go rewrites the first slice's values for later
// slices of a fixed_size_list record).
func WriteParquetRecords(t testing.TB, schema *arrow.Schema, recs []arrow.RecordBatch, props *parquet.WriterProperties) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &buf, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// CommitDataFiles uploads Parquet files under the table's data/ folder
// through the S3 gateway and commits them in one snapshot; parts[i] are
// file i's partition values (nil for an unpartitioned table).
func CommitDataFiles(t testing.TB, c *Cluster, tbl *table.Table, datas [][]byte, rows []int64, parts []map[int]any) *table.Table {
	t.Helper()
	ctx := context.Background()
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(tbl.Location(), "s3://"), "/")
	var dfs []iceberg.DataFile
	for i, data := range datas {
		key := fmt.Sprintf("%s/data/part-%05d.parquet", prefix, i)
		if _, err := c.S3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)}); err != nil {
			t.Fatal(err)
		}
		var part map[int]any
		if parts != nil {
			part = parts[i]
		}
		df, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, "s3://"+bucket+"/"+key, iceberg.ParquetFile, part, nil, nil, rows[i], int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		dfs = append(dfs, df.Build())
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, dfs, nil); err != nil {
		t.Fatal(err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
