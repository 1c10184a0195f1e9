package analysis

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// Auth kinds of a Prometheus config.
const (
	AuthNone   = "none"
	AuthBearer = "bearer"
	AuthBasic  = "basic"
)

// Timeouts of a Prometheus client: connecting, the TLS handshake, and one query (sent to
// Prometheus as its own timeout as well, so it stops evaluating a query nobody waits for).
const (
	DialTimeout  = 5 * time.Second
	TLSTimeout   = 5 * time.Second
	QueryTimeout = 15 * time.Second
)

// Prometheus is how the manager reaches one cluster's Prometheus.
type Prometheus struct {
	// URL is the base URL (http or https), e.g. https://prometheus.monitoring:9090.
	URL string
	// AuthKind is none, bearer or basic.
	AuthKind string
	// BearerToken is the token of AuthKind bearer.
	BearerToken string
	// Username and Password are those of AuthKind basic.
	Username string
	Password string
	// CAPEM, when set, are the only certificates trusted for an https URL.
	CAPEM []byte
}

// Validate checks the config as the API receives it.
func (p Prometheus) Validate() error {
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid.Field("url", "%q: an http or https URL with a host, e.g. https://prometheus.monitoring:9090", clip(p.URL))
	}
	if u.User != nil {
		return invalid.Field("url", "credentials go in basic auth, not in the URL")
	}
	switch p.AuthKind {
	case AuthNone, "":
		if p.BearerToken != "" || p.Username != "" || p.Password != "" {
			return invalid.Field("auth", "none: give no token, username or password")
		}
	case AuthBearer:
		if p.BearerToken == "" || p.Username != "" || p.Password != "" {
			return invalid.Field("auth", "bearer: give a token, and no username or password")
		}
	case AuthBasic:
		if p.Username == "" || p.Password == "" || p.BearerToken != "" {
			return invalid.Field("auth", "basic: give a username and a password, and no token")
		}
	default:
		return invalid.Field("auth", "%q: none, bearer or basic", clip(p.AuthKind))
	}
	if len(p.CAPEM) > 0 {
		if _, err := certPool(p.CAPEM); err != nil {
			return err
		}
	}
	return nil
}

func certPool(pemBytes []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, invalid.Field("ca", "no PEM certificate in it")
	}
	return pool, nil
}

// Client returns the PromQL API of p, with the auth and CA of p and the timeouts above.
func (p Prometheus) Client() (v1.API, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   TLSTimeout,
		ResponseHeaderTimeout: QueryTimeout + 5*time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	if len(p.CAPEM) > 0 {
		pool, err := certPool(p.CAPEM)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	var rt http.RoundTripper = tr
	switch p.AuthKind {
	case AuthBearer:
		rt = authRoundTripper{next: rt, set: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+p.BearerToken) }}
	case AuthBasic:
		rt = authRoundTripper{next: rt, set: func(r *http.Request) { r.SetBasicAuth(p.Username, p.Password) }}
	}
	c, err := api.NewClient(api.Config{Address: p.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return v1.NewAPI(c), nil
}

// authRoundTripper sets a request's credentials on a copy of it (a RoundTripper must not
// change the request it is given). prometheus/common/config has the same, at the cost of its
// dependencies (conntrack, oauth2 …) for two lines.
type authRoundTripper struct {
	next http.RoundTripper
	set  func(*http.Request)
}

func (a authRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	a.set(r)
	return a.next.RoundTrip(r)
}
