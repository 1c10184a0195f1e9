package operators

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/registry"
)

// ociSource reads charts stored as OCI artifacts (helm push): the tags of <host>/<path>/<chart>
// through internal/registry, each tag's manifest and config (Chart.yaml as JSON) for the digest
// and appVersion, and the chart layer for the archive, through go-containerregistry.
type ociSource struct {
	opts              Options
	base              registry.Options
	secure, plainHTTP *registry.Client
}

func newOCISource(opts Options) (*ociSource, error) {
	base := registry.Options{Timeout: opts.Timeout, MaxBodyBytes: opts.MaxIndexBytes, Transport: opts.Transport, UserAgent: "slipway-manager"}
	secure, err := registry.NewClient(base, nil)
	if err != nil {
		return nil, err
	}
	shared := base
	base.Insecure = true
	plain, err := registry.NewClient(base, nil)
	if err != nil {
		return nil, err
	}
	return &ociSource{opts: opts, base: shared, secure: secure, plainHTTP: plain}, nil
}

// repository is the OCI repository of ref: host/path/name, and whether it is plain HTTP.
func (s *ociSource) repository(ref ChartRef) (string, bool, error) {
	u, err := parseRepository(ref.Repository)
	if err != nil {
		return "", false, err
	}
	repo := u.Host + strings.TrimRight(u.Path, "/") + "/" + ref.Name
	return repo, isPlainHTTP(s.opts, u.Host), nil
}

// client is the registry client for ref: the shared anonymous one, or one holding ref's
// credentials (its token cache lives for this read).
func (s *ociSource) client(ref ChartRef, plain bool) (*registry.Client, error) {
	if ref.Auth.IsAnonymous() {
		if plain {
			return s.plainHTTP, nil
		}
		return s.secure, nil
	}
	o := s.base
	o.Insecure = plain
	o.Credentials = ref.Auth
	return registry.NewClient(o, nil)
}

func (s *ociSource) Versions(ctx context.Context, ref ChartRef) ([]Version, error) {
	return s.versions(ctx, ref, nil)
}

// poll lists the tags: an OCI registry has no conditional tag list, so only the tags not known
// cost more requests (their manifest and config).
func (s *ociSource) poll(ctx context.Context, ref ChartRef, st PollState) (*Polled, error) {
	vs, err := s.versions(ctx, ref, st.Known)
	if err != nil {
		return nil, err
	}
	return &Polled{Versions: vs}, nil
}

// versions lists the chart's tags as versions; a tag whose version is in known takes what known
// says of it (digest, appVersion) instead of reading its manifest and config.
func (s *ociSource) versions(ctx context.Context, ref ChartRef, known map[string]Version) ([]Version, error) {
	repo, plain, err := s.repository(ref)
	if err != nil {
		return nil, err
	}
	client, err := s.client(ref, plain)
	if err != nil {
		return nil, err
	}
	list, err := client.ListTags(ctx, repo, "")
	if err != nil {
		return nil, registryError(err, ref)
	}
	tags := list.Tags
	out := make([]Version, len(tags))
	errs := make([]error, len(tags))
	sem := make(chan struct{}, s.opts.OCIConcurrency)
	var wg sync.WaitGroup
	for i, tag := range tags {
		// Helm stores a version's "+" as "_" in the tag.
		out[i] = Version{Version: strings.ReplaceAll(tag, "_", "+"), location: repo + ":" + tag}
		if !looksLikeVersion(out[i].Version) {
			continue
		}
		if k, ok := known[out[i].Version]; ok && k.Digest != "" {
			out[i].Digest, out[i].AppVersion = k.Digest, k.AppVersion
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = s.describe(ctx, ref, plain, &out[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// looksLikeVersion is a cheap filter so tags such as "latest" cost no requests.
func looksLikeVersion(s string) bool { return s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == 'v') }

// describe reads v's manifest digest and its config's appVersion.
func (s *ociSource) describe(ctx context.Context, ref ChartRef, plain bool, v *Version) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	img, err := s.image(ctx, ref, plain, v.location)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return registryError(err, ref)
	}
	v.Digest = digest.String()
	cfg, err := img.RawConfigFile()
	if err != nil {
		return registryError(err, ref)
	}
	v.AppVersion = appVersion(cfg)
	return nil
}

func (s *ociSource) image(ctx context.Context, ref ChartRef, plain bool, location string) (v1.Image, error) {
	opts := []name.Option{name.StrictValidation}
	if plain {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(location, opts...)
	if err != nil {
		return nil, invalid.Reasoned("chart.repository", "format", err, "%s is not an OCI reference", location)
	}
	img, err := remote.Image(tag, remote.WithContext(ctx), remote.WithAuth(ref.Auth.Authenticator()),
		remote.WithTransport(s.opts.Transport), remote.WithUserAgent("slipway-manager"))
	if err != nil {
		return nil, registryError(err, ref)
	}
	return img, nil
}

func (s *ociSource) Archive(ctx context.Context, ref ChartRef, v Version) ([]byte, Version, error) {
	repo, plain, err := s.repository(ref)
	if err != nil {
		return nil, Version{}, err
	}
	if v.location == "" {
		v.location = repo + ":" + strings.ReplaceAll(v.Version, "+", "_")
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	img, err := s.image(ctx, ref, plain, v.location)
	if err != nil {
		if e, ok := invalid.As(err); ok && e.Reason == "notFound" {
			return nil, Version{}, invalid.Reasoned("version", "notFound", err, "chart %q has no version %s", ref.Name, v.Version)
		}
		return nil, Version{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, Version{}, registryError(err, ref)
	}
	if v.Digest != "" && digest.String() != v.Digest {
		return nil, Version{}, invalid.Reasoned("version", "digestMismatch", nil, "chart %s %s: the tag moved from %s to %s", ref.Name, v.Version, v.Digest, digest)
	}
	v.Digest = digest.String()
	manifest, err := img.Manifest()
	if err != nil {
		return nil, Version{}, registryError(err, ref)
	}
	for _, l := range manifest.Layers {
		if l.MediaType != registry.HelmChartLayerMediaType {
			continue
		}
		body, err := s.readLayer(img, l, ref, v)
		if err != nil {
			return nil, Version{}, err
		}
		if v.AppVersion == "" {
			if cfg, err := img.RawConfigFile(); err == nil {
				v.AppVersion = appVersion(cfg)
			}
		}
		return body, v, nil
	}
	return nil, Version{}, invalid.Reasoned("version", "notFound", nil, "%s is not a Helm chart: no layer of type %s", v.location, registry.HelmChartLayerMediaType)
}

// readLayer reads the chart layer l of img, refusing one over the archive limit.
func (s *ociSource) readLayer(img v1.Image, l v1.Descriptor, ref ChartRef, v Version) ([]byte, error) {
	if l.Size > s.opts.MaxArchiveBytes {
		return nil, invalid.Reasoned("version", "tooLarge", nil, "chart %s %s is %d bytes, more than the limit of %d", ref.Name, v.Version, l.Size, s.opts.MaxArchiveBytes)
	}
	layer, err := img.LayerByDigest(l.Digest)
	if err != nil {
		return nil, registryError(err, ref)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, registryError(err, ref)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, s.opts.MaxArchiveBytes+1))
	if err != nil {
		return nil, registryError(err, ref)
	}
	if int64(len(body)) > s.opts.MaxArchiveBytes {
		return nil, invalid.Reasoned("version", "tooLarge", nil, "chart %s %s is larger than the limit of %d bytes", ref.Name, v.Version, s.opts.MaxArchiveBytes)
	}
	return body, nil
}

// appVersion reads appVersion from a chart's OCI config (Chart.yaml as JSON).
func appVersion(config []byte) string {
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(config, &meta); err != nil {
		return ""
	}
	return meta.AppVersion
}

// registryError maps a registry failure to *invalid.Error: an unknown repository is an unknown
// chart, 401/403 unauthorized, anything else unreachable.
func registryError(err error, ref ChartRef) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	status, code := 0, ""
	var rerr *registry.Error
	var terr *transport.Error
	switch {
	case errors.As(err, &rerr):
		status, code = rerr.StatusCode, rerr.Code
	case errors.As(err, &terr):
		status = terr.StatusCode
		if len(terr.Errors) > 0 {
			code = string(terr.Errors[0].Code)
		}
	}
	switch {
	case status == http.StatusNotFound || code == "NAME_UNKNOWN" || code == "MANIFEST_UNKNOWN":
		return invalid.Reasoned("chart.name", "notFound", err, "chart %q is not in %s", ref.Name, ref.Repository)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return invalid.Reasoned("chart.repository", "unauthorized", err, "the registry of %s refused access (%d)", ref.Repository, status)
	case status != 0:
		return invalid.Reasoned("chart.repository", "unreachable", err, "the registry of %s answered %d", ref.Repository, status)
	}
	return invalid.Reasoned("chart.repository", "unreachable", err, "the registry of %s is unreachable: %s", ref.Repository, networkReason(err))
}
