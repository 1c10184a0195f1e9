package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// environments are the manager's environments, for flags and completion.
func environments() []string { return slices.Clone(api.Environments) }

// NewCmdCluster is `slipway cluster` and its verbs.
func NewCmdCluster(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cluster",
		Aliases: []string{"clusters"},
		Short:   "Register, list and remove the manager's clusters",
		GroupID: groupManager,
	}
	cmd.AddCommand(NewCmdClusterAdd(f, nil), NewCmdClusterList(f, nil), NewCmdClusterGet(f, nil), NewCmdClusterRemove(f, nil),
		newCmdClusterPrometheus(f))
	return cmd
}

// ClusterAddOptions are slipway cluster add's.
type ClusterAddOptions struct {
	f           *Factory
	Name        string
	Kubeconfig  string
	KubeContext string
	Environment string
}

// NewCmdClusterAdd is `slipway cluster add NAME --kubeconfig F --context C --environment E`.
func NewCmdClusterAdd(f *Factory, runF func(context.Context, *ClusterAddOptions) error) *cobra.Command {
	opts := &ClusterAddOptions{f: f}
	cmd := &cobra.Command{
		Use:   "add NAME --kubeconfig FILE [--context CONTEXT] --environment ENV",
		Short: "Register a cluster from a kubeconfig context",
		Long: `Register a cluster with the manager. The kubeconfig's context (its current one unless
--context names another) is cut down to that context alone, with every file it refers to
(certificates, keys, a token file) inlined, and sent to the manager, which checks that it can
reach the cluster and stores it sealed. Credentials from exec plugins or auth providers cannot
be sent: make a kubeconfig with a token or client certificate for the manager.

Here --context is the kubeconfig's context (--kube-context says the same); to register through
another slipway context than the current one, set $SLIPWAY_CONTEXT.`,
		Example: `  slipway cluster add prod-eu --kubeconfig ~/.kube/prod.yaml --context prod-eu --environment Production
  slipway cluster add dev-1 --kubeconfig dev.yaml --environment Dev`,
		Args: cobraArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return clusterAddRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Kubeconfig, "kubeconfig", "", "the kubeconfig file holding the cluster's context")
	fl.StringVar(&opts.KubeContext, "context", "", "the kubeconfig's context to register (default: its current context)")
	fl.StringVar(&opts.KubeContext, "kube-context", "", "the same as --context")
	fl.StringVar(&opts.Environment, "environment", "", "the cluster's environment: Dev, Staging or Production")
	_ = cmd.MarkFlagRequired("kubeconfig")
	_ = cmd.MarkFlagRequired("environment")
	_ = cmd.MarkFlagFilename("kubeconfig")
	_ = cmd.RegisterFlagCompletionFunc("environment", enumCompletion(environments()...))
	return cmd
}

func clusterAddRun(ctx context.Context, opts *ClusterAddOptions) error {
	f := opts.f
	if !slices.Contains(environments(), opts.Environment) {
		return flagErrorf("--environment must be one of %s, not %q", join(environments()), opts.Environment)
	}
	kc, err := FlattenKubeconfig(opts.Kubeconfig, opts.KubeContext)
	if err != nil {
		return err
	}
	c, err := f.Client()
	if err != nil {
		return err
	}
	cl, err := c.CreateCluster(ctx, api.ClusterRequest{Name: opts.Name, Environment: opts.Environment, Kubeconfig: string(kc)})
	if err != nil {
		return err
	}
	if f.OutputFormat() == output.FormatTable {
		fmt.Fprintf(f.IOStreams.ErrOut, "Registered cluster %s (%s, Kubernetes %s).\n", cl.Name, cl.Environment, cl.KubernetesVersion)
	}
	return printCluster(f, cl)
}

// FlattenKubeconfig reads a kubeconfig file and returns a kubeconfig of one context (the file's
// current context when context is empty) with every referenced file inlined, as the manager's
// API takes it. Exec plugins and auth providers are refused: the manager cannot run them.
func FlattenKubeconfig(path, context string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if context == "" {
		context = cfg.CurrentContext
	}
	if context == "" {
		return nil, fmt.Errorf("the kubeconfig %s has no current context: name one with --kube-context", path)
	}
	kctx, ok := cfg.Contexts[context]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig %s has no context %q", path, context)
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig's context %q names the cluster %q, which the file lacks", context, kctx.Cluster)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig's context %q names the user %q, which the file lacks", context, kctx.AuthInfo)
	}
	if user.Exec != nil || user.AuthProvider != nil {
		return nil, fmt.Errorf("the kubeconfig's user %q signs in through an exec plugin or auth provider, which the manager cannot run: use a token or a client certificate", kctx.AuthInfo)
	}
	one := clientcmdapi.NewConfig()
	one.Clusters[kctx.Cluster] = cluster
	one.AuthInfos[kctx.AuthInfo] = user
	c := *kctx
	c.Namespace = ""
	one.Contexts[context] = &c
	one.CurrentContext = context
	if err := clientcmdapi.FlattenConfig(one); err != nil {
		return nil, fmt.Errorf("inlining the kubeconfig's files: %w", err)
	}
	if user.TokenFile != "" {
		tf := user.TokenFile
		if !filepath.IsAbs(tf) {
			tf = filepath.Join(filepath.Dir(user.LocationOfOrigin), tf)
		}
		tok, err := os.ReadFile(tf)
		if err != nil {
			return nil, fmt.Errorf("reading the kubeconfig user's token file: %w", err)
		}
		u := *user
		u.Token, u.TokenFile = string(tok), ""
		one.AuthInfos[kctx.AuthInfo] = &u
	}
	return clientcmd.Write(*one)
}

// ClusterListOptions are slipway cluster list's.
type ClusterListOptions struct {
	f      *Factory
	Filter client.ClusterFilter
	List   ListFlags
}

// NewCmdClusterList is `slipway cluster list`.
func NewCmdClusterList(f *Factory, runF func(context.Context, *ClusterListOptions) error) *cobra.Command {
	opts := &ClusterListOptions{f: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the clusters with their environment, health and Kubernetes version",
		Example: `  slipway cluster list
  slipway cluster list --environment Production --health Unhealthy
  slipway cluster list -o json`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.List.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return clusterListRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Filter.Environment, "environment", "", "only clusters of this environment")
	cmd.Flags().StringVar(&opts.Filter.Health, "health", "", "only clusters of this health: Healthy, Unhealthy or Unknown")
	opts.List.add(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("environment", enumCompletion(environments()...))
	_ = cmd.RegisterFlagCompletionFunc("health", enumCompletion("Healthy", "Unhealthy", "Unknown"))
	return cmd
}

func clusterListRun(ctx context.Context, opts *ClusterListOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	items, cont, err := c.ListClusters(ctx, opts.Filter, opts.List.page())
	if err != nil {
		return err
	}
	return printPage(f, items, cont, opts.List, func(p *output.Printer) error {
		t := p.Table("name", "environment", "health", "kubernetes", "checked", "reason")
		for _, cl := range items {
			t.Row(cl.Name, cl.Environment, cl.Health, cl.KubernetesVersion, p.TimeP(cl.LastChecked), cl.HealthReason)
		}
		return t.Render()
	})
}

// ClusterGetOptions are slipway cluster get's.
type ClusterGetOptions struct {
	f       *Factory
	Name    string
	Refresh bool
}

// NewCmdClusterGet is `slipway cluster get NAME`.
func NewCmdClusterGet(f *Factory, runF func(context.Context, *ClusterGetOptions) error) *cobra.Command {
	opts := &ClusterGetOptions{f: f}
	cmd := &cobra.Command{
		Use:               "get NAME",
		Short:             "Show a cluster; --refresh checks its health now",
		Example:           "  slipway cluster get prod-eu\n  slipway cluster get prod-eu --refresh -o yaml",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeClusters(),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return clusterGetRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Refresh, "refresh", false, "check the cluster's health now (connectivity and Kubernetes version)")
	return cmd
}

func clusterGetRun(ctx context.Context, opts *ClusterGetOptions) error {
	c, err := opts.f.Client()
	if err != nil {
		return err
	}
	if opts.Refresh {
		if _, err := c.ClusterHealth(ctx, opts.Name, true); err != nil {
			return err
		}
	}
	cl, err := c.GetCluster(ctx, opts.Name)
	if err != nil {
		return err
	}
	return printCluster(opts.f, cl)
}

func printCluster(f *Factory, cl *api.Cluster) error {
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), cl, func(p *output.Printer) error {
		return p.Detail([2]string{"Name", cl.Name}, [2]string{"Environment", cl.Environment}, [2]string{"Health", cl.Health},
			[2]string{"Reason", cl.HealthReason}, [2]string{"Kubernetes", cl.KubernetesVersion},
			[2]string{"Checked", p.TimeP(cl.LastChecked)}, [2]string{"Registered", p.Time(cl.CreatedAt)})
	})
}

// ClusterRemoveOptions are slipway cluster remove's.
type ClusterRemoveOptions struct {
	f    *Factory
	Name string
	Yes  bool
}

// NewCmdClusterRemove is `slipway cluster remove NAME`.
func NewCmdClusterRemove(f *Factory, runF func(context.Context, *ClusterRemoveOptions) error) *cobra.Command {
	opts := &ClusterRemoveOptions{f: f}
	cmd := &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm", "delete"},
		Short:   "Remove a cluster and what the manager created in it",
		Long: `Remove a cluster from the manager; the manager deletes what it created in the cluster. Asks
for confirmation on a terminal; elsewhere --yes is required.`,
		Example:           "  slipway cluster remove dev-3\n  slipway cluster remove dev-3 --yes",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeClusters(),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := f.confirm(opts.Yes, fmt.Sprintf("Remove cluster %s from the manager?", opts.Name)); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			if err := c.DeleteCluster(cmd.Context(), opts.Name); err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "Removed cluster %s.\n", opts.Name)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}
