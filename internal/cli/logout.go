package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/cli/client"
)

// LogoutOptions are slipway logout's.
type LogoutOptions struct {
	f *Factory
	// Name is the context to sign out of ("": --context, $SLIPWAY_CONTEXT or the current one).
	Name string
	// Local removes the token without asking the manager to revoke it.
	Local bool
}

// NewCmdLogout is `slipway logout [NAME]`.
func NewCmdLogout(f *Factory, runF func(context.Context, *LogoutOptions) error) *cobra.Command {
	opts := &LogoutOptions{f: f}
	cmd := &cobra.Command{
		Use:   "logout [NAME]",
		Short: "Sign out of a manager: revoke the token there and remove it from the config file",
		Long: `Sign out of a manager: the manager revokes the context's token (DELETE /api/v1/session), so
that it stops working at once on every replica, wherever a copy of it is; then the token is
removed from the config file (from every context holding it). The context itself stays: sign in
again with slipway login.

The context is NAME, else --context, else $SLIPWAY_CONTEXT, else the current one. With
$SLIPWAY_TOKEN set, that token is the one revoked (the config file is left as it is).

A token without an id (one minted by an older manager, or an OIDC ID token whose issuer writes no
jti) cannot be revoked: the manager says until when it stays valid, and it is removed anyway.
When the manager cannot be reached nothing is removed; --local removes the token without
revoking it (it then stays valid until it expires).`,
		Example: `  slipway logout
  slipway logout prod
  slipway logout staging --local      # the manager is gone: only forget the token`,
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
			return logoutRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Local, "local", false, "remove the token without asking the manager to revoke it (it stays valid until it expires)")
	return cmd
}

func logoutRun(ctx context.Context, opts *LogoutOptions) error {
	f, ios := opts.f, opts.f.IOStreams
	if opts.Name != "" {
		if f.Global.Context != "" && f.Global.Context != opts.Name {
			return flagErrorf("the context is %s or %s? give NAME or --context, not both", opts.Name, f.Global.Context)
		}
		f.Global.Context = opts.Name
	}
	conn, err := f.Connection()
	if errors.Is(err, ErrSignedOut) {
		fmt.Fprintf(ios.ErrOut, "Already signed out of %s: its context holds no token.\n", contextName(f))
		return nil
	}
	if err != nil {
		return err
	}
	if conn.Token == "" {
		return &AuthError{Err: fmt.Errorf("no token to sign out with: give a context or set $%s", EnvToken)}
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	stored := ""
	if c, ok := cfg.Context(conn.Context); ok {
		if u, ok := cfg.User(c.User); ok {
			stored = u.Token
		}
	}
	fromEnv := conn.Token != stored
	if fromEnv && opts.Local {
		return flagErrorf("--local removes a context's token, but the token in use comes from $%s: unset it instead", EnvToken)
	}
	if !opts.Local {
		if err := revokeToken(ctx, conn, opts); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(ios.ErrOut, "Not revoked (--local): the token stays valid until it expires.")
	}
	if fromEnv {
		fmt.Fprintf(ios.ErrOut, "Signed out of %s: the token came from $%s (unset it); the config file is unchanged.\n", conn.Server, EnvToken)
		return nil
	}
	users := cfg.ForgetToken(stored)
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "Signed out of %s (%s): the token is removed from %s (users: %s). Sign in again with slipway login %s --name %s.\n",
		conn.Context, conn.Server, cfg.File(), join(users), conn.Server, conn.Context)
	return nil
}

// revokeToken asks the manager to revoke the connection's token and says what it did. A token
// the manager refuses already, or cannot revoke, is no error (it is removed all the same); a
// manager that does not answer is, and the token is kept for another try.
func revokeToken(ctx context.Context, conn Connection, opts *LogoutOptions) error {
	ios := opts.f.IOStreams
	c, err := conn.Client()
	if err != nil {
		return err
	}
	err = c.SignOut(ctx)
	switch code := client.StatusCode(err); {
	case err == nil:
		fmt.Fprintln(ios.ErrOut, "The manager revoked the token: it no longer works anywhere.")
	case code == http.StatusUnauthorized:
		fmt.Fprintf(ios.ErrOut, "The manager no longer accepts the token (%v): nothing to revoke.\n", err)
	case code == http.StatusConflict:
		fmt.Fprintf(ios.ErrOut, "Warning: the manager cannot revoke the token: %v\n", err)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		fmt.Fprintf(ios.ErrOut, "Warning: this manager cannot revoke tokens (it predates sign-out): the token stays valid until it expires.\n")
	default:
		return fmt.Errorf("signing out on %s: %w; the token is kept: try again, or remove it without revoking it with slipway logout --local", conn.Server, err)
	}
	return nil
}

// contextName is the context a command uses: --context, else $SLIPWAY_CONTEXT, else the current.
func contextName(f *Factory) string {
	if f.Global.Context != "" {
		return f.Global.Context
	}
	if name := f.Getenv(EnvContext); name != "" {
		return name
	}
	if cfg, err := f.Config(); err == nil {
		return cfg.CurrentContext
	}
	return ""
}
