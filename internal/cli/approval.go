package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/output"
)

// approvalStatuses are approval list --status's values.
var approvalStatuses = []string{"pending", "approved", "rejected", "expired", "all"}

// NewCmdApproval is `slipway approval` and its verbs.
func NewCmdApproval(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "approval",
		Aliases: []string{"approvals"},
		Short:   "List approval requests and approve or reject them",
		GroupID: groupManager,
	}
	cmd.AddCommand(NewCmdApprovalList(f, nil), NewCmdApprovalDecide(f, "approve", nil), NewCmdApprovalDecide(f, "reject", nil))
	return cmd
}

// ApprovalListOptions are slipway approval list's.
type ApprovalListOptions struct {
	f      *Factory
	Filter client.ApprovalFilter
	List   ListFlags
}

// NewCmdApprovalList is `slipway approval list`.
func NewCmdApprovalList(f *Factory, runF func(context.Context, *ApprovalListOptions) error) *cobra.Command {
	opts := &ApprovalListOptions{f: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List approval requests, newest first (the pending ones unless --status says otherwise)",
		Example: `  slipway approval list
  slipway approval list --status all --deployment ID -o yaml`,
		Args: cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.List.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return approvalListRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Filter.Status, "status", "", "pending (default), approved, rejected, expired or all")
	fl.StringVar(&opts.Filter.DeploymentID, "deployment", "", "only the approvals of this deployment")
	opts.List.add(fl)
	_ = cmd.RegisterFlagCompletionFunc("status", enumCompletion(approvalStatuses...))
	_ = cmd.RegisterFlagCompletionFunc("deployment", f.flagFrom(deploymentNames(false)))
	return cmd
}

func approvalListRun(ctx context.Context, opts *ApprovalListOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	items, cont, err := c.ListApprovals(ctx, opts.Filter, opts.List.page())
	if err != nil {
		return err
	}
	return printPage(f, items, cont, opts.List, func(p *output.Printer) error {
		t := p.Table("id", "deployment", "kind", "role", "approvals", "status", "requested by", "expires", "reason")
		for _, a := range items {
			t.Row(a.ID, a.DeploymentID, a.Kind, a.RequiredRole, fmt.Sprintf("%d/%d", a.Approvals, a.Required), a.Status,
				a.RequestedBy, p.Time(a.ExpiresAt), a.Reason)
		}
		if err := t.Render(); err != nil || !p.TTY() {
			return err // piped: the rows alone, for scripts (the notes are in -o json)
		}
		for _, a := range items {
			for _, n := range a.MigrationNotes {
				fmt.Fprintf(p.Out(), "Migration note for %s (%s %s): %s\n", a.ID, n.CRD, n.Version, noteText(&n.Note))
			}
		}
		return nil
	})
}

// ApprovalDecideOptions are slipway approval approve's and reject's.
type ApprovalDecideOptions struct {
	f        *Factory
	Decision string
	ID       string
	Comment  string
}

// NewCmdApprovalDecide is `slipway approval approve ID` or `slipway approval reject ID --comment C`.
func NewCmdApprovalDecide(f *Factory, decision string, runF func(context.Context, *ApprovalDecideOptions) error) *cobra.Command {
	opts := &ApprovalDecideOptions{f: f, Decision: decision}
	cmd := &cobra.Command{
		Use:   decision + " ID",
		Short: "Approve a request (the approval's role decides who may; nobody approves their own)",
		Example: `  slipway approval approve 7f4c… --comment "checked the migration note"
  slipway approval approve $(slipway approval list --deployment ID -o json | jq -r '.[0].id')`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeApprovals(),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ID = args[0]
			if decision == "reject" && strings.TrimSpace(opts.Comment) == "" {
				return flagErrorf("--comment is required: say why the deployment is rejected")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return approvalDecideRun(cmd.Context(), opts)
		},
	}
	if decision == "reject" {
		cmd.Short = "Reject a request, with a comment saying why: the deployment is never executed"
		cmd.Example = `  slipway approval reject 7f4c… --comment "not during the freeze"`
	}
	cmd.Flags().StringVar(&opts.Comment, "comment", "", "a comment recorded with the decision (required to reject)")
	return cmd
}

func approvalDecideRun(ctx context.Context, opts *ApprovalDecideOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	call := c.Approve
	if opts.Decision == "reject" {
		call = c.Reject
	}
	a, err := call(ctx, opts.ID, opts.Comment)
	if err != nil {
		return err
	}
	if f.OutputFormat() == output.FormatTable {
		fmt.Fprintf(f.IOStreams.ErrOut, "%sd approval %s of deployment %s: %s (%d/%d).\n",
			strings.ToUpper(opts.Decision[:1])+opts.Decision[1:], a.ID, a.DeploymentID, a.Status, a.Approvals, a.Required)
		return nil
	}
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), a, nil)
}

// AuditOptions are slipway audit's.
type AuditOptions struct {
	f      *Factory
	Filter client.AuditFilter
	Since  string
	List   ListFlags
}

// NewCmdAudit is `slipway audit`.
func NewCmdAudit(f *Factory, runF func(context.Context, *AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{f: f}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit log, newest first (Admins)",
		Example: `  slipway audit --since 24h
  slipway audit --actor alice --action deployment.rollback
  slipway audit --target-kind cluster --target-name prod-eu --since 2026-11-01T00:00:00Z -o json`,
		Args:    cobraArgs(cobra.NoArgs),
		GroupID: groupManager,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.List.check(); err != nil {
				return err
			}
			if err := opts.since(f.Now()); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return auditRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Filter.Actor, "actor", "", "only what this subject did")
	fl.StringVar(&opts.Filter.Action, "action", "", "only this action (deployment.create, cluster.delete, …)")
	fl.StringVar(&opts.Filter.TargetKind, "target-kind", "", "only actions on this kind (cluster, operator, deployment, …)")
	fl.StringVar(&opts.Filter.TargetName, "target-name", "", "only actions on this name")
	fl.StringVar(&opts.Since, "since", "", "only records since this time: RFC 3339, or a duration back from now (24h)")
	opts.List.add(fl)
	return cmd
}

// since reads --since as RFC 3339 or as a duration back from now.
func (opts *AuditOptions) since(now time.Time) error {
	if opts.Since == "" {
		return nil
	}
	if t, err := time.Parse(time.RFC3339, opts.Since); err == nil {
		opts.Filter.Since = client.Timestamp(t)
		return nil
	}
	d, err := time.ParseDuration(opts.Since)
	if err != nil || d <= 0 {
		return flagErrorf("--since must be an RFC 3339 time (2026-11-01T00:00:00Z) or a duration such as 24h, not %q", opts.Since)
	}
	opts.Filter.Since = client.Timestamp(now.Add(-d))
	return nil
}

func auditRun(ctx context.Context, opts *AuditOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	items, cont, err := c.ListAudit(ctx, opts.Filter, opts.List.page())
	if err != nil {
		return err
	}
	return printPage(f, items, cont, opts.List, func(p *output.Printer) error {
		t := p.Table("time", "actor", "action", "target", "result", "request")
		for _, e := range items {
			t.Row(p.Time(e.Time), e.Actor, e.Action, strings.TrimPrefix(e.TargetKind+"/"+e.TargetName, "/"), e.Result, e.RequestID)
		}
		return t.Render()
	})
}
