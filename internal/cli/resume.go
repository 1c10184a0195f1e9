package cli

import (
	"context"

	"github.com/spf13/cobra"
)

// NewCmdResume is `slipway resume KIND NAME`.
func NewCmdResume(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "resume KIND NAME",
		Short:   "Let an operator act on a suspended object again, and wait for the result",
		GroupID: groupCluster,
		RunE:    unknownKubeKind("werfbundle"),
	}
	f.addKubeFlags(cmd)
	cmd.AddCommand(NewCmdResumeWerfBundle(f, nil))
	return cmd
}

// NewCmdResumeWerfBundle is `slipway resume werfbundle NAME`.
func NewCmdResumeWerfBundle(f *Factory, runF func(context.Context, *SuspendWerfBundleOptions) error) *cobra.Command {
	opts := &SuspendWerfBundleOptions{f: f}
	cmd := &cobra.Command{
		Use:     "werfbundle NAME",
		Aliases: []string{"werfbundles", "wb"},
		Short:   "Resume polling, deploys and drift correction (spec.suspend: false), and wait for the result",
		Long: `Clear spec.suspend: the operator polls the registry at once and deploys what it finds. Then
(unless --wait=false) wait for that reconcile and the Job it started, and print the WerfBundle,
as slipway reconcile werfbundle does: exit 0 when Ready, 1 when not, 8 at --timeout.`,
		Example: `  slipway resume werfbundle my-app -n my-app-prod
  slipway resume wb my-app --wait=false`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeNames(werfBundleKind),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return setWerfBundleSuspend(cmd.Context(), opts, false)
		},
	}
	cmd.Flags().BoolVar(&opts.Wait, "wait", true, "wait for the operator's reconcile after resuming and report its result")
	return cmd
}
