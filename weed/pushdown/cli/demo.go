package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
)

func init() {
	register(&subcommand{
		name: "demo",
		short: `Generate the demo Iceberg table and load it into a cluster: Parquet files written with arrow-go
(id unclustered, ts sorted, tenant_id confined to few files, status uniform, message, tags, embedding),
uploaded through the S3 gateway and committed with iceberg-go through the Iceberg REST catalog.`,
		usage: "[-table demo.events] [-rows N] [-files F] [-indexed all|half|none] [-seed S] [-catalog host:port] [-iceberg URL] [-s3 URL] [-warehouse B]",
		run:   runDemo,
	})
}

func runDemo(args []string) error {
	fs := newFlags(subcommands["demo"])
	def := demo.DefaultSpec()
	tableName := fs.String("table", "demo.events", "table to create, namespace.table")
	rows := fs.Int64("rows", def.Rows, "rows in the table")
	files := fs.Int("files", def.Files, "Parquet files")
	rowGroup := fs.Int64("rowGroupRows", def.RowGroupRows, "rows per row group")
	page := fs.Int64("pageBytes", def.PageBytes, "target data page size in bytes")
	indexed := fs.String("indexed", string(def.Indexed), "files with page indexes and bloom filters on id, tenant_id: all, half or none")
	seed := fs.Uint64("seed", def.Seed, "random seed (the same seed gives the same files)")
	replace := fs.Bool("replace", false, "drop the table first if it exists")
	endpoints := endpointFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	idx, err := demo.ParseIndexed(*indexed)
	if err != nil {
		return err
	}
	spec := def
	spec.Rows, spec.Files, spec.RowGroupRows, spec.PageBytes, spec.Indexed, spec.Seed = *rows, *files, *rowGroup, *page, idx, *seed
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e := endpoints(ctx)
	fmt.Printf("loading %s: %d rows in %d files (indexed: %s, seed %d) into %s through %s\n",
		*tableName, spec.Rows, spec.Files, spec.Indexed, spec.Seed, e.Iceberg, e.S3)
	res, err := demo.Load(ctx, demo.LoadOptions{Endpoints: e, Table: *tableName, Spec: spec, Replace: *replace, Progress: os.Stdout})
	if err != nil {
		return err
	}
	fmt.Printf("loaded %s: snapshot %d, %d rows, %d files, %.1f MiB at %s in %s\n",
		res.Table, res.SnapshotID, res.Rows, len(res.Files), float64(res.Bytes)/(1<<20), res.Location, res.Elapsed.Round(1e7))
	return nil
}
