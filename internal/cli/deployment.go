package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// NewCmdDeployment is `slipway deployment` with list, get and the actions on one deployment
// (the watch view adds `deployment watch` to it in root.go).
func NewCmdDeployment(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "deployment",
		Aliases: []string{"deployments", "dep"},
		Short:   "List deployments, show one, and pause, resume, switch, cancel or roll it back",
		GroupID: groupManager,
	}
	cmd.AddCommand(NewCmdDeploymentList(f, nil), NewCmdDeploymentGet(f, nil))
	for _, a := range deploymentActions {
		cmd.AddCommand(NewCmdDeploymentAction(f, a, nil))
	}
	return cmd
}

func deploymentStatuses() []string { return slices.Clone(api.DeploymentStatuses) }

// DeploymentListOptions are slipway deployment list's.
type DeploymentListOptions struct {
	f      *Factory
	Filter client.DeploymentFilter
	List   ListFlags
}

// NewCmdDeploymentList is `slipway deployment list`.
func NewCmdDeploymentList(f *Factory, runF func(context.Context, *DeploymentListOptions) error) *cobra.Command {
	opts := &DeploymentListOptions{f: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List deployments, newest first",
		Example: `  slipway deployment list
  slipway deployment list --active
  slipway deployment list --operator cert-manager --status Failed -o json`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.List.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return deploymentListRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Filter.Operator, "operator", "", "only deployments of this operator")
	fl.StringVar(&opts.Filter.Status, "status", "", "only deployments in this status ("+join(deploymentStatuses())+")")
	fl.BoolVar(&opts.Filter.Active, "active", false, "only deployments that are not finished")
	opts.List.add(fl)
	_ = cmd.RegisterFlagCompletionFunc("operator", f.flagFrom(operatorNames))
	_ = cmd.RegisterFlagCompletionFunc("status", enumCompletion(deploymentStatuses()...))
	return cmd
}

func deploymentListRun(ctx context.Context, opts *DeploymentListOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	items, cont, err := c.ListDeployments(ctx, opts.Filter, opts.List.page())
	if err != nil {
		return err
	}
	return printPage(f, items, cont, opts.List, func(p *output.Printer) error {
		t := p.Table("id", "operator", "version", "strategy", "status", "stage", "clusters", "requested by", "created", "waiting")
		for _, d := range items {
			t.Row(d.ID, d.Operator, d.Version, d.Strategy, deploymentState(&d), stageText(&d), clusterCounts(d.Clusters),
				d.RequestedBy, p.Time(d.CreatedAt), waitingText(d.Waiting))
		}
		return t.Render()
	})
}

// stageText is the deployment's stage for people, counted from 1 as the design and the web UI
// count them: "2/3" (the API's stage is an index from 0; -o json and yaml keep it).
func stageText(d *api.Deployment) string {
	n := 0
	for _, c := range d.Clusters {
		n = max(n, c.Stage+1)
	}
	if n == 0 {
		return fmt.Sprint(d.Stage + 1)
	}
	return fmt.Sprintf("%d/%d", min(d.Stage+1, n), n)
}

// deploymentState is the status with what holds it: paused, a requested cancel or rollback.
func deploymentState(d *api.Deployment) string {
	s := d.Status
	var marks []string
	if d.Paused {
		marks = append(marks, "paused")
	}
	if d.CancelRequested && d.Status != api.DeploymentCancelled {
		marks = append(marks, "cancelling")
	}
	if d.RollbackRequested && d.Status != api.DeploymentRolledBack && d.Status != api.DeploymentRollingBack {
		marks = append(marks, "rollback requested")
	}
	if len(marks) > 0 {
		s += " (" + strings.Join(marks, ", ") + ")"
	}
	return s
}

// waitingText is what a deployment waits for, as the manager says it ("evaluation period, 3 m
// 10 s left"); "" when nothing holds it.
func waitingText(w *api.Waiting) string {
	if w == nil {
		return ""
	}
	return w.Message
}

// clusterCounts is "3/4 healthy": the clusters done out of all.
func clusterCounts(cs []api.DeploymentCluster) string {
	done := 0
	for _, c := range cs {
		if c.Status == "healthy" {
			done++
		}
	}
	return fmt.Sprintf("%d/%d healthy", done, len(cs))
}

// NewCmdDeploymentGet is `slipway deployment get ID`.
func NewCmdDeploymentGet(f *Factory, runF func(context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:               "get ID",
		Short:             "Show a deployment with each cluster's status",
		Example:           "  slipway deployment get 0b7c6f0e-8d0a-4a8e-9a43-2f1f0c7f9a11\n  slipway deployment get ID -o yaml",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeDeployments(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), args[0])
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			d, err := c.GetDeployment(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printDeployment(f, d)
		},
	}
}

func printDeployment(f *Factory, d *api.Deployment) error {
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), d, func(p *output.Printer) error {
		paused := ""
		if d.Paused {
			paused = "by " + d.PausedBy + " " + p.TimeP(d.PausedAt)
			if d.PauseReason != "" {
				paused += ": " + d.PauseReason
			}
		}
		config := string(d.Config)
		if config == "{}" {
			config = ""
		}
		if err := p.Detail([2]string{"ID", d.ID}, [2]string{"Operator", d.Operator}, [2]string{"Version", d.Version},
			[2]string{"Strategy", d.Strategy}, [2]string{"Config", config}, [2]string{"Bake window", d.BakeWindow},
			[2]string{"Status", deploymentState(d)},
			[2]string{"Reason", d.Reason}, [2]string{"Waiting", waitingText(d.Waiting)},
			[2]string{"Stage", stageText(d)}, [2]string{"Stage started", p.TimeP(d.StageStartedAt)}, [2]string{"Paused", paused},
			[2]string{"Rollback reason", d.RollbackReason}, [2]string{"Requested by", d.RequestedBy},
			[2]string{"Created", p.Time(d.CreatedAt)}, [2]string{"Started", p.TimeP(d.StartedAt)},
			[2]string{"Finished", p.TimeP(d.FinishedAt)}, [2]string{"Switched", p.TimeP(d.SwitchedAt)}); err != nil {
			return err
		}
		fmt.Fprintln(p.Out())
		t := p.Table("cluster", "environment", "stage", "status", "revision", "previous", "waiting", "message")
		for _, c := range d.Clusters {
			prev := c.PreviousVersion
			if c.PreviousRevision > 0 {
				prev += fmt.Sprintf(" (rev %d)", c.PreviousRevision)
			}
			rev := ""
			if c.HelmRevision > 0 {
				rev = fmt.Sprint(c.HelmRevision)
			}
			t.Row(c.Name, c.Environment, fmt.Sprint(c.Stage+1), c.Status, rev, strings.TrimSpace(prev), c.Waiting, c.Message)
		}
		if err := t.Render(); err != nil {
			return err
		}
		return printAnalysisRuns(p, d.AnalysisRuns)
	})
}

// deploymentAction is one of the verbs that change a deployment.
type deploymentAction struct {
	Use, Short, Long, Example string
	// Confirm is the question asked on a terminal (without --yes); empty: none asked.
	Confirm string
	// Reason: the verb takes --reason.
	Reason bool
	// Done is the message after success ("Paused deployment %s.").
	Done string
	Call func(ctx context.Context, c *client.Client, id, reason string) (*api.Deployment, error)
}

var deploymentActions = []deploymentAction{
	{Use: "pause", Short: "Pause a deployment: the step under way finishes, no new one starts",
		Long: `Pause a deployment: the cluster step under way finishes and no new one starts until it is
resumed. Health checks and automatic rollback go on.`,
		Example: "  slipway deployment pause ID --reason \"waiting for the change freeze to end\"",
		Reason:  true, Done: "Paused deployment %s.",
		Call: func(ctx context.Context, c *client.Client, id, reason string) (*api.Deployment, error) {
			return c.PauseDeployment(ctx, id, reason)
		}},
	{Use: "resume", Short: "Resume a paused deployment from where it stopped", Example: "  slipway deployment resume ID",
		Done: "Resumed deployment %s.",
		Call: func(ctx context.Context, c *client.Client, id, _ string) (*api.Deployment, error) {
			return c.ResumeDeployment(ctx, id)
		}},
	{Use: "switch", Short: "Switch a BlueGreen deployment to green once green is validated",
		Long:    `Switch a BlueGreen deployment (started with --auto-switch=false) to green, once green is validated.`,
		Example: "  slipway deployment switch ID\n  slipway deployment switch ID --yes",
		Confirm: "Switch deployment %s to green?", Done: "Switching deployment %s to green.",
		Call: func(ctx context.Context, c *client.Client, id, _ string) (*api.Deployment, error) {
			return c.SwitchDeployment(ctx, id)
		}},
	{Use: "cancel", Short: "Cancel a deployment: installs in flight finish, no more start",
		Long:    `Cancel a deployment: installs in flight finish, no more start; its history is kept.`,
		Example: "  slipway deployment cancel ID\n  slipway deployment cancel ID --yes",
		Confirm: "Cancel deployment %s?", Done: "Cancelling deployment %s.",
		Call: func(ctx context.Context, c *client.Client, id, _ string) (*api.Deployment, error) {
			return c.CancelDeployment(ctx, id)
		}},
	{Use: "rollback", Short: "Roll a deployment back to what each cluster ran before it (Admins)",
		Long: `Roll a deployment back: every cluster it changed returns to the release it ran before (a
first install is removed).`,
		Example: "  slipway deployment rollback ID --reason \"errors after the upgrade\" --yes",
		Confirm: "Roll deployment %s back?", Reason: true, Done: "Rolling deployment %s back.",
		Call: func(ctx context.Context, c *client.Client, id, reason string) (*api.Deployment, error) {
			return c.RollbackDeployment(ctx, id, reason)
		}},
}

// DeploymentActionOptions are the options of pause, resume, switch, cancel and rollback.
type DeploymentActionOptions struct {
	f      *Factory
	Action string
	ID     string
	Reason string
	Yes    bool
}

// NewCmdDeploymentAction is `slipway deployment pause|resume|switch|cancel|rollback ID`.
func NewCmdDeploymentAction(f *Factory, a deploymentAction, runF func(context.Context, *DeploymentActionOptions) error) *cobra.Command {
	opts := &DeploymentActionOptions{f: f, Action: a.Use}
	long := a.Long
	if long == "" {
		long = a.Short + "."
	}
	if a.Confirm != "" {
		long += "\n\nAsks for confirmation on a terminal; elsewhere --yes is required."
	}
	cmd := &cobra.Command{
		Use:               a.Use + " ID",
		Short:             a.Short,
		Long:              long,
		Example:           a.Example,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeDeployments(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if a.Confirm != "" {
				if err := f.confirm(opts.Yes, fmt.Sprintf(a.Confirm, opts.ID)); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			d, err := a.Call(cmd.Context(), c, opts.ID, opts.Reason)
			if err != nil {
				return err
			}
			if f.OutputFormat() == output.FormatTable {
				fmt.Fprintf(f.IOStreams.ErrOut, a.Done+" Status: %s.\n", d.ID, deploymentState(d))
				return nil
			}
			return printDeployment(f, d)
		},
	}
	if a.Reason {
		cmd.Flags().StringVar(&opts.Reason, "reason", "", "why (recorded with the deployment and in the audit log)")
	}
	if a.Confirm != "" {
		cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	}
	return cmd
}

// printPlan prints a dry run's plan: the stages with their clusters, the approvals it would ask
// for, each cluster's CRD report, and why planning would fail.
func printPlan(p *output.Printer, plan *api.DryRun) error {
	w := p.Out()
	fmt.Fprintf(w, "Dry run: %s %s, %s (nothing was stored)\n", plan.Operator, plan.Version, plan.Strategy)
	fmt.Fprintf(w, "Bake window: %s after it completes\n", plan.BakeWindow)
	if plan.WouldFail != "" {
		fmt.Fprintf(w, "Planning would FAIL the deployment: %s\n", plan.WouldFail)
	}
	fmt.Fprintln(w, "\nStages:")
	t := p.Table("stage", "kind", "clusters", "parallel", "percent", "hold", "threshold", "after")
	for _, s := range plan.Stages {
		after := s.PauseAfter
		if s.WaitForSwitch {
			after = strings.TrimSpace(after + " waits for switch")
		}
		t.Row(fmt.Sprint(s.Index+1), s.Kind, join(s.Clusters), fmt.Sprint(s.Parallel), fmt.Sprintf("%g", s.Percentage),
			s.Hold, fmt.Sprintf("%g%%", s.SuccessThreshold*100), after)
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nClusters:")
	t = p.Table("cluster", "environment", "stage", "namespace", "installed", "crds", "problem")
	for _, c := range plan.Clusters {
		var crds []string
		for _, x := range c.CRDs {
			s := x.Name + " " + x.Status
			if x.Approved {
				s += " (approved)"
			}
			crds = append(crds, s)
		}
		t.Row(c.Name, c.Environment, fmt.Sprint(c.Stage+1), c.Namespace, orDash(c.InstalledVersion), join(crds), c.Problem)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(plan.Approvals) == 0 {
		fmt.Fprintln(w, "\nApprovals: none needed")
	} else {
		fmt.Fprintln(w, "\nApprovals:")
		t = p.Table("kind", "role", "required", "reason")
		for _, a := range plan.Approvals {
			t.Row(a.Kind, a.RequiredRole, fmt.Sprint(a.Required), a.Reason)
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(plan.AlreadyRunning) > 0 {
		fmt.Fprintf(w, "\nAlready running %s: %s\n", plan.Version, join(plan.AlreadyRunning))
	}
	return nil
}
