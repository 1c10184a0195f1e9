package cli

import (
	"context"
	"fmt"
	"slices"
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

// names lists completion candidates from the manager ("name" or "name\tdescription"; cheap
// lists only: one page).
type names func(context.Context, *client.Client) ([]string, error)

// fetch asks the manager for n's candidates; none when the manager cannot be reached.
func (f *Factory) fetch(n names) []string {
	c, err := f.Client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	out, err := n(ctx, c)
	if err != nil {
		return nil
	}
	return out
}

// completeFrom completes a command's first argument from n (nothing after it).
func (f *Factory) completeFrom(n names) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f.fetch(n), cobra.ShellCompDirectiveNoFileComp
	}
}

// flagFrom completes a flag's value from n, whatever arguments come before the flag.
func (f *Factory) flagFrom(n names) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return f.fetch(n), cobra.ShellCompDirectiveNoFileComp
	}
}

// listFlagFrom completes the item after the last comma of a comma-separated flag's value
// (--clusters dev-1,st<TAB>) from n.
func (f *Factory) listFlagFrom(n names) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return listItems(toComplete, f.fetch(n)), cobra.ShellCompDirectiveNoFileComp
	}
}

// listItems are the completions of the item after the last comma of toComplete: each candidate
// not already in the list, after the items given (the shell matches candidates against the
// whole word). After a comma they go without their descriptions: bash's completion script
// quotes a described candidate before matching it against the word typed, and quoting escapes
// the comma (dev-1\,staging-1 never matches dev-1,st); an undescribed one it matches unquoted.
func listItems(toComplete string, candidates []string) []string {
	i := strings.LastIndex(toComplete, ",")
	if i < 0 {
		return candidates
	}
	given := strings.Split(toComplete[:i], ",")
	var out []string
	for _, c := range candidates {
		name, _, _ := strings.Cut(c, "\t")
		if !slices.Contains(given, name) {
			out = append(out, toComplete[:i+1]+name)
		}
	}
	return out
}

func clusterNames(ctx context.Context, c *client.Client) ([]string, error) {
	items, _, err := c.ListClusters(ctx, client.ClusterFilter{}, client.Page{Limit: client.MaxPage})
	var out []string
	for _, it := range items {
		out = append(out, it.Name+"\t"+it.Environment)
	}
	return out, err
}

func operatorNames(ctx context.Context, c *client.Client) ([]string, error) {
	items, _, err := c.ListOperators(ctx, "", client.Page{Limit: client.MaxPage})
	var out []string
	for _, it := range items {
		out = append(out, it.Name+"\t"+it.Chart.Name)
	}
	return out, err
}

func crdNames(ctx context.Context, c *client.Client) ([]string, error) {
	items, _, err := c.ListCRDs(ctx, "", client.Page{Limit: client.MaxPage})
	var out []string
	for _, it := range items {
		out = append(out, it.Name)
	}
	return out, err
}

// deploymentNames are the ids of the newest deployments (the active ones when active), each
// described by operator, version and status.
func deploymentNames(active bool) names {
	return func(ctx context.Context, c *client.Client) ([]string, error) {
		items, _, err := c.ListDeployments(ctx, client.DeploymentFilter{Active: active}, client.Page{Limit: 50})
		var out []string
		for _, d := range items {
			out = append(out, fmt.Sprintf("%s\t%s %s %s", d.ID, d.Operator, d.Version, d.Status))
		}
		return out, err
	}
}

func approvalNames(ctx context.Context, c *client.Client) ([]string, error) {
	items, _, err := c.ListApprovals(ctx, client.ApprovalFilter{}, client.Page{Limit: 50})
	var out []string
	for _, a := range items {
		out = append(out, fmt.Sprintf("%s\t%s of %s", a.ID, a.Kind, a.DeploymentID))
	}
	return out, err
}

func (f *Factory) completeClusters() cobra.CompletionFunc  { return f.completeFrom(clusterNames) }
func (f *Factory) completeOperators() cobra.CompletionFunc { return f.completeFrom(operatorNames) }
func (f *Factory) completeCRDs() cobra.CompletionFunc      { return f.completeFrom(crdNames) }
func (f *Factory) completeApprovals() cobra.CompletionFunc { return f.completeFrom(approvalNames) }

// completeDeployments completes the first argument with deploymentNames(active).
func (f *Factory) completeDeployments(active bool) cobra.CompletionFunc {
	return f.completeFrom(deploymentNames(active))
}

// enumCompletion completes a flag from fixed values.
func enumCompletion(vals ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
}

// enumListCompletion completes the item after the last comma of a comma-separated flag's value
// from fixed values.
func enumListCompletion(vals ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return listItems(toComplete, vals), cobra.ShellCompDirectiveNoFileComp
	}
}
