// Package cli is the `weed pushdown` command family: clients of the pushdown
// services (status now; plan, query, index and the demo loader as they land).
package cli

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/seaweedfs/seaweedfs/weed/command"
	flag "github.com/seaweedfs/seaweedfs/weed/util/fla9"
)

// subcommand is one `weed pushdown <name>`.
type subcommand struct {
	name  string
	short string
	usage string
	run   func(args []string) error
}

var subcommands = map[string]*subcommand{}

func register(s *subcommand) { subcommands[s.name] = s }

// Command is the `weed pushdown` command.
var Command = &command.Command{
	UsageLine: "pushdown <status|plan|query|index|demo|import> [flags]",
	Short:     "client of the Parquet pushdown services (status, plan, query, demo loader)",
	Long: `pushdown talks to the catalog pushdown service of a lakeweed cluster.

  weed pushdown status [-catalog host:port] [-json]
      whether the catalog serves, the volume pushdown endpoints it discovered,
      versions and cache figures.
  weed pushdown plan -table ns.table [-snapshot ID] [-where "<SQL predicate>"] [-select a,b] [-json]
      what a query must read: files, row groups, pages, byte ranges, pruning per tier.
  weed pushdown query -sql "SELECT … FROM ns.table [WHERE …] [LIMIT n]" [-format table|csv|json] [-explain] [-stats] [-no-pushdown]
      read a table through the plan: only planned byte ranges, through the S3 gateway.
  weed pushdown index create|list|drop -table ns.table [-column C -kind btree|bloom|page_index] [-wait] [-json]
      side indexes: record which the table wants (its lakeweed.indexes property) and build
      them beside the data; list files indexed of total, states and payload bytes.
  weed pushdown demo -table ns.name [-rows N] [-files F] [-indexed all|half|none] [-seed S] ...
      writes a generated Iceberg table through the REST catalog and S3 gateway.
  weed pushdown import -dir <table folder> -table ns.name [-strip-prefix P] [-metadata FILE] [-replace] [-dry-run]
      copies a local Iceberg table into the warehouse, rewriting its paths, and registers it.

Run "weed pushdown <subcommand> -h" for a subcommand's flags.
`,
}

func init() {
	Command.Run = runPushdown
	// Flags belong to the subcommands; stop parsing at the first argument.
	Command.Flag.Usage = func() { fmt.Fprint(os.Stderr, Command.Long) }
}

func runPushdown(cmd *command.Command, args []string) bool {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, Command.Long)
		return false
	}
	s, ok := subcommands[args[0]]
	if !ok {
		var names []string
		for n := range subcommands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "weed pushdown: unknown subcommand %q (have: %s)\n", args[0], strings.Join(names, ", "))
		os.Exit(2)
	}
	if err := s.run(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0) // -h: the usage is printed
		}
		fmt.Fprintf(os.Stderr, "weed pushdown %s: %s\n", s.name, explain(err))
		os.Exit(1)
	}
	return true
}

// newFlags returns a flag set for a subcommand whose -h prints its usage.
func newFlags(s *subcommand) *flag.FlagSet {
	fs := flag.NewFlagSet("weed pushdown "+s.name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: weed pushdown %s %s\n\n%s\n\nflags:\n", s.name, s.usage, s.short)
		fs.PrintDefaults()
	}
	return fs
}
