// Package client is the manager API's client for the CLI: net/http with a context's TLS
// settings and Bearer token, decoding answers into the API's types (package api, the manager's
// wire contract, which imports none of the server's packages). An answer that is not a success is an
// *APIError carrying the server's message; IsAuth tells 401 and 403 apart from the rest.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Options say how to reach a manager.
type Options struct {
	// Server is the manager's base URL (https://host:port).
	Server string
	// Token is sent as "Authorization: Bearer <token>" ("" sends none).
	Token string
	// CAFile is a PEM file of certificates to trust (beside the system's).
	CAFile string
	// Insecure skips TLS verification.
	Insecure bool
	// UserAgent names the CLI in requests.
	UserAgent string
	// Transport replaces the HTTP transport (its TLS settings then are the caller's).
	Transport http.RoundTripper
}

// Client calls one manager's API.
type Client struct {
	base  *url.URL
	token string
	ua    string
	http  *http.Client
	// PageSize is the page size lists ask for (0: MaxPage); lists follow the continue tokens.
	PageSize int
}

// New checks o and builds a client. It sends nothing.
func New(o Options) (*Client, error) {
	base, err := ParseServer(o.Server)
	if err != nil {
		return nil, err
	}
	rt := o.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if tr.TLSClientConfig, err = tlsConfig(o.CAFile, o.Insecure); err != nil {
			return nil, err
		}
		rt = tr
	}
	ua := o.UserAgent
	if ua == "" {
		ua = "slipway"
	}
	return &Client{base: base, token: o.Token, ua: ua, http: &http.Client{Transport: rt}}, nil
}

// HTTPClient is a plain HTTP client with o's TLS settings (CAFile, Insecure), for other
// servers the CLI talks to on the manager's behalf (its OIDC issuer).
func HTTPClient(o Options) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var err error
	if tr.TLSClientConfig, err = tlsConfig(o.CAFile, o.Insecure); err != nil {
		return nil, err
	}
	return &http.Client{Transport: tr, Timeout: time.Minute}, nil
}

// ParseServer checks a manager URL: http or https with a host, no query; a trailing slash is
// dropped.
func ParseServer(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("no server: give the manager's URL (https://host:port)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("the server %q is not a URL: %w", s, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("the server %q must start with https:// (or http://)", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("the server %q has no host", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("the server %q must not have a query or fragment", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

func tlsConfig(caFile string, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if insecure {
		cfg.InsecureSkipVerify = true // the user asked for it (--insecure-skip-tls-verify)
		return cfg, nil
	}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the certificate authority: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the certificate authority %s holds no PEM certificate", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// Server is the manager's base URL.
func (c *Client) Server() string { return c.base.String() }

// APIError is an answer that is not a success, with the server's error body.
type APIError struct {
	StatusCode int
	// Body is the server's {"code","message","details"}; for an answer that is not in that
	// shape, Code is empty and Message says what came back.
	Body api.Error
}

func (e *APIError) Error() string {
	if e.Body.Message != "" {
		return e.Body.Message
	}
	return fmt.Sprintf("the manager answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// RequestID is the request id the server gave the failed request ("" when none).
func (e *APIError) RequestID() string {
	id, _ := e.Body.Details["requestId"].(string)
	return id
}

// IsAuth reports whether err is a 401 (no valid token) or 403 (the role may not).
func IsAuth(err error) bool {
	var e *APIError
	return errors.As(err, &e) && (e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden)
}

// StatusCode is err's HTTP status when it is an *APIError, else 0.
func StatusCode(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

// Do sends a request to path (under the server's base URL) with query, in marshalled as JSON
// (nil: no body), and decodes a success's body into out (nil: discarded).
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	resp, err := c.Send(ctx, method, path, query, in, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// Send sends a request and returns a success's response, its body unread (the caller closes
// it); an answer that is not 2xx is read and returned as an *APIError. header sets headers,
// replacing the defaults (Accept: text/event-stream for a stream).
func (c *Client) Send(ctx context.Context, method, path string, query url.Values, in any, header http.Header) (*http.Response, error) {
	req, err := c.newRequest(ctx, method, path, query, in)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header.Del(k) // replaces the default (Accept: application/json for a stream)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, c.Server(), unwrapURLError(err))
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readError(resp)
}

func (c *Client) newRequest(ctx context.Context, method, path string, query url.Values, in any) (*http.Request, error) {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.ua)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return req, nil
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

func readError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{StatusCode: resp.StatusCode}
	if json.Unmarshal(data, &e.Body) == nil && e.Body.Message != "" {
		return e
	}
	e.Body = api.Error{}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	e.Body.Message = fmt.Sprintf("the manager answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if text != "" {
		e.Body.Message += ": " + text
	}
	return e
}

// unwrapURLError drops *url.Error's "Get "https://…/api/v1/…":" prefix: the caller names the
// server once.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// list fetches pages of a list route, following continue tokens, until limit items (0: all) or
// the last page. It returns the items and the continue token left (non-empty: there are more).
func list[L any, T any](ctx context.Context, c *Client, path string, q url.Values, limit int, page func(*L) ([]T, string)) ([]T, string, error) {
	if q == nil {
		q = url.Values{}
	}
	var out []T
	cont := ""
	for {
		size := MaxPage
		if c.PageSize > 0 {
			size = c.PageSize
		}
		if limit > 0 && limit-len(out) < size {
			size = limit - len(out)
		}
		q.Set("limit", fmt.Sprint(size))
		if cont != "" {
			q.Set("continue", cont)
		}
		var l L
		if err := c.Do(ctx, http.MethodGet, path, q, nil, &l); err != nil {
			return nil, "", err
		}
		items, next := page(&l)
		out = append(out, items...)
		cont = next
		if cont == "" || (limit > 0 && len(out) >= limit) {
			return out, cont, nil
		}
	}
}

// MaxPage is the largest page the API serves.
const MaxPage = 1000

// Timestamp formats a time as the API's queries take it.
func Timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
