package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/output"
)

// join is a list for a table cell or detail line.
func join(s []string) string { return strings.Join(s, ", ") }

// orDash is s, or "-" when empty (a table cell that must not look missing).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ListFlags are a list command's paging: --limit items at most, fetched page by page.
type ListFlags struct{ Limit int }

// DefaultLimit is --limit's default.
const DefaultLimit = 100

func (l *ListFlags) add(fs *pflag.FlagSet) {
	fs.IntVar(&l.Limit, "limit", DefaultLimit, "list at most this many items, following the API's pages (0: all)")
}

func (l *ListFlags) check() error {
	if l.Limit < 0 {
		return flagErrorf("--limit must be 0 (all) or more, not %d", l.Limit)
	}
	return nil
}

func (l *ListFlags) page() client.Page { return client.Page{Limit: l.Limit} }

// printPage prints a page of a list (an empty one as [] in json and yaml, not null) with the
// table table draws, and says on stderr when the manager has more than --limit.
func printPage[T any](f *Factory, items []T, cont string, l ListFlags, table func(*output.Printer) error) error {
	if items == nil {
		items = []T{}
	}
	err := output.Print(f.IOStreams, f.OutputFormat(), f.Now(), items, table)
	if cont != "" {
		fmt.Fprintf(f.IOStreams.ErrOut, "Showing the first %d; there are more (--limit 0 lists all).\n", l.Limit)
	}
	return err
}

// confirm asks before a destructive action: yes when --yes was given; on a terminal the
// question; otherwise a usage error (nothing is sent). "no" is ErrCancelled.
func (f *Factory) confirm(yes bool, question string) error {
	if yes {
		return nil
	}
	ios := f.IOStreams
	if !ios.CanPrompt() {
		return flagErrorf("%s: refusing without --yes when not on a terminal", strings.TrimSuffix(question, "?"))
	}
	ok, err := ios.Confirm(question)
	if err != nil {
		return err
	}
	if !ok {
		return ErrCancelled
	}
	return nil
}

// splitList reads a comma-separated flag value (repeated flags add up), dropping empty items.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// completionTimeout bounds the API calls of shell completion.
const completionTimeout = 5 * time.Second

// completeFrom completes the first argument from names the API lists (cheap lists only: one
// page); it completes nothing when the API cannot be reached.
func (f *Factory) completeFrom(names func(context.Context, *client.Client) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := f.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		out, err := names(ctx, c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func (f *Factory) completeClusters() cobra.CompletionFunc {
	return f.completeFrom(func(ctx context.Context, c *client.Client) ([]string, error) {
		items, _, err := c.ListClusters(ctx, client.ClusterFilter{}, client.Page{Limit: client.MaxPage})
		var out []string
		for _, it := range items {
			out = append(out, it.Name+"\t"+it.Environment)
		}
		return out, err
	})
}

func (f *Factory) completeOperators() cobra.CompletionFunc {
	return f.completeFrom(func(ctx context.Context, c *client.Client) ([]string, error) {
		items, _, err := c.ListOperators(ctx, "", client.Page{Limit: client.MaxPage})
		var out []string
		for _, it := range items {
			out = append(out, it.Name+"\t"+it.Chart.Name)
		}
		return out, err
	})
}

func (f *Factory) completeCRDs() cobra.CompletionFunc {
	return f.completeFrom(func(ctx context.Context, c *client.Client) ([]string, error) {
		items, _, err := c.ListCRDs(ctx, "", client.Page{Limit: client.MaxPage})
		var out []string
		for _, it := range items {
			out = append(out, it.Name)
		}
		return out, err
	})
}

// completeDeployments completes the ids of the newest deployments (the active ones when
// active), each described by operator, version and status.
func (f *Factory) completeDeployments(active bool) cobra.CompletionFunc {
	return f.completeFrom(func(ctx context.Context, c *client.Client) ([]string, error) {
		items, _, err := c.ListDeployments(ctx, client.DeploymentFilter{Active: active}, client.Page{Limit: 50})
		var out []string
		for _, d := range items {
			out = append(out, fmt.Sprintf("%s\t%s %s %s", d.ID, d.Operator, d.Version, d.Status))
		}
		return out, err
	})
}

func (f *Factory) completeApprovals() cobra.CompletionFunc {
	return f.completeFrom(func(ctx context.Context, c *client.Client) ([]string, error) {
		items, _, err := c.ListApprovals(ctx, client.ApprovalFilter{}, client.Page{Limit: 50})
		var out []string
		for _, a := range items {
			out = append(out, fmt.Sprintf("%s\t%s of %s", a.ID, a.Kind, a.DeploymentID))
		}
		return out, err
	})
}

// enumCompletion completes a flag from fixed values.
func enumCompletion(vals ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
}
