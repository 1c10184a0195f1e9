package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// NewCmdOperator is `slipway operator` and its verbs.
func NewCmdOperator(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "operator",
		Aliases: []string{"operators"},
		Short:   "Register operators (Helm charts) and read their versions",
		GroupID: groupManager,
	}
	cmd.AddCommand(NewCmdOperatorAdd(f, nil), NewCmdOperatorList(f, nil), NewCmdOperatorGet(f, nil),
		NewCmdOperatorRefresh(f, nil), NewCmdOperatorRemove(f, nil))
	return cmd
}

// OperatorAddOptions are slipway operator add's.
type OperatorAddOptions struct {
	f       *Factory
	Request api.OperatorRequest
	// ValuesFile is --default-values (YAML or JSON).
	ValuesFile string
	// PasswordStdin, TokenStdin read the chart source's secret from standard input.
	PasswordStdin, TokenStdin bool
	Username                  string
}

// NewCmdOperatorAdd is `slipway operator add NAME --namespace NS --repository URL --chart CHART`.
func NewCmdOperatorAdd(f *Factory, runF func(context.Context, *OperatorAddOptions) error) *cobra.Command {
	opts := &OperatorAddOptions{f: f}
	cmd := &cobra.Command{
		Use:   "add NAME --namespace NS --repository URL --chart CHART",
		Short: "Register an operator: its chart's versions are discovered with their CRDs",
		Long: `Register an operator by its Helm chart, in a chart repository (https://) or an OCI registry
(oci://). The manager reads every version of the chart (narrowed by --versions, a semver
constraint) and stores the CRDs each ships. A private source takes --username with
--password-stdin, or --token-stdin (the secret is read from standard input, never from a flag).`,
		Example: `  slipway operator add cert-manager --namespace cert-manager \
      --repository https://charts.jetstack.io --chart cert-manager --versions ">=1.14"

  slipway operator add widget --namespace widget-system --repository oci://registry.example.com/charts \
      --chart widget --username ci --password-stdin < password.txt`,
		Args: cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Request.Name = args[0]
			if err := opts.prepare(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return operatorAddRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	r := &opts.Request
	fl.StringVar(&r.Namespace, "namespace", "", "the namespace the operator is installed into on every cluster")
	fl.StringVar(&r.Chart.Repository, "repository", "", "the chart repository (https://…) or OCI registry path (oci://…)")
	fl.StringVar(&r.Chart.Name, "chart", "", "the chart's name in the repository")
	fl.StringVar(&r.Versions, "versions", "", "only versions matching this semver constraint (\">=1.2, <2\")")
	fl.StringVar(&opts.ValuesFile, "default-values", "", "a YAML or JSON file of Helm values merged under every deployment's values")
	fl.StringVar(&opts.Username, "username", "", "the chart source's user name")
	fl.BoolVar(&opts.PasswordStdin, "password-stdin", false, "read the chart source's password from standard input")
	fl.BoolVar(&opts.TokenStdin, "token-stdin", false, "read the chart source's token from standard input")
	for _, name := range []string{"namespace", "repository", "chart"} {
		_ = cmd.MarkFlagRequired(name)
	}
	cmd.MarkFlagsMutuallyExclusive("password-stdin", "token-stdin")
	return cmd
}

// prepare reads the files and standard input the flags name into the request.
func (opts *OperatorAddOptions) prepare() error {
	r := &opts.Request
	if opts.ValuesFile != "" {
		v, err := readValues(opts.f, opts.ValuesFile)
		if err != nil {
			return fmt.Errorf("--default-values: %w", err)
		}
		r.DefaultValues = v
	}
	if opts.PasswordStdin && opts.Username == "" {
		return flagErrorf("--password-stdin needs --username")
	}
	if !opts.PasswordStdin && !opts.TokenStdin {
		if opts.Username != "" {
			return flagErrorf("--username needs --password-stdin or --token-stdin")
		}
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(opts.f.IOStreams.In, 64<<10))
	if err != nil {
		return err
	}
	secret := strings.TrimRight(string(data), "\r\n")
	if secret == "" {
		return flagErrorf("standard input holds no password or token")
	}
	r.Chart.Credentials = &api.ChartCredentials{Username: opts.Username}
	if opts.PasswordStdin {
		r.Chart.Credentials.Password = secret
	} else {
		r.Chart.Credentials.Token = secret
	}
	return nil
}

// readValues reads a YAML or JSON file of Helm values ("-": standard input) as a JSON object.
func readValues(f *Factory, path string) (json.RawMessage, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(f.IOStreams.In, 4<<20))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not YAML or JSON: %w", path, err)
	}
	if s := strings.TrimSpace(string(j)); !strings.HasPrefix(s, "{") {
		return nil, fmt.Errorf("%s must hold a map of values, not %s", path, clipText(s, 40))
	}
	return j, nil
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func operatorAddRun(ctx context.Context, opts *OperatorAddOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	op, err := c.CreateOperator(ctx, opts.Request)
	if err != nil {
		return err
	}
	if f.OutputFormat() == output.FormatTable {
		fmt.Fprintf(f.IOStreams.ErrOut, "Registered operator %s with %d versions.\n", op.Name, len(op.Versions))
	}
	return printOperator(f, op)
}

// OperatorListOptions are slipway operator list's.
type OperatorListOptions struct {
	f         *Factory
	Namespace string
	List      ListFlags
}

// NewCmdOperatorList is `slipway operator list`.
func NewCmdOperatorList(f *Factory, runF func(context.Context, *OperatorListOptions) error) *cobra.Command {
	opts := &OperatorListOptions{f: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the operators with their chart and latest version",
		Example: "  slipway operator list\n  slipway operator list --namespace cert-manager -o yaml",
		Args:    cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.List.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return operatorListRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Namespace, "namespace", "", "only operators installed into this namespace")
	opts.List.add(cmd.Flags())
	return cmd
}

func operatorListRun(ctx context.Context, opts *OperatorListOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	items, cont, err := c.ListOperators(ctx, opts.Namespace, opts.List.page())
	if err != nil {
		return err
	}
	return printPage(f, items, cont, opts.List, func(p *output.Printer) error {
		t := p.Table("name", "namespace", "chart", "latest", "versions", "registered")
		for _, op := range items {
			latest := ""
			if len(op.Versions) > 0 {
				latest = op.Versions[0]
			}
			t.Row(op.Name, op.Namespace, op.Chart.Repository+" "+op.Chart.Name, latest, fmt.Sprint(len(op.Versions)), p.Time(op.CreatedAt))
		}
		return t.Render()
	})
}

// NewCmdOperatorGet is `slipway operator get NAME`.
func NewCmdOperatorGet(f *Factory, runF func(context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:               "get NAME",
		Short:             "Show an operator: its chart, versions, removed versions and last refresh",
		Example:           "  slipway operator get cert-manager\n  slipway operator get cert-manager -o json",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeOperators(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), args[0])
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			op, err := c.GetOperator(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printOperator(f, op)
		},
	}
}

func printOperator(f *Factory, op *api.Operator) error {
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), op, func(p *output.Printer) error {
		creds := ""
		if cr := op.Chart.Credentials; cr != nil && cr.Set {
			creds = "set"
			if cr.Username != "" {
				creds += " (user " + cr.Username + ")"
			}
		}
		var removed []string
		for _, rv := range op.RemovedVersions {
			removed = append(removed, rv.Version+" ("+rv.Reason+")")
		}
		refresh := ""
		if r := op.Refresh; r != nil {
			refresh = "checked " + p.Time(r.CheckedAt) + ", next " + p.Time(r.NextAt)
			if r.Error != "" {
				refresh += ", failing: " + r.Error
			}
		}
		return p.Detail([2]string{"Name", op.Name}, [2]string{"Namespace", op.Namespace},
			[2]string{"Repository", op.Chart.Repository}, [2]string{"Chart", op.Chart.Name}, [2]string{"Credentials", creds},
			[2]string{"Version filter", op.VersionFilter}, [2]string{"Versions", join(op.Versions)},
			[2]string{"Removed", join(removed)}, [2]string{"Refresh", refresh}, [2]string{"Registered", p.Time(op.CreatedAt)},
			[2]string{"Deleted", p.TimeP(op.DeletedAt)})
	})
}

// NewCmdOperatorRefresh is `slipway operator refresh NAME`.
func NewCmdOperatorRefresh(f *Factory, runF func(context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "refresh NAME",
		Short: "Re-read an operator's chart source now",
		Long: `Re-read the operator's chart source now: new versions are stored with their CRDs, versions
that are gone are marked removed.`,
		Example:           "  slipway operator refresh cert-manager",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeOperators(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), args[0])
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			res, err := c.RefreshOperator(cmd.Context(), args[0], nil)
			if err != nil {
				return err
			}
			return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), res, func(p *output.Printer) error {
				var failed []string
				for _, x := range res.Failed {
					failed = append(failed, x.Version+": "+x.Message)
				}
				unchanged := ""
				if res.NotModified {
					unchanged = "the chart source did not change"
				}
				return p.Detail([2]string{"Operator", res.Operator}, [2]string{"Unchanged", unchanged},
					[2]string{"Added", join(res.Added)}, [2]string{"Removed", join(res.Removed)},
					[2]string{"Restored", join(res.Restored)}, [2]string{"Changed", join(res.Changed)},
					[2]string{"Failed", strings.Join(failed, "; ")}, [2]string{"Versions", join(res.Versions)})
			})
		},
	}
}

// NewCmdOperatorRemove is `slipway operator remove NAME`.
func NewCmdOperatorRemove(f *Factory, runF func(context.Context, string) error) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm", "delete"},
		Short:   "Delete an operator (its releases stay installed, its history readable)",
		Long: `Delete an operator from the manager; refused while it has active deployments. Its releases stay
installed on the clusters; its deployments, audit records and CRD revisions stay readable. Asks
for confirmation on a terminal; elsewhere --yes is required.`,
		Example:           "  slipway operator remove widget --yes",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeOperators(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.confirm(yes, fmt.Sprintf("Delete operator %s?", args[0])); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), args[0])
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			if err := c.DeleteOperator(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "Deleted operator %s.\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}
