package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/oauth2"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/config"
)

// LoginOptions are slipway login's.
type LoginOptions struct {
	f        *Factory
	Server   string
	Token    string
	Name     string
	CAFile   string
	Insecure bool
}

// NewCmdLogin is `slipway login SERVER`.
func NewCmdLogin(f *Factory, runF func(context.Context, *LoginOptions) error) *cobra.Command {
	opts := &LoginOptions{f: f}
	cmd := &cobra.Command{
		Use:   "login SERVER",
		Short: "Sign in to a manager and store it as a context",
		Long: `Sign in to a manager and make it the current context.

The token comes from --token ('-' reads it from standard input), or else from the manager's OIDC
issuer by the device flow (a code to enter in a browser) when the issuer offers one, or else is
asked for on a terminal. It is checked with the manager (GET /api/v1/whoami) before anything is
stored. The context (named after the server's host unless --name says otherwise) is written to
the config file: $SLIPWAY_CONFIG, else $XDG_CONFIG_HOME/slipway/config.yaml, else
~/.config/slipway/config.yaml.`,
		Example: `  # A token made by the manager's admin (manager token --subject alice --role Admin)
  slipway login https://manager.example.com:8443 --token "$TOKEN"

  # The manager's OIDC issuer by the device flow, under a name of your choosing
  slipway login https://manager.example.com --name prod

  # A manager serving a certificate from a private CA
  slipway login https://127.0.0.1:8443 --certificate-authority ca.pem --token - < token.txt`,
		Args:    cobraArgs(cobra.ExactArgs(1)),
		GroupID: groupSetup,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Server = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return loginRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Token, "token", "", "the token to sign in with ('-': read it from standard input)")
	fl.StringVar(&opts.Name, "name", "", "the context's name (default: the server's host)")
	fl.StringVar(&opts.CAFile, "certificate-authority", "", "a PEM file of the CA that signed the manager's certificate")
	fl.BoolVar(&opts.Insecure, "insecure-skip-tls-verify", false, "do not verify the manager's TLS certificate (testing only)")
	return cmd
}

func loginRun(ctx context.Context, opts *LoginOptions) error {
	f, ios := opts.f, opts.f.IOStreams
	u, err := client.ParseServer(opts.Server)
	if err != nil {
		return &FlagError{Err: err}
	}
	ca := opts.CAFile
	if ca != "" {
		if ca, err = filepath.Abs(ca); err != nil {
			return err
		}
	}
	base := client.Options{Server: u.String(), CAFile: ca, Insecure: opts.Insecure, UserAgent: "slipway/" + versionString()}
	if _, err := client.New(base); err != nil { // a bad CA file: before any question is asked
		return err
	}
	tok, err := loginToken(ctx, opts, base)
	if err != nil {
		return err
	}
	base.Token = tok
	c, err := client.New(base)
	if err != nil {
		return err
	}
	who, err := c.WhoAmI(ctx)
	if err != nil {
		if client.IsAuth(err) {
			return &AuthError{Err: fmt.Errorf("the manager refused the token: %w", err)}
		}
		return err
	}
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	name := opts.Name
	if name == "" {
		name = u.Host
	}
	cfg.Upsert(config.Context{Name: name, Server: u.String(), CertificateAuthority: ca, InsecureSkipTLSVerify: opts.Insecure},
		config.User{Name: name, Token: tok})
	if err := cfg.Save(); err != nil {
		return err
	}
	fmt.Fprintf(ios.ErrOut, "Signed in to %s as %s (%s). The current context is %s (in %s).\n",
		u, who.Subject, strings.Join(who.Roles, ", "), name, cfg.File())
	return nil
}

// loginToken is --token (or standard input's), else the device flow's, else one pasted on a
// terminal.
func loginToken(ctx context.Context, opts *LoginOptions, base client.Options) (string, error) {
	ios := opts.f.IOStreams
	switch opts.Token {
	case "-":
		data, err := io.ReadAll(io.LimitReader(ios.In, 64<<10))
		if err != nil {
			return "", err
		}
		if tok := strings.TrimSpace(string(data)); tok != "" {
			return tok, nil
		}
		return "", flagErrorf("--token -: standard input holds no token")
	case "":
	default:
		return opts.Token, nil
	}
	tok, err := deviceLogin(ctx, opts.f, base)
	var no *noDeviceFlow
	if !errors.As(err, &no) {
		return tok, err
	}
	if !ios.CanPrompt() {
		return "", flagErrorf("give --token: %s", no.why)
	}
	fmt.Fprintf(ios.ErrOut, "No device sign-in: %s.\n", no.why)
	tok, err = ios.ReadLine("Paste a token: ")
	if err != nil {
		return "", err
	}
	if tok = strings.TrimSpace(tok); tok == "" {
		return "", ErrCancelled
	}
	return tok, nil
}

// noDeviceFlow says why the device flow cannot be used.
type noDeviceFlow struct{ why string }

func (e *noDeviceFlow) Error() string { return e.why }

// discovery is the part of an OIDC discovery document the device flow needs.
type discovery struct {
	Issuer                      string `json:"issuer"`
	TokenEndpoint               string `json:"token_endpoint"`
	DeviceAuthorizationEndpoint string `json:"device_authorization_endpoint"`
}

// deviceLogin signs in through the OAuth 2.0 device flow (RFC 8628) of the OIDC issuer the
// manager names in GET /api/v1/ui/config, and returns the ID token (the manager verifies it with
// the issuer's keys and its client id as audience), or the access token when there is none.
func deviceLogin(ctx context.Context, f *Factory, base client.Options) (string, error) {
	c, err := client.New(base)
	if err != nil {
		return "", err
	}
	uc, err := c.UIConfig(ctx)
	if client.StatusCode(err) == http.StatusNotFound {
		return "", &noDeviceFlow{"the manager does not publish its sign-in settings"}
	}
	if err != nil {
		return "", err
	}
	if uc.OIDC == nil || uc.OIDC.Issuer == "" || uc.OIDC.ClientID == "" {
		return "", &noDeviceFlow{"the manager has no OIDC issuer configured"}
	}
	hc, err := client.HTTPClient(base)
	if err != nil {
		return "", err
	}
	d, err := discover(ctx, hc, uc.OIDC.Issuer)
	if err != nil {
		return "", err
	}
	if d.DeviceAuthorizationEndpoint == "" {
		return "", &noDeviceFlow{fmt.Sprintf("the OIDC issuer %s offers no device flow", uc.OIDC.Issuer)}
	}
	scopes := uc.OIDC.Scopes
	if len(scopes) == 0 {
		scopes = []string{"openid", "profile", "email"}
	}
	oc := &oauth2.Config{ClientID: uc.OIDC.ClientID, Scopes: scopes,
		Endpoint: oauth2.Endpoint{DeviceAuthURL: d.DeviceAuthorizationEndpoint, TokenURL: d.TokenEndpoint}}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	da, err := oc.DeviceAuth(ctx)
	if err != nil {
		return "", fmt.Errorf("starting the device sign-in at %s: %w", d.DeviceAuthorizationEndpoint, err)
	}
	ios := f.IOStreams
	fmt.Fprintf(ios.ErrOut, "To sign in, open %s and enter the code %s\n", da.VerificationURI, da.UserCode)
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(ios.ErrOut, "(or open %s)\n", da.VerificationURIComplete)
	}
	fmt.Fprintln(ios.ErrOut, "Waiting for the sign-in…")
	tok, err := oc.DeviceAccessToken(ctx, da)
	if err != nil {
		return "", fmt.Errorf("device sign-in: %w", err)
	}
	if id, _ := tok.Extra("id_token").(string); id != "" {
		return id, nil
	}
	return tok.AccessToken, nil
}

// discover reads the issuer's discovery document.
func discover(ctx context.Context, hc *http.Client, issuer string) (*discovery, error) {
	u := strings.TrimRight(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the OIDC issuer's discovery document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the OIDC issuer's discovery document %s: %s", u, resp.Status)
	}
	var d discovery
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&d); err != nil {
		return nil, fmt.Errorf("the OIDC issuer's discovery document %s: %w", u, err)
	}
	if d.DeviceAuthorizationEndpoint != "" && d.TokenEndpoint == "" {
		return nil, fmt.Errorf("the OIDC issuer's discovery document %s has no token_endpoint", u)
	}
	return &d, nil
}
