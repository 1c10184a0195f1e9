// Package app is the manager's command line: the subcommands of cmd/manager, their flags, and the
// wiring of store, services and server. cmd/manager only calls Main.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"serve":      {"serve the API (migrating the database first unless --migrate=false)", runServe},
	"migrate":    {"apply the database migrations and exit", runMigrate},
	"token":      {"mint an HS256 token for a subject and roles", runToken},
	"rotate-key": {"re-seal every stored secret (clusters' credentials, notification channels', chart sources', Prometheus') under the primary encryption key", runRotateKey},
	"gen-key":    {"print a new encryption key line (id:base64) for the key file", runGenKey},
	"openapi":    {"print the API's OpenAPI 3 document (what /api/v1/openapi.json serves)", runOpenAPI},
	"login-link": {"print a one-time sign-in link for the web UI (BASE/login#ticket=…)", runLoginLink},
}

// Main runs the subcommand args[0] and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "manager: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "manager %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("Usage: manager <command> [flags]   (manager <command> -h lists its flags)\n\nCommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-11s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, b.String())
}

// newFlagSet returns a flag set that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("manager "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
