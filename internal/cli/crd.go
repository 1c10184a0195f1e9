package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/cli/output"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// NewCmdCRD is `slipway crd` and its verbs.
func NewCmdCRD(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "crd",
		Aliases: []string{"crds"},
		Short:   "Read CRD histories, check a new definition, approve a breaking change",
		GroupID: groupManager,
	}
	cmd.AddCommand(NewCmdCRDList(f, nil), NewCmdCRDGet(f, nil), NewCmdCRDValidate(f, nil), NewCmdCRDApprove(f, nil))
	return cmd
}

// CRDListOptions are slipway crd list's.
type CRDListOptions struct {
	f     *Factory
	Group string
	List  ListFlags
}

// NewCmdCRDList is `slipway crd list`.
func NewCmdCRDList(f *Factory, runF func(context.Context, *CRDListOptions) error) *cobra.Command {
	opts := &CRDListOptions{f: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List CRDs with their latest revision",
		Example: "  slipway crd list\n  slipway crd list --group cert-manager.io",
		Args:    cobraArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.List.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return crdListRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Group, "group", "", "only CRDs of this API group")
	opts.List.add(cmd.Flags())
	return cmd
}

func crdListRun(ctx context.Context, opts *CRDListOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	items, cont, err := c.ListCRDs(ctx, opts.Group, opts.List.page())
	if err != nil {
		return err
	}
	return printPage(f, items, cont, opts.List, func(p *output.Printer) error {
		t := p.Table("name", "kind", "revisions", "latest", "operator", "recorded")
		for _, x := range items {
			t.Row(x.Name, x.Kind, fmt.Sprint(x.Revisions), x.Latest.Version, x.Latest.Operator, p.Time(x.Latest.CreatedAt))
		}
		return t.Render()
	})
}

// NewCmdCRDGet is `slipway crd get NAME`.
func NewCmdCRDGet(f *Factory, runF func(context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use:               "get NAME",
		Short:             "Show a CRD's revisions, approvals and status in every cluster",
		Example:           "  slipway crd get certificates.cert-manager.io\n  slipway crd get widgets.example.com -o yaml",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeCRDs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), args[0])
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			crd, err := c.GetCRD(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), crd, func(p *output.Printer) error { return printCRD(p, crd) })
		},
	}
}

func printCRD(p *output.Printer, crd *api.CRD) error {
	if err := p.Detail([2]string{"Name", crd.Name}, [2]string{"Group", crd.Group}, [2]string{"Kind", crd.Kind},
		[2]string{"Scope", crd.Scope}); err != nil {
		return err
	}
	fmt.Fprintln(p.Out(), "\nRevisions:")
	t := p.Table("version", "operator", "digest", "shipped by", "recorded", "migration note")
	for _, r := range crd.Revisions {
		t.Row(r.Version, r.Operator, shortDigest(r.Digest), join(r.Versions), p.Time(r.CreatedAt), noteText(r.MigrationNote))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(crd.Approvals) > 0 {
		fmt.Fprintln(p.Out(), "\nApprovals:")
		t = p.Table("to version", "by", "reason", "when")
		for _, a := range crd.Approvals {
			t.Row(a.ToVersion, a.ApprovedBy, a.Reason, p.Time(a.CreatedAt))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(crd.Clusters) > 0 {
		fmt.Fprintln(p.Out(), "\nClusters:")
		t = p.Table("cluster", "environment", "installed", "revision", "deployed", "matches", "error")
		for _, cl := range crd.Clusters {
			rev, dep := "", ""
			if cl.Revision != nil {
				rev = cl.Revision.Version
			}
			if cl.Deployed != nil {
				dep = cl.Deployed.Operator + " " + cl.Deployed.Version
			}
			t.Row(cl.Cluster, cl.Environment, yesNo(cl.Installed), rev, dep, yesNo(cl.MatchesDeployed), cl.Error)
		}
		return t.Render()
	}
	return nil
}

func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

func noteText(n *api.MigrationNote) string {
	if n == nil {
		return ""
	}
	return strings.TrimSpace(strings.Join([]string{noteHead(n.Text), n.URL}, " "))
}

func noteHead(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// CRDValidateOptions are slipway crd validate's.
type CRDValidateOptions struct {
	f        *Factory
	Name     string
	File     string
	Clusters []string
	Request  api.ValidateRequest
}

// NewCmdCRDValidate is `slipway crd validate NAME`.
func NewCmdCRDValidate(f *Factory, runF func(context.Context, *CRDValidateOptions) error) *cobra.Command {
	opts := &CRDValidateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "validate NAME (-f FILE | --operator OPERATOR --version VERSION)",
		Short: "Compare a new definition of a CRD with the stored one and check the clusters' objects",
		Long: `Compare a candidate definition of a CRD with the stored one (the latest revision, or
--base-version's): each schema change, whether it breaks existing objects, and every existing
object in the clusters (all, or --clusters) that the new schema would refuse. The candidate is a
file (-f, YAML or JSON; '-' for standard input) or the CRD as an operator's chart version ships it.`,
		Example: `  slipway crd validate widgets.example.com --operator widget --version 2.0.0
  slipway crd validate widgets.example.com -f widgets-crd.yaml --clusters dev-1,dev-2`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeCRDs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := opts.prepare(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return crdValidateRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.File, "filename", "f", "", "the candidate CustomResourceDefinition (YAML or JSON; '-': standard input)")
	fl.StringVar(&opts.Request.Operator, "operator", "", "take the candidate from this operator's chart…")
	fl.StringVar(&opts.Request.Version, "version", "", "…at this version")
	fl.StringVar(&opts.Request.BaseVersion, "base-version", "", "compare with the revision of this version instead of the latest")
	fl.StringSliceVar(&opts.Clusters, "clusters", nil, "check the objects of these clusters only (default: every cluster)")
	_ = cmd.RegisterFlagCompletionFunc("operator", f.flagFrom(operatorNames))
	_ = cmd.RegisterFlagCompletionFunc("clusters", f.listFlagFrom(clusterNames))
	cmd.MarkFlagsMutuallyExclusive("filename", "operator")
	return cmd
}

func (opts *CRDValidateOptions) prepare() error {
	r := &opts.Request
	r.Clusters = splitList(opts.Clusters)
	switch {
	case opts.File == "" && r.Operator == "":
		return flagErrorf("give the candidate: -f FILE, or --operator and --version")
	case r.Operator != "" && r.Version == "":
		return flagErrorf("--operator needs --version")
	case opts.File != "":
		var data []byte
		var err error
		if opts.File == "-" {
			data, err = io.ReadAll(io.LimitReader(opts.f.IOStreams.In, 4<<20))
		} else {
			data, err = os.ReadFile(opts.File)
		}
		if err != nil {
			return err
		}
		if r.Definition, err = yaml.YAMLToJSON(data); err != nil {
			return fmt.Errorf("%s is not YAML or JSON: %w", opts.File, err)
		}
	}
	return nil
}

func crdValidateRun(ctx context.Context, opts *CRDValidateOptions) error {
	f := opts.f
	c, err := f.Client()
	if err != nil {
		return err
	}
	rep, err := c.ValidateCRD(ctx, opts.Name, opts.Request)
	if err != nil {
		return err
	}
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), rep, func(p *output.Printer) error { return printValidation(p, rep) })
}

func printValidation(p *output.Printer, rep *api.ValidationReport) error {
	from := "(none stored)"
	if rep.From != nil {
		from = rep.From.Version + " " + shortDigest(rep.From.Digest)
	}
	verdict := "compatible"
	if rep.Breaking {
		verdict = "BREAKING"
		if rep.Approved {
			verdict += " (approved)"
		} else if rep.ApprovalRequired {
			verdict += " (needs an Admin's approval: slipway crd approve)"
		}
	}
	if err := p.Detail([2]string{"CRD", rep.CRD}, [2]string{"From", from},
		[2]string{"To", rep.To.Version + " " + shortDigest(rep.To.Digest)}, [2]string{"Verdict", verdict}); err != nil {
		return err
	}
	if len(rep.Changes) > 0 {
		fmt.Fprintln(p.Out(), "\nChanges:")
		t := p.Table("breaking", "kind", "version", "path", "message")
		for _, ch := range rep.Changes {
			t.Row(yesNo(ch.Breaking), ch.Kind, ch.Version, ch.Path, ch.Message)
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(rep.Clusters) > 0 {
		fmt.Fprintln(p.Out(), "\nClusters:")
		t := p.Table("cluster", "environment", "installed", "objects", "invalid", "error")
		for _, cl := range rep.Clusters {
			var bad []string
			for _, o := range cl.InvalidObjects {
				bad = append(bad, strings.TrimPrefix(o.Namespace+"/"+o.Name, "/"))
			}
			t.Row(cl.Cluster, cl.Environment, yesNo(cl.Installed), fmt.Sprint(cl.Objects), join(bad), cl.Error)
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	for _, n := range rep.MigrationNotes {
		fmt.Fprintf(p.Out(), "\nMigration note (%s %s): %s\n", n.CRD, n.Version, noteText(&n.Note))
	}
	return nil
}

// NewCmdCRDApprove is `slipway crd approve NAME --version V --reason R`.
func NewCmdCRDApprove(f *Factory, runF func(context.Context, string, api.ApproveRequest) error) *cobra.Command {
	var req api.ApproveRequest
	cmd := &cobra.Command{
		Use:   "approve NAME --version VERSION --reason TEXT",
		Short: "Approve a breaking change of a CRD (Admins)",
		Long: `Approve a breaking change of a CRD, so deployments that carry it need no more approval for it.
With --operator, exactly the change crd validate reports for that operator's --version (and
--base-version); without, the change to the stored revision labelled --version (or --digest)
from the revision before it.`,
		Example: `  slipway crd approve widgets.example.com --operator widget --version 2.0.0 \
      --reason "spec.size removed: no object sets it (checked with crd validate)"`,
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeCRDs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(req.Reason) == "" {
				return flagErrorf("--reason is required: say why the breaking change is safe")
			}
			if req.Version == "" && req.Digest == "" {
				return flagErrorf("give --version (or --digest) of the revision to approve")
			}
			if runF != nil {
				return runF(cmd.Context(), args[0], req)
			}
			c, err := f.Client()
			if err != nil {
				return err
			}
			a, err := c.ApproveCRD(cmd.Context(), args[0], req)
			if err != nil {
				return err
			}
			return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), a, func(p *output.Printer) error {
				return p.Detail([2]string{"Approved", a.CRD}, [2]string{"To", a.ToVersion + " " + shortDigest(a.ToDigest)},
					[2]string{"From", shortDigest(a.FromDigest)}, [2]string{"By", a.ApprovedBy}, [2]string{"Reason", a.Reason})
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Operator, "operator", "", "the operator whose chart version ships the new revision")
	fl.StringVar(&req.Version, "version", "", "the version (of the operator, or the revision's label) to approve")
	fl.StringVar(&req.Digest, "digest", "", "the revision's digest, instead of --version")
	fl.StringVar(&req.BaseVersion, "base-version", "", "the revision the change is from (default: the one before)")
	fl.StringVar(&req.Reason, "reason", "", "why the breaking change is safe (recorded in the audit log)")
	_ = cmd.RegisterFlagCompletionFunc("operator", f.flagFrom(operatorNames))
	return cmd
}
