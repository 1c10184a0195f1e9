package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// NewCmdAnalysisTemplate is `slipway analysis-template` and its verbs.
func NewCmdAnalysisTemplate(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "analysis-template",
		Aliases: []string{"analysis-templates"},
		Short:   "Store, list and remove the manager's analysis templates (PromQL checks of a deployment)",
		GroupID: groupManager,
	}
	cmd.AddCommand(newCmdTemplatePut(f, true), newCmdTemplatePut(f, false), newCmdTemplateList(f), newCmdTemplateGet(f), newCmdTemplateDelete(f))
	return cmd
}

// newCmdTemplatePut is `create -f FILE` (create) or `replace NAME -f FILE`.
func newCmdTemplatePut(f *Factory, create bool) *cobra.Command {
	var file string
	use, short, example, args := "create -f FILE", "Store an analysis template from a YAML or JSON file",
		"  slipway analysis-template create -f error-rate.yaml", cobra.NoArgs
	if !create {
		use, short, example, args = "replace NAME -f FILE", "Replace an analysis template (deployments keep the copy they were created with)",
			"  slipway analysis-template replace error-rate -f error-rate.yaml", cobra.ExactArgs(1)
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Example: example, Args: cobraArgs(args),
		RunE: func(cmd *cobra.Command, a []string) error {
			spec, err := readValues(f, file)
			if err != nil {
				return err
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			name := ""
			if !create {
				name = a[0]
			}
			t, err := c.PutAnalysisTemplate(cmd.Context(), spec, name, create)
			if err != nil {
				return err
			}
			if f.OutputFormat() == output.FormatTable {
				fmt.Fprintf(f.IOStreams.ErrOut, "Stored analysis template %s.\n", t.Name)
			}
			return printTemplate(f, t)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the template, YAML or JSON (- reads standard input)")
	_ = cmd.MarkFlagRequired("file")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return cmd
}

func newCmdTemplateList(f *Factory) *cobra.Command {
	var l ListFlags
	cmd := &cobra.Command{
		Use: "list", Aliases: []string{"ls"}, Short: "List the analysis templates", Args: cobraArgs(cobra.NoArgs),
		Example: "  slipway analysis-template list\n  slipway analysis-template list -o json",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := l.check(); err != nil {
				return err
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			items, cont, err := c.ListAnalysisTemplates(cmd.Context(), l.page())
			if err != nil {
				return err
			}
			return printPage(f, items, cont, l, func(p *output.Printer) error {
				t := p.Table("name", "condition", "interval", "count", "query")
				for _, it := range items {
					t.Row(it.Name, conditionText(it), it.Interval, strconv.Itoa(it.Count), clipText(it.Query, 60))
				}
				return t.Render()
			})
		},
	}
	l.add(cmd.Flags())
	return cmd
}

func newCmdTemplateGet(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use: "get NAME", Short: "Show an analysis template", Args: cobraArgs(cobra.ExactArgs(1)),
		Example: "  slipway analysis-template get error-rate -o yaml",
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := f.Client()
			if err != nil {
				return err
			}
			t, err := c.GetAnalysisTemplate(cmd.Context(), a[0])
			if err != nil {
				return err
			}
			return printTemplate(f, t)
		},
	}
}

func newCmdTemplateDelete(f *Factory) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use: "delete NAME", Aliases: []string{"rm", "remove"}, Short: "Delete an analysis template (deployments keep their copy)",
		Args: cobraArgs(cobra.ExactArgs(1)), Example: "  slipway analysis-template delete error-rate --yes",
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := f.confirm(yes, fmt.Sprintf("Delete analysis template %s?", a[0])); err != nil {
				return err
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			if err := c.DeleteAnalysisTemplate(cmd.Context(), a[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "Deleted analysis template %s.\n", a[0])
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

// conditionText is a template's success condition in one line: "≤ 0.01, ≤ 1.2 × baseline".
func conditionText(t api.AnalysisTemplate) string {
	c := t.SuccessCondition
	var parts []string
	for _, b := range []struct {
		v    *float64
		text string
	}{{c.Max, "≤ %g"}, {c.Min, "≥ %g"}, {c.MaxBaselineRatio, "≤ %g × baseline"}, {c.MinBaselineRatio, "≥ %g × baseline"}} {
		if b.v != nil {
			parts = append(parts, fmt.Sprintf(b.text, *b.v))
		}
	}
	return strings.Join(parts, ", ")
}

func printTemplate(f *Factory, t *api.AnalysisTemplate) error {
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), t, func(p *output.Printer) error {
		var args []string
		for _, a := range t.Args {
			if a.Value != nil {
				args = append(args, a.Name+"="+*a.Value)
			} else {
				args = append(args, a.Name+" (required)")
			}
		}
		return p.Detail([2]string{"Name", t.Name}, [2]string{"Query", t.Query}, [2]string{"Condition", conditionText(*t)},
			[2]string{"Interval", t.Interval}, [2]string{"Count", strconv.Itoa(t.Count)},
			[2]string{"Limits", fmt.Sprintf("%d failed, %d inconclusive, %d errors in a row", t.FailureLimit, t.InconclusiveLimit, t.ConsecutiveErrorLimit)},
			[2]string{"Args", strings.Join(args, ", ")}, [2]string{"Created", p.Time(t.CreatedAt)}, [2]string{"Updated", p.Time(t.UpdatedAt)})
	})
}

// newCmdClusterPrometheus is `slipway cluster prometheus set|get|delete`.
func newCmdClusterPrometheus(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prometheus",
		Short: "Set, show or remove the Prometheus a cluster's analyses ask",
	}
	cmd.AddCommand(newCmdPrometheusSet(f), newCmdPrometheusGet(f), newCmdPrometheusDelete(f))
	return cmd
}

func newCmdPrometheusSet(f *Factory) *cobra.Command {
	var req api.PrometheusRequest
	var tokenFile, passwordFile, caFile string
	cmd := &cobra.Command{
		Use:   "set CLUSTER --url URL [--bearer-token-file F | --username U --password-file F] [--ca-file F]",
		Short: "Set the cluster's Prometheus; the manager checks it with a query and seals the secret",
		Long: `Set the Prometheus the cluster's analyses ask. The manager asks it a query with these
settings before storing them (a wrong URL, credential or CA is refused, saying why), seals the
token or password with the keyring of the cluster credentials and never shows it again. Secrets
are read from files ("-": standard input), never from the command line.`,
		Example: `  slipway cluster prometheus set prod-eu --url https://prometheus.monitoring:9090 --bearer-token-file token --ca-file ca.pem
  slipway cluster prometheus set dev-1 --url http://prometheus.dev:9090`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeClusters(),
		RunE: func(cmd *cobra.Command, a []string) error {
			var err error
			if req.Token, err = readSecret(f, tokenFile); err != nil {
				return err
			}
			if req.Password, err = readSecret(f, passwordFile); err != nil {
				return err
			}
			if req.CA, err = readSecret(f, caFile); err != nil {
				return err
			}
			switch {
			case req.Token != "" && (req.Username != "" || req.Password != ""):
				return flagErrorf("--bearer-token-file does not go with --username and --password-file")
			case req.Token != "":
				req.Auth = "bearer"
			case req.Username != "" || req.Password != "":
				req.Auth = "basic"
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			p, err := c.SetClusterPrometheus(cmd.Context(), a[0], req)
			if err != nil {
				return err
			}
			if f.OutputFormat() == output.FormatTable {
				fmt.Fprintf(f.IOStreams.ErrOut, "Set the Prometheus of cluster %s.\n", p.Cluster)
			}
			return printPrometheus(f, p)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.URL, "url", "", "Prometheus's base URL, as the manager reaches it")
	fl.StringVar(&tokenFile, "bearer-token-file", "", "a file holding the bearer token")
	fl.StringVar(&req.Username, "username", "", "the basic-auth username")
	fl.StringVar(&passwordFile, "password-file", "", "a file holding the basic-auth password")
	fl.StringVar(&caFile, "ca-file", "", "a PEM file of the CA to trust for an https URL (default: the system's)")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

// readSecret reads a file ("-": standard input; "": nothing), without its trailing newline.
func readSecret(f *Factory, path string) (string, error) {
	if path == "" {
		return "", nil
	}
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(f.IOStreams.In, 1<<20))
	} else {
		b, err = os.ReadFile(path)
	}
	return strings.TrimRight(string(b), "\r\n"), err
}

func newCmdPrometheusGet(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use: "get CLUSTER", Short: "Show the cluster's Prometheus: URL, auth kind, whether a CA is set (never a secret)",
		Args: cobraArgs(cobra.ExactArgs(1)), ValidArgsFunction: f.completeClusters(),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := f.Client()
			if err != nil {
				return err
			}
			p, err := c.GetClusterPrometheus(cmd.Context(), a[0])
			if err != nil {
				return err
			}
			return printPrometheus(f, p)
		},
	}
}

func newCmdPrometheusDelete(f *Factory) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use: "delete CLUSTER", Aliases: []string{"rm", "remove"}, Short: "Remove the cluster's Prometheus",
		Args: cobraArgs(cobra.ExactArgs(1)), ValidArgsFunction: f.completeClusters(),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := f.confirm(yes, fmt.Sprintf("Remove the Prometheus of cluster %s?", a[0])); err != nil {
				return err
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			if err := c.DeleteClusterPrometheus(cmd.Context(), a[0]); err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "Removed the Prometheus of cluster %s.\n", a[0])
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func printPrometheus(f *Factory, p *api.Prometheus) error {
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), p, func(pr *output.Printer) error {
		return pr.Detail([2]string{"Cluster", p.Cluster}, [2]string{"URL", p.URL}, [2]string{"Auth", p.Auth},
			[2]string{"CA", map[bool]string{true: "set", false: "system roots"}[p.CASet]},
			[2]string{"Created", pr.Time(p.CreatedAt)}, [2]string{"Updated", pr.Time(p.UpdatedAt)})
	})
}

// printAnalysisRuns prints a deployment's analysis runs, one row each, after its clusters.
func printAnalysisRuns(p *output.Printer, runs []api.AnalysisRun) error {
	if len(runs) == 0 {
		return nil
	}
	fmt.Fprintln(p.Out())
	t := p.Table("analysis", "cluster", "stage", "phase", "measured", "last value", "last", "message")
	for _, r := range runs {
		value, last := "", ""
		if n := len(r.Measurements); n > 0 {
			m := r.Measurements[n-1]
			last = m.Verdict
			if m.Value != nil {
				value = strconv.FormatFloat(*m.Value, 'g', 6, 64)
			}
		}
		t.Row(r.Name, r.Cluster, strconv.Itoa(r.Stage), r.Phase, fmt.Sprintf("%d/%d", len(r.Measurements), r.Count), value, last, r.Message)
	}
	return t.Render()
}
