// Package benchutil holds what the benchmarks under bench/ share.
package benchutil

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lakeweed/seaweedfs/test/harness"
	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/oracle"
	"github.com/lakeweed/seaweedfs/weed/pushdown/predicate"
)

// PhysicalMinimum decodes every file of the table and sums, per query (name →
// WHERE clause), the compressed bytes of the pages (of the projected columns) that hold a
// matching row, plus each such column chunk's dictionary region.
func PhysicalMinimum(t *testing.T, c *harness.Cluster, name string, wheres map[string]string, projection string) map[string]int64 {
	ctx := context.Background()
	ns, tn, _ := strings.Cut(name, ".")
	tbl, err := c.Iceberg(t).LoadTable(ctx, table.Identifier{ns, tn})
	if err != nil {
		t.Fatal(err)
	}
	schema := tbl.Schema()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type decodedFile struct {
		data []byte
		df   *oracle.File
	}
	var files []decodedFile
	for _, task := range tasks {
		rest := strings.TrimPrefix(task.File.FilePath(), "s3://")
		bucket, key, _ := strings.Cut(rest, "/")
		obj, err := c.S3(t).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(obj.Body)
		obj.Body.Close()
		df, err := oracle.DecodeFile(data, schema)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, decodedFile{data, df})
	}
	projected := map[string]bool{}
	for _, p := range strings.Split(projection, ",") {
		projected[p] = true
	}
	out := map[string]int64{}
	for qname, where := range wheres {
		req, err := cli.BuildPlanRequest(ctx, c.Endpoints(), name, 0, where, projection)
		if err != nil {
			t.Fatal(err)
		}
		var e predicate.Expr = predicate.Const{Value: true}
		if len(req.Predicate) > 0 {
			raw, err := predicate.DecodeSubstrait(req.Predicate, schema)
			if err != nil {
				t.Fatal(err)
			}
			if e, err = predicate.Bind(raw, schema, predicate.DefaultLimits); err != nil {
				t.Fatal(err)
			}
		}
		var total int64
		for _, f := range files {
			rdr, err := file.NewParquetReader(bytes.NewReader(f.data))
			if err != nil {
				t.Fatal(err)
			}
			md := rdr.MetaData()
			pir := rdr.GetPageIndexReader()
			matching := f.df.Matching(e)
			for rg := 0; rg < md.NumRowGroups(); rg++ {
				first := f.df.RowGroupStart[rg]
				n := md.RowGroup(rg).NumRows()
				var local []int64
				for _, m := range matching {
					if m >= first && m < first+n {
						local = append(local, m-first)
					}
				}
				if len(local) == 0 {
					continue
				}
				rgr, err := pir.RowGroup(rg)
				if err != nil {
					t.Fatal(err)
				}
				for col := 0; col < md.Schema.NumColumns(); col++ {
					if !projected[strings.Split(md.Schema.Column(col).Path(), ".")[0]] {
						continue
					}
					cc, _ := md.RowGroup(rg).ColumnChunk(col)
					oi, err := rgr.GetOffsetIndex(col)
					if err != nil || oi == nil {
						t.Fatalf("physical minimum needs a page index (run on -indexed all data)")
					}
					locs := oi.GetPageLocations()
					if cc.HasDictionaryPage() && locs[0].Offset > cc.DictionaryPageOffset() {
						total += locs[0].Offset - cc.DictionaryPageOffset()
					}
					for i, l := range locs {
						end := n
						if i+1 < len(locs) {
							end = locs[i+1].FirstRowIndex
						}
						for _, r := range local {
							if r >= l.FirstRowIndex && r < end {
								total += int64(l.CompressedPageSize)
								break
							}
						}
					}
				}
			}
			rdr.Close()
		}
		out[qname] = total
	}
	return out
}
