package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/cli/output"
)

// ContextOptions are slipway context's.
type ContextOptions struct {
	f *Factory
	// Name is the context to switch to ("": list them).
	Name string
}

// ContextView is a context as `slipway context -o json` shows it: never its token.
type ContextView struct {
	Current               bool   `json:"current"`
	Name                  string `json:"name"`
	Server                string `json:"server"`
	User                  string `json:"user,omitempty"`
	CertificateAuthority  string `json:"certificateAuthority,omitempty"`
	InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify,omitempty"`
}

// NewCmdContext is `slipway context [NAME]` with `context delete NAME`.
func NewCmdContext(f *Factory, runF func(context.Context, *ContextOptions) error) *cobra.Command {
	opts := &ContextOptions{f: f}
	cmd := &cobra.Command{
		Use:     "context [NAME]",
		Aliases: []string{"ctx"},
		Short:   "List the contexts, or switch to one",
		Long: `Without NAME, list the contexts of the config file, the current one marked with *.
With NAME, make it the current context.`,
		Example: `  slipway context
  slipway context prod
  slipway context -o json`,
		Args:              cobraArgs(cobra.MaximumNArgs(1)),
		GroupID:           groupSetup,
		ValidArgsFunction: f.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return contextRun(opts)
		},
	}
	cmd.AddCommand(newCmdContextDelete(f))
	return cmd
}

func contextRun(opts *ContextOptions) error {
	f := opts.f
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	if opts.Name != "" {
		if err := cfg.Use(opts.Name); err != nil {
			return err
		}
		if err := cfg.Save(); err != nil {
			return err
		}
		fmt.Fprintf(f.IOStreams.ErrOut, "Switched to context %s.\n", opts.Name)
		return nil
	}
	views := make([]ContextView, 0, len(cfg.Contexts))
	for _, c := range cfg.Contexts {
		views = append(views, ContextView{Current: c.Name == cfg.CurrentContext, Name: c.Name, Server: c.Server, User: c.User,
			CertificateAuthority: c.CertificateAuthority, InsecureSkipTLSVerify: c.InsecureSkipTLSVerify})
	}
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), views, func(p *output.Printer) error {
		if len(views) == 0 {
			fmt.Fprintf(f.IOStreams.ErrOut, "No contexts in %s: sign in with slipway login SERVER.\n", cfg.File())
			return nil
		}
		t := p.Table("current", "name", "server", "user")
		for _, v := range views {
			mark := ""
			if v.Current {
				mark = "*"
			}
			t.Row(mark, v.Name, v.Server, v.User)
		}
		return t.Render()
	})
}

func newCmdContextDelete(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a context and its token",
		Example:           "  slipway context delete staging",
		Args:              cobraArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: f.completeContexts,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			if err := cfg.Delete(args[0]); err != nil {
				return err
			}
			if err := cfg.Save(); err != nil {
				return err
			}
			fmt.Fprintf(f.IOStreams.ErrOut, "Deleted context %s.\n", args[0])
			return nil
		},
	}
}

// WhoAmIOptions are slipway whoami's.
type WhoAmIOptions struct{ f *Factory }

// WhoAmIView is what whoami prints: the manager's answer and where it came from.
type WhoAmIView struct {
	Context      string   `json:"context,omitempty"`
	Server       string   `json:"server"`
	Subject      string   `json:"subject"`
	Roles        []string `json:"roles"`
	Environments []string `json:"environments,omitempty"`
}

// NewCmdWhoAmI is `slipway whoami`.
func NewCmdWhoAmI(f *Factory, runF func(context.Context, *WhoAmIOptions) error) *cobra.Command {
	opts := &WhoAmIOptions{f: f}
	return &cobra.Command{
		Use:     "whoami",
		Short:   "Show who the current context signs in as, and the roles",
		Example: "  slipway whoami\n  slipway whoami --context prod -o json",
		Args:    cobraArgs(cobra.NoArgs),
		GroupID: groupSetup,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return whoamiRun(cmd.Context(), opts)
		},
	}
}

func whoamiRun(ctx context.Context, opts *WhoAmIOptions) error {
	f := opts.f
	conn, err := f.Connection()
	if err != nil {
		return err
	}
	c, err := conn.Client()
	if err != nil {
		return err
	}
	who, err := c.WhoAmI(ctx)
	if err != nil {
		return err
	}
	v := WhoAmIView{Context: conn.Context, Server: c.Server(), Subject: who.Subject, Roles: who.Roles, Environments: who.Environments}
	if v.Roles == nil {
		v.Roles = []string{}
	}
	return output.Print(f.IOStreams, f.OutputFormat(), f.Now(), v, func(p *output.Printer) error {
		return p.Detail([2]string{"Subject", v.Subject}, [2]string{"Roles", join(v.Roles)},
			[2]string{"Environments", join(v.Environments)}, [2]string{"Server", v.Server}, [2]string{"Context", v.Context})
	})
}
