// Package cli is the `slipway` command: the manager's verbs (login, context, cluster, operator,
// crd, deploy, deployment, approval, audit) over its API, and the in-cluster verbs over the
// kubeconfig. Commands follow gh's pattern: NewCmdX(f, runF) copies what it needs from the
// Factory into an XOptions, and runF (nil: the real run) lets tests stop before the run.
package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/cli/output"
)

// Main runs slipway with the process's arguments and streams and returns its exit code:
// os.Exit(cli.Main()).
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := NewFactory(iostreams.System(), os.Getenv)
	return Run(ctx, f, os.Args[1:])
}

// Run runs slipway with args over f and returns the exit code (see ExitCode); the error is
// printed on f's standard error.
func Run(ctx context.Context, f *Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		var flagErr *FlagError
		switch {
		case errors.As(err, &flagErr) && flagErr.Command == "" && cmd != nil:
			flagErr.Command = cmd.CommandPath()
		case !errors.As(err, &flagErr) && cmd != nil && isCobraUsageError(err):
			err = &FlagError{Err: err, Command: cmd.CommandPath()}
		}
		if ctx.Err() != nil && ExitCode(err) == ExitError {
			err = ErrCancelled // stopped by a signal: whatever failed failed because of it
		}
		printError(f.IOStreams.ErrOut, err)
	}
	return ExitCode(err)
}

// NewCmdRoot is the root command with every verb. Its persistent flags fill f.Global; its
// PersistentPreRunE checks them and applies --timeout to the command's context.
func NewCmdRoot(f *Factory) *cobra.Command {
	var cancel context.CancelFunc
	cmd := &cobra.Command{
		Use:   "slipway",
		Short: "Deploy operators across clusters through the slipway manager, and look into the clusters",
		Long: `slipway talks to a slipway manager (register clusters and operators, deploy with a strategy,
follow and steer deployments, decide approvals, read the audit log) and to Kubernetes clusters
through the kubeconfig.

Sign in first: slipway login https://manager.example.com --token TOKEN`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := output.ParseFormat(f.Global.Output); err != nil {
				return &FlagError{Err: err}
			}
			if f.Global.Timeout <= 0 {
				return flagErrorf("--timeout must be positive, not %s", f.Global.Timeout)
			}
			var ctx context.Context
			ctx, cancel = context.WithTimeout(cmd.Context(), f.Global.Timeout)
			cmd.SetContext(ctx)
			return nil
		},
		PersistentPostRun: func(*cobra.Command, []string) {
			if cancel != nil {
				cancel()
			}
		},
	}
	cmd.SetIn(f.IOStreams.In)
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &FlagError{Err: err, Command: c.CommandPath()}
	})
	g := f.Global
	pf := cmd.PersistentFlags()
	pf.StringVar(&g.Context, "context", g.Context, "the context (manager and user) to use, from the config file (default: the current one)")
	pf.StringVar(&g.Server, "server", g.Server, "the manager's URL, replacing the context's")
	pf.DurationVar(&g.Timeout, "timeout", g.Timeout, "how long a command may take, waits included")
	pf.StringVarP(&g.Output, "output", "o", g.Output, "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(output.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("context", f.completeContexts)

	cmd.AddGroup(&cobra.Group{ID: groupManager, Title: "Manager commands:"},
		&cobra.Group{ID: groupCluster, Title: "In-cluster commands (through the kubeconfig):"},
		&cobra.Group{ID: groupSetup, Title: "Setup commands:"})
	// The deployment command is kept in a variable: `deployment watch` is added to it here.
	deployment := NewCmdDeployment(f)
	deployment.AddCommand(NewCmdDeploymentWatch(f, nil))
	cmd.AddCommand(
		NewCmdLogin(f, nil),
		NewCmdLogout(f, nil),
		NewCmdContext(f, nil),
		NewCmdWhoAmI(f, nil),
		NewCmdVersion(f, nil),
		NewCmdCluster(f),
		NewCmdAnalysisTemplate(f),
		NewCmdOperator(f),
		NewCmdCRD(f),
		NewCmdDeploy(f, nil),
		deployment,
		NewCmdApproval(f),
		NewCmdAudit(f, nil),
		NewCmdGet(f), NewCmdReconcile(f), NewCmdSuspend(f), NewCmdResume(f), NewCmdLogs(f), NewCmdPreview(f),
	)
	cmd.SetHelpCommandGroupID(groupSetup)
	cmd.SetCompletionCommandGroupID(groupSetup)
	return cmd
}

// Command groups in slipway --help.
const (
	groupManager = "manager"
	groupSetup   = "setup"
)

// completeContexts completes context names from the config file.
func (f *Factory) completeContexts(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := f.Config()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return cfg.Names(), cobra.ShellCompDirectiveNoFileComp
}

// isCobraUsageError tells the usage errors cobra returns without the flag error function:
// required flags left out, flags of a group given together.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "required flag(s)") || strings.HasPrefix(msg, "if any flags in the group") ||
		strings.HasPrefix(msg, "at least one of the flags in the group")
}

// cobraArgs wraps a cobra positional-arguments check so that its error is a usage error.
func cobraArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return &FlagError{Err: err, Command: cmd.CommandPath()}
		}
		return nil
	}
}
