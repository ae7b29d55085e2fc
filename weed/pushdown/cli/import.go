package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/lakeweed/seaweedfs/weed/pushdown/tableimport"
)

func init() {
	register(&subcommand{
		name: "import",
		short: `Import an existing Iceberg table from a local folder (written by Spark, PyIceberg, DuckDB...):
copy its metadata, manifest lists, manifests, data, delete and Puffin files into the warehouse bucket
through the S3 gateway, rewriting every path onto the table's new location (as Iceberg's
rewrite-table-path does), and register it with the Iceberg REST catalog. The source folder is only read.
Everything is checked before anything is uploaded: a path outside -strip-prefix or a missing file
refuses the import.`,
		usage: "-dir <table folder> -table ns.name [-strip-prefix P] [-metadata FILE] [-replace] [-dry-run] [-allow-size-mismatch] [-skip-unreadable-snapshots] [-catalog host:port] [-iceberg URL] [-s3 URL] [-warehouse B]",
		run:   runImport,
	})
}

func runImport(args []string) error {
	fs := newFlags(subcommands["import"])
	dir := fs.String("dir", "", "local table folder (holds metadata/ and the data)")
	tableName := fs.String("table", "", "table to register, namespace.name")
	strip := fs.String("strip-prefix", "", "prefix of the paths written in the metadata that corresponds to -dir (default: the metadata's location)")
	metadata := fs.String("metadata", "", "metadata file to import as current (default: version-hint.text, else the newest)")
	replace := fs.Bool("replace", false, "drop an existing table of that name (after the upload succeeded)")
	dryRun := fs.Bool("dry-run", false, "check and rewrite locally; upload and register nothing")
	allowSize := fs.Bool("allow-size-mismatch", false, "import files whose size differs from their manifest entry (noted) instead of refusing the table")
	skipUnreadable := fs.Bool(tableimport.SkipUnreadableFlag[1:], false, "import a table whose older snapshots name a missing or unreadable manifest list: leave those snapshots out (noted) instead of refusing; the current snapshot must be readable")
	concurrency := fs.Int("concurrency", 8, "parallel uploads")
	endpoints := endpointFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *tableName == "" {
		fs.Usage()
		return fmt.Errorf("-dir and -table are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	e, err := endpoints(ctx)
	if err != nil {
		return err
	}
	bar := newUploadProgress(os.Stderr)
	res, err := tableimport.Import(ctx, tableimport.Options{
		Dir: *dir, Table: *tableName, StripPrefix: *strip, MetadataFile: *metadata,
		Endpoints: e, Replace: *replace, DryRun: *dryRun, Concurrency: *concurrency, AllowSizeMismatch: *allowSize,
		SkipUnreadableSnapshots: *skipUnreadable,
		Progress:                bar.update, Log: os.Stderr,
	})
	bar.finish()
	if err != nil {
		return err
	}
	fmt.Print(res.Summary())
	return nil
}

// uploadProgress shows upload progress on stderr: the query command's
// progress bar (given a byte bar) when stderr is a terminal, else one plain
// line per 10%.
type uploadProgress struct {
	mu       sync.Mutex
	out      io.Writer
	terminal *progress
	lastTen  int64
}

func newUploadProgress(out *os.File) *uploadProgress {
	u := &uploadProgress{out: out, lastTen: -1}
	if term.IsTerminal(int(out.Fd())) {
		u.terminal = &progress{start: time.Now(), enabled: true}
	}
	return u
}

func (u *uploadProgress) update(done, total int64) {
	if u.terminal != nil {
		u.terminal.mu.Lock()
		if u.terminal.bar == nil {
			u.terminal.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription("uploading"), progressbar.OptionShowBytes(true), progressbar.OptionClearOnFinish())
		}
		u.terminal.mu.Unlock()
		u.terminal.update(int(done), int(total))
		return
	}
	if total <= 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	ten := done * 10 / total
	if ten > u.lastTen {
		u.lastTen = ten
		fmt.Fprintf(u.out, "uploaded %3d%%  %d of %d bytes\n", ten*10, done, total)
	}
}

func (u *uploadProgress) finish() {
	if u.terminal != nil {
		u.terminal.finish()
	}
}
