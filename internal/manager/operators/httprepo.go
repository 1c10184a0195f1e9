package operators

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// httpSource reads Helm chart repositories: GET <repository>/index.yaml, then the archive URL the
// index gives for a version (relative URLs resolve against the repository).
type httpSource struct {
	client          *http.Client
	maxIndexBytes   int64
	maxArchiveBytes int64
}

func newHTTPSource(opts Options) *httpSource {
	return &httpSource{
		client:          &http.Client{Transport: opts.Transport, Timeout: opts.Timeout},
		maxIndexBytes:   opts.MaxIndexBytes,
		maxArchiveBytes: opts.MaxArchiveBytes,
	}
}

// repoBase is the repository URL with one trailing slash, the base of index.yaml and of
// relative chart URLs.
func repoBase(repository string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(repository, "/") + "/")
	if err != nil {
		return nil, invalid.Reasoned("chart.repository", "format", err, "not a URL: %q", repository)
	}
	return u, nil
}

func (s *httpSource) Versions(ctx context.Context, ref ChartRef) ([]Version, error) {
	p, err := s.poll(ctx, ref, PollState{})
	if err != nil {
		return nil, err
	}
	return p.Versions, nil
}

// poll reads the repository's index.yaml, conditionally when st holds validators: a 304 answer
// is Polled.NotModified, with the validators kept.
func (s *httpSource) poll(ctx context.Context, ref ChartRef, st PollState) (*Polled, error) {
	prev := st.Validators
	base, err := repoBase(ref.Repository)
	if err != nil {
		return nil, err
	}
	indexURL := base.ResolveReference(&url.URL{Path: "index.yaml"})
	ans, err := s.fetch(ctx, ref, indexURL.String(), s.maxIndexBytes, "chart.repository", "index.yaml", prev)
	if err != nil {
		return nil, err
	}
	if ans.notModified {
		return &Polled{NotModified: true, Validators: prev}, nil
	}
	vs, err := parseIndex(ans.body, base, indexURL, ref)
	if err != nil {
		return nil, err
	}
	return &Polled{Versions: vs, Validators: ans.validators}, nil
}

// parseIndex lists the versions of ref's chart in an index.yaml read from indexURL.
func parseIndex(body []byte, base, indexURL *url.URL, ref ChartRef) ([]Version, error) {
	var index repo.IndexFile
	if err := yaml.Unmarshal(body, &index); err != nil {
		return nil, invalid.Reasoned("chart.repository", "format", err, "%s is not a chart repository index: %v", indexURL.Redacted(), shortError(err))
	}
	if index.APIVersion == "" {
		return nil, invalid.Reasoned("chart.repository", "format", nil, "%s is not a chart repository index: no apiVersion", indexURL.Redacted())
	}
	entries := index.Entries[ref.Name]
	if len(entries) == 0 {
		return nil, invalid.Reasoned("chart.name", "notFound", nil, "chart %q is not in the repository %s", ref.Name, ref.Repository)
	}
	out := make([]Version, 0, len(entries))
	for _, cv := range entries {
		if cv == nil || cv.Metadata == nil || cv.Name != ref.Name || len(cv.URLs) == 0 {
			continue
		}
		v := Version{Version: cv.Version, AppVersion: cv.AppVersion}
		if cv.Digest != "" {
			v.Digest = "sha256:" + strings.TrimPrefix(cv.Digest, "sha256:")
		}
		loc, err := base.Parse(cv.URLs[0])
		if err != nil || (loc.Scheme != schemeHTTP && loc.Scheme != schemeHTTPS) {
			continue
		}
		v.location = loc.String()
		out = append(out, v)
	}
	return out, nil
}

func (s *httpSource) Archive(ctx context.Context, ref ChartRef, v Version) ([]byte, Version, error) {
	if v.location == "" {
		resolved, err := s.resolve(ctx, ref, v.Version)
		if err != nil {
			return nil, Version{}, err
		}
		v = resolved
	}
	body, err := s.get(ctx, ref, v.location, s.maxArchiveBytes, "version", "the chart archive")
	if err != nil {
		return nil, Version{}, err
	}
	if v.Digest != "" {
		sum := sha256.Sum256(body)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != v.Digest {
			return nil, Version{}, invalid.Reasoned("version", "digestMismatch", nil, "chart %s %s: the archive's digest %s is not the index's %s", ref.Name, v.Version, got, v.Digest)
		}
	}
	return body, v, nil
}

// resolve finds version in the repository's index (semver equality: "1.0" is "1.0.0").
func (s *httpSource) resolve(ctx context.Context, ref ChartRef, version string) (Version, error) {
	want, err := semver.NewVersion(version)
	if err != nil {
		return Version{}, invalid.Reasoned("version", "format", err, "%q is not a semver version", version)
	}
	listed, err := s.Versions(ctx, ref)
	if err != nil {
		return Version{}, err
	}
	for _, v := range listed {
		if got, err := semver.NewVersion(v.Version); err == nil && got.Equal(want) {
			return v, nil
		}
	}
	return Version{}, invalid.Reasoned("version", "notFound", nil, "chart %q has no version %s", ref.Name, version)
}

// get reads url's body up to limit bytes; failures are *invalid.Error for field.
func (s *httpSource) get(ctx context.Context, ref ChartRef, rawURL string, limit int64, field, what string) ([]byte, error) {
	ans, err := s.fetch(ctx, ref, rawURL, limit, field, what, Validators{})
	if err != nil {
		return nil, err
	}
	return ans.body, nil
}

// answer is what fetch read: the body and its validators, or that it did not change.
type answer struct {
	body        []byte
	validators  Validators
	notModified bool
}

// fetch is get, conditional when cond holds validators (If-None-Match, If-Modified-Since): a 304
// is an answer with notModified and no body.
func (s *httpSource) fetch(ctx context.Context, ref ChartRef, rawURL string, limit int64, field, what string, cond Validators) (*answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, invalid.Reasoned(field, "format", err, "bad URL for %s", what)
	}
	req.Header.Set("User-Agent", "slipway-manager")
	authorize(req, ref)
	if cond.ETag != "" {
		req.Header.Set("If-None-Match", cond.ETag)
	}
	if cond.LastModified != "" {
		req.Header.Set("If-Modified-Since", cond.LastModified)
	}
	shown := req.URL.Redacted()
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, unreachable(field, err, "fetching %s from %s: %s", what, shown, networkReason(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && !cond.empty():
		return &answer{notModified: true}, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, invalid.Reasoned(field, "unauthorized", nil, "fetching %s from %s: %s", what, shown, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return nil, invalid.Reasoned(field, "notFound", nil, "%s not found at %s", what, shown)
	case resp.StatusCode != http.StatusOK:
		return nil, unreachable(field, nil, "fetching %s from %s: %s", what, shown, resp.Status)
	}
	if resp.ContentLength > limit {
		return nil, invalid.Reasoned(field, "tooLarge", nil, "%s at %s is %d bytes, more than the limit of %d", what, shown, resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, unreachable(field, err, "reading %s from %s: %s", what, shown, networkReason(err))
	}
	if int64(len(body)) > limit {
		return nil, invalid.Reasoned(field, "tooLarge", nil, "%s at %s is larger than the limit of %d bytes", what, shown, limit)
	}
	return &answer{body: body, validators: Validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}}, nil
}

// networkReason says why a request failed without echoing internals beyond the usual words.
func networkReason(err error) string {
	var uerr *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.As(err, &uerr) && uerr.Timeout():
		return "timed out"
	case errors.As(err, &uerr):
		return shortError(uerr.Err)
	}
	return shortError(err)
}

// shortError is err's message cut to a length fit for a response.
func shortError(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}
