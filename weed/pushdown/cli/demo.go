package cli

import (
	"context"
	"fmt"
	flag "github.com/seaweedfs/seaweedfs/weed/util/fla9"
	"os"
	"os/signal"

	"github.com/lakeweed/seaweedfs/weed/pushdown/connector"
	"github.com/lakeweed/seaweedfs/weed/pushdown/demo"
	"github.com/lakeweed/seaweedfs/weed/pushdown/lakeclient"
)

func init() {
	register(&subcommand{
		name: "demo",
		short: `Generate the demo Iceberg table and load it into a cluster: Parquet files written with arrow-go
(id unclustered, ts sorted, tenant_id confined to few files, status uniform, message, tags, embedding),
uploaded through the S3 gateway and committed with iceberg-go through the Iceberg REST catalog.`,
		usage: "[-table demo.events] [-rows N] [-files F] [-indexed all|half|none] [-partition tenant] [-seed S] [-replace | -append] [-catalog host:port] [-iceberg URL] [-s3 URL] [-warehouse B]\n       weed pushdown demo -print-vector [-table demo.events] [-id N]   (prints a vector query to copy: the rows nearest row N's embedding)",
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
	burstWindow := fs.Int64("burstWindow", 0, "rows per window holding one timeout and one gpu burst (0: 8192); larger: rarer, longer bursts at the same share of rows")
	plainTS := fs.Bool("plainTimestamps", false, "write ts without a dictionary (as parquet-mr and writers with large row groups do)")
	replace := fs.Bool("replace", false, "drop the table first if it exists")
	partition := fs.String("partition", "", `"tenant": one tenant per file, tenant_id an identity partition (filtered vector search touches only that tenant's files); default: unpartitioned`)
	appendTo := fs.Bool("append", false, "add -rows rows in new files to the existing demo table, in a new snapshot (ids and timestamps continue; -files defaults to one file per 125,000 rows; -indexed to the table's)")
	printVector := fs.Bool("print-vector", false, "load nothing: print a vector query to copy and run, ordering the table's rows by their distance to row -id's embedding")
	rowID := fs.Int64("id", 42, "-print-vector: the id of the row whose embedding the query uses")
	endpoints := endpointFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *printVector {
		return printVectorQuery(endpoints, *tableName, *rowID, fs.Lookup("catalog").Value.String())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *appendTo && *replace {
		return fmt.Errorf("-append and -replace exclude each other")
	}
	idx, err := demo.ParseIndexed(*indexed)
	if err != nil {
		return err
	}
	spec := def
	spec.Rows, spec.Files, spec.RowGroupRows, spec.PageBytes, spec.Indexed, spec.Seed = *rows, *files, *rowGroup, *page, idx, *seed
	switch *partition {
	case "":
	case "tenant":
		if *appendTo {
			return fmt.Errorf("-partition is the table's (set when it is created); -append keeps it")
		}
		spec.PartitionTenant = true
	default:
		return fmt.Errorf("-partition %.40q: want tenant (or nothing)", *partition)
	}
	spec.BurstWindow, spec.PlainTimestamps = *burstWindow, *plainTS
	if *appendTo {
		if !set["files"] {
			spec.Files = int(max(1, min(spec.Rows, (spec.Rows+124_999)/125_000)))
		}
		if !set["indexed"] {
			spec.Indexed = ""
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e, err := endpoints(ctx)
	if err != nil {
		return err
	}
	verb := "loading"
	if *appendTo {
		verb = "appending to"
	}
	fmt.Printf("%s %s: %d rows in %d files (indexed: %s, seed %d) into %s through %s\n",
		verb, *tableName, spec.Rows, spec.Files, orTable(spec.Indexed), spec.Seed, e.Iceberg, e.S3)
	res, err := demo.Load(ctx, demo.LoadOptions{Endpoints: e, Table: *tableName, Spec: spec, Replace: *replace, Append: *appendTo, Progress: os.Stdout})
	if err != nil {
		return err
	}
	fmt.Printf("loaded %s: snapshot %d, %d rows, %d files, %.1f MiB at %s in %s\n",
		res.Table, res.SnapshotID, res.Rows, len(res.Files), float64(res.Bytes)/(1<<20), res.Location, res.Elapsed.Round(1e7))
	return nil
}

func orTable(i demo.Indexed) string {
	if i == "" {
		return "as the table"
	}
	return string(i)
}

// printVectorQuery prints a `weed pushdown query` command ordering table's
// rows by their L2 distance to the embedding of the row whose id is id,
// ready to copy (the vector written out: no subquery needed).
func printVectorQuery(endpoints func(context.Context) (lakeclient.Endpoints, error), tableName string, id int64, catalog string) error {
	ctx := context.Background()
	e, err := endpoints(ctx)
	if err != nil {
		return err
	}
	conn, err := connector.New(ctx, connector.Options{Endpoints: e})
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := conn.Query(ctx, connector.Query{Table: tableName, Where: fmt.Sprintf("id = %d", id), Select: []string{"embedding"}, Limit: 1})
	if err != nil {
		return err
	}
	defer res.Release()
	if res.NumRows() == 0 {
		return fmt.Errorf("%s has no row with id = %d (choose another with -id)", tableName, id)
	}
	b, ok := appendNumberList(nil, res.Records[0].Column(0), 0)
	if !ok {
		return fmt.Errorf("%s: the embedding of row id = %d is not a list of numbers (%s)", tableName, id, res.Records[0].Column(0).DataType())
	}
	sql := fmt.Sprintf("SELECT id, tenant_id, _distance FROM %s ORDER BY embedding <-> '%s' LIMIT 10", tableName, b)
	cmd := os.Args[0] + " pushdown query -sql \"" + sql + "\""
	if catalog != DefaultCatalog {
		cmd += " -catalog " + catalog
	}
	fmt.Fprintf(os.Stderr, "# the 10 rows of %s nearest the embedding of row id = %d (itself first, at distance 0):\n", tableName, id)
	fmt.Println(cmd)
	return nil
}
