package operators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// Defaults of Options' zero values.
const (
	DefaultTimeout         = 30 * time.Second
	DefaultMaxIndexBytes   = 20 << 20
	DefaultMaxArchiveBytes = 20 << 20
	DefaultOCIConcurrency  = 4
)

// Options configure Charts. The zero value talks HTTPS to OCI registries, anonymously, with the
// defaults above.
type Options struct {
	// Timeout bounds each request to a chart source, including reading its body.
	Timeout time.Duration
	// MaxIndexBytes caps an index.yaml; a larger one is an error.
	MaxIndexBytes int64
	// MaxArchiveBytes caps a chart archive (.tgz or OCI chart layer).
	MaxArchiveBytes int64
	// PlainHTTPRegistries lists OCI registry hosts (host:port) spoken to over plain HTTP, as a
	// local development registry is. Every other registry is HTTPS.
	PlainHTTPRegistries []string
	// OCIConcurrency bounds the manifest and config reads of one OCI discovery.
	OCIConcurrency int
	// Transport is the HTTP transport under every request; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// Source is one kind of chart source.
type Source interface {
	// Versions lists every version of the chart the source holds, in any order; names that
	// are not semver are left out by the caller.
	Versions(ctx context.Context, ref ChartRef) ([]Version, error)
	// Archive returns the chart archive (.tgz) of version v (one Versions listed, or just a
	// version string) and what the source says of that version. An unknown version is
	// *invalid.Error for field "version" with reason notFound.
	Archive(ctx context.Context, ref ChartRef, v Version) ([]byte, Version, error)
}

// Charts discovers and fetches operator charts from HTTP chart repositories and OCI registries.
// It is safe for concurrent use.
type Charts struct {
	opts Options
	http Source
	oci  Source
}

// New returns Charts with opts.
func New(opts Options) (*Charts, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxIndexBytes <= 0 {
		opts.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if opts.MaxArchiveBytes <= 0 {
		opts.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if opts.OCIConcurrency <= 0 {
		opts.OCIConcurrency = DefaultOCIConcurrency
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	oci, err := newOCISource(opts)
	if err != nil {
		return nil, err
	}
	return &Charts{opts: opts, http: newHTTPSource(opts), oci: oci}, nil
}

func (c *Charts) source(ref ChartRef) (Source, error) {
	if err := ValidateRef(ref); err != nil {
		return nil, err
	}
	if strings.HasPrefix(ref.Repository, schemeOCI+"://") {
		return c.oci, nil
	}
	return c.http, nil
}

// Discover returns every semver version of the chart, newest first, narrowed by filter (a
// Masterminds semver constraint; "" keeps all). It is the check before registration: a bad
// repository URL, an unreachable source, an unknown chart, a chart without a semver version or a
// filter that keeps none is *invalid.Error (fields chart.repository, chart.name, versions).
func (c *Charts) Discover(ctx context.Context, ref ChartRef, filter string) ([]Version, error) {
	if _, err := ParseFilter(filter); err != nil {
		return nil, err
	}
	src, err := c.source(ref)
	if err != nil {
		return nil, err
	}
	listed, err := src.Versions(ctx, ref)
	if err != nil {
		return nil, err
	}
	all := semverNewestFirst(listed)
	if len(all) == 0 {
		return nil, invalid.Reasoned("chart.name", "noVersions", nil, "chart %q in %s has no semver version", ref.Name, ref.Repository)
	}
	out, err := FilterVersions(all, filter)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, invalid.Reasoned("versions", "noMatch", nil, "no version of chart %q matches %q (newest is %s)", ref.Name, filter, all[0].Version)
	}
	return out, nil
}

// Chart is one fetched chart version: its archive as the source served it and the loaded chart.
type Chart struct {
	Version Version
	Archive []byte
	Chart   *chart.Chart
}

// Fetch downloads and loads one version of the chart, asking the source for that version only
// (an HTTP repository's index entry, an OCI tag). A version that is not semver is
// *invalid.Error for field "version" with reason format, an unknown one with reason notFound; a
// source failure is reported like Discover's. Part 2 installs what it returns.
func (c *Charts) Fetch(ctx context.Context, ref ChartRef, version string) (*Chart, error) {
	if _, err := semver.NewVersion(version); err != nil {
		return nil, invalid.Reasoned("version", "format", err, "%q is not a semver version", version)
	}
	return c.FetchVersion(ctx, ref, Version{Version: version})
}

// FetchVersion is Fetch of a version as Discover returned it (or as stored: only Version is
// needed). The returned Chart's Version has what the source said of it (digest, appVersion).
func (c *Charts) FetchVersion(ctx context.Context, ref ChartRef, v Version) (*Chart, error) {
	src, err := c.source(ref)
	if err != nil {
		return nil, err
	}
	archive, resolved, err := src.Archive(ctx, ref, v)
	if err != nil {
		return nil, err
	}
	ch, err := LoadArchive(archive)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s from %s: %w", ref.Name, v.Version, ref.Repository, err)
	}
	if ch.Metadata.Name != ref.Name {
		return nil, fmt.Errorf("chart %s %s from %s: the archive holds chart %q", ref.Name, v.Version, ref.Repository, ch.Metadata.Name)
	}
	return &Chart{Version: resolved, Archive: archive, Chart: ch}, nil
}

// LoadArchive loads a chart archive (.tgz) with Helm's loader.
func LoadArchive(archive []byte) (*chart.Chart, error) {
	ch, err := chartloader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("loading the chart archive: %w", err)
	}
	return ch, nil
}

// unreachable is *invalid.Error with reason unreachable for field, keeping the cause for logs;
// a cancelled context stays what it is.
func unreachable(field string, cause error, format string, args ...any) error {
	if errors.Is(cause, context.Canceled) {
		return cause
	}
	return invalid.Reasoned(field, "unreachable", cause, format, args...)
}

func isPlainHTTP(opts Options, host string) bool {
	for _, h := range opts.PlainHTTPRegistries {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}
