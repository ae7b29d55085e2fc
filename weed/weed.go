// Command weed is SeaweedFS with storage-side Parquet pushdown: every upstream
// command, unchanged, plus -pushdown flags on the commands that run a volume
// server or the Iceberg REST catalog, and the `weed pushdown` client family.
package main

import (
	"embed"
	"fmt"
	"io"
	"os"
	"strings"
	"text/template"

	"github.com/lakeweed/seaweedfs/weed/pushdown/cli"
	"github.com/lakeweed/seaweedfs/weed/pushdown/launch"
	"github.com/seaweedfs/seaweedfs/weed/command"
	"github.com/seaweedfs/seaweedfs/weed/glog"
	weed_server "github.com/seaweedfs/seaweedfs/weed/server"
	"github.com/seaweedfs/seaweedfs/weed/util"
	flag "github.com/seaweedfs/seaweedfs/weed/util/fla9"
	util_http "github.com/seaweedfs/seaweedfs/weed/util/http"
)

// noStatic is empty: upstream embeds its UI assets in its own main package,
// which cannot be imported, so requests for them answer 404.
var noStatic embed.FS

var commands = append(append([]*command.Command{}, command.Commands...), cli.Command)

func init() {
	weed_server.StaticFS = noStatic
	flag.Var(&util.ConfigurationFileDirectory, "config_dir", "directory with toml configuration files")
	launch.Install(commands)
}

func main() {
	glog.MaxSize = 10 << 20
	glog.MaxFileCount = 5
	flag.Usage = func() { usage(os.Stderr); os.Exit(2) }
	if command.AutocompleteMain(commands) {
		return
	}
	flag.Parse()
	args := flag.Args()
	if len(args) < 1 {
		flag.Usage()
	}
	if args[0] == "help" {
		os.Exit(help(args[1:]))
	}
	cmd := find(args[0])
	if cmd == nil {
		fmt.Fprintf(os.Stderr, "weed: unknown subcommand %q\nRun 'weed help' for usage.\n", args[0])
		os.Exit(2)
	}
	if cmd.Name() != command.GetFuseCommandName() {
		util_http.InitGlobalHttpClient()
	}
	cmd.Flag.Usage = func() { cmd.Usage() }
	cmd.Flag.Parse(args[1:])
	status := 0
	if !cmd.Run(cmd, cmd.Flag.Args()) {
		fmt.Fprintln(os.Stderr)
		cmd.Flag.Usage()
		fmt.Fprintf(os.Stderr, "Default Parameters:\n")
		cmd.Flag.PrintDefaults()
		status = 1
	}
	if s := command.CommandExitStatus(); s > status {
		status = s
	}
	glog.Flush()
	os.Exit(status)
}

func find(name string) *command.Command {
	for _, c := range commands {
		if c.Name() == name && c.Run != nil {
			return c
		}
	}
	return nil
}

const usageText = `
lakeweed: SeaweedFS with storage-side Parquet pushdown for Iceberg tables.

Usage:

	weed command [arguments]

The commands are:
{{range .}}{{if .Runnable}}
    {{.Name | printf "%-11s"}} {{.Short}}{{end}}{{end}}

Use "weed help [command]" for more information about a command.
Commands that run a volume server or the Iceberg REST catalog (server, mini,
volume, s3, filer) take -pushdown to start the pushdown services.

`

func usage(w io.Writer) {
	t := template.Must(template.New("usage").Parse(usageText))
	_ = t.Execute(w, commands)
	fmt.Fprintf(w, "For logging, use \"weed [logging_options] [command]\". The logging options are:\n")
	flag.CommandLine.SetOutput(w)
	flag.PrintDefaults()
}

func help(args []string) int {
	switch len(args) {
	case 0:
		usage(os.Stdout)
		return 0
	case 1:
	default:
		fmt.Fprintf(os.Stderr, "usage: weed help command\n\nToo many arguments given.\n")
		return 2
	}
	cmd := find(args[0])
	if cmd == nil {
		fmt.Fprintf(os.Stderr, "Unknown help topic %q. Run 'weed help'.\n", args[0])
		return 2
	}
	fmt.Printf("Usage: weed %s\n\n  %s\n", cmd.UsageLine, strings.TrimSpace(cmd.Long))
	fmt.Fprintf(os.Stderr, "Default Parameters:\n")
	cmd.Flag.PrintDefaults()
	return 0
}
