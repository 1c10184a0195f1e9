package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/server"
	"github.com/slipway-dev/slipway/internal/manager/ui"
)

// uiOptions are serve's flags for the web UI.
type uiOptions struct {
	enabled    bool
	clientID   string
	scopes     string
	sessionTTL time.Duration
	// connectSrc are more origins the UI's pages may connect to (--ui-connect-src).
	connectSrc string
}

// maxSessionTTL bounds --ui-session-ttl: a session token cannot be revoked before it expires.
const maxSessionTTL = 7 * 24 * time.Hour

func (o *uiOptions) bind(fs *flag.FlagSet) {
	fs.BoolVar(&o.enabled, "ui", true, "serve the web UI at / (same origin, TLS and auth as the API); false: the API alone")
	fs.StringVar(&o.clientID, "ui-oidc-client-id", "", "the OIDC client id (a public client) the web UI signs in as, with the authorization-code flow and PKCE at --oidc-issuer-url; its ID tokens are accepted beside --oidc-audience's")
	fs.StringVar(&o.scopes, "ui-oidc-scopes", strings.Join(server.DefaultUIScopes, " "), "the scopes the web UI asks the OIDC issuer for (space-separated; openid among them)")
	fs.StringVar(&o.connectSrc, "ui-connect-src", "", "more origins (comma-separated https://host[:port]) the web UI's pages may connect to: "+
		"an OIDC token endpoint on another origin than --oidc-issuer-url's, which the UI's Content-Security-Policy allows already")
	fs.DurationVar(&o.sessionTTL, "ui-session-ttl", server.DefaultSessionTTL, "how long a session token from a sign-in link (POST /api/v1/session) lasts")
}

// config checks the flags and returns the server's UI configuration; issuer is --oidc-issuer-url.
func (o *uiOptions) config(issuer string) (server.UIConfig, error) {
	scopes := strings.FieldsFunc(o.scopes, func(r rune) bool { return r == ' ' || r == ',' })
	switch {
	case o.clientID != "" && issuer == "":
		return server.UIConfig{}, errors.New("--ui-oidc-client-id needs --oidc-issuer-url: the issuer the UI signs in at")
	case !slices.Contains(scopes, "openid"):
		return server.UIConfig{}, fmt.Errorf("--ui-oidc-scopes %q must include openid (the UI sends the ID token it gets)", o.scopes)
	case o.sessionTTL <= 0 || o.sessionTTL > maxSessionTTL:
		return server.UIConfig{}, fmt.Errorf("--ui-session-ttl must be positive and at most %s, not %s", maxSessionTTL, o.sessionTTL)
	}
	c := server.UIConfig{OIDCClientID: o.clientID, OIDCScopes: scopes, SessionTTL: o.sessionTTL}
	if o.clientID != "" {
		c.OIDCIssuer = issuer
	}
	return c, nil
}

// handler is the UI's handler, nil with --ui=false. Its Content-Security-Policy lets the pages
// connect to the OIDC issuer the UI signs in at (issuer, when --ui-oidc-client-id is set) and to
// the origins of --ui-connect-src.
func (o *uiOptions) handler(issuer string) (http.Handler, error) {
	if !o.enabled {
		return nil, nil
	}
	var origins []string
	if o.clientID != "" {
		origins = append(origins, issuer)
	}
	if o.connectSrc != "" {
		origins = append(origins, strings.Split(o.connectSrc, ",")...)
	}
	for i, raw := range origins {
		origin, err := originOf(strings.TrimSpace(raw))
		if err != nil {
			return nil, err
		}
		origins[i] = origin
	}
	slices.Sort(origins)
	return ui.New(slices.Compact(origins)...), nil
}

// originOf is the origin (scheme://host[:port]) of an https URL, or of http on a loopback host.
func originOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("%q is not an origin the web UI may connect to (https://host[:port])", raw)
	}
	if h := u.Hostname(); u.Scheme == "http" && h != "localhost" && !net.ParseIP(h).IsLoopback() {
		return "", fmt.Errorf("%q: the web UI connects to other origins over https only (http on loopback for tests)", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

func runOpenAPI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("openapi", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: openapi takes none", fs.Args())
	}
	doc, err := server.OpenAPI()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", doc)
	return err
}

// DefaultTicketTTL is login-link's default --ttl.
const DefaultTicketTTL = 15 * time.Minute

func runLoginLink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("login-link", stderr)
	var a authOptions
	a.bind(fs)
	base := fs.String("url", "", "the manager's URL as people open it (https://host:port)")
	subject := fs.String("subject", "", "who signs in (the user id in logs and the audit log)")
	roles := fs.String("role", "", "comma-separated roles: Admin, Operator, Viewer, EnvironmentOwner:<Dev|Staging|Production>")
	ttl := fs.Duration("ttl", DefaultTicketTTL, "how long the link can be used (once)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" || *subject == "" || *roles == "" {
		return errors.New("--url, --subject and --role are required")
	}
	u, err := linkBase(*base)
	if err != nil {
		return err
	}
	rs, err := parseRoles(*roles)
	if err != nil {
		return err
	}
	secret, err := a.secret()
	if err != nil {
		return err
	}
	if len(secret) == 0 {
		return fmt.Errorf("no secret: pass --jwt-secret-file or set $%s (the manager's own, which checks the ticket)", envJWTSecret)
	}
	ticket, err := server.MintLoginTicket(secret, *subject, rs, *ttl, time.Now())
	if err != nil {
		return err
	}
	// The ticket rides in the fragment: browsers never send it to a server, so no log holds it.
	_, err = fmt.Fprintf(stdout, "%s/login#ticket=%s\n", u, ticket)
	return err
}

// linkBase checks login-link's --url: http(s), a host, nothing after it (the UI is served at /).
func linkBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("--url %q must be the manager's URL, https://host[:port]", raw)
	}
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("--url %q must be only scheme://host[:port]: the web UI is served at /", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

func parseRoles(s string) ([]auth.Role, error) {
	var rs []auth.Role
	for _, r := range strings.Split(s, ",") {
		role, err := auth.ParseRole(strings.TrimSpace(r))
		if err != nil {
			return nil, fmt.Errorf("--role: %w", err)
		}
		rs = append(rs, role)
	}
	return rs, nil
}
