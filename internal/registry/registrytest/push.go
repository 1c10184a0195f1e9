package registrytest

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/slipway-dev/slipway/internal/registry"
)

// ChartFiles and MinimalChart are registry's, re-exported for test code.
type ChartFiles = registry.ChartFiles

// MinimalChart returns a chart named name at version (see registry.MinimalChart).
func MinimalChart(name, version string) ChartFiles { return registry.MinimalChart(name, version) }

const defaultPushTimeout = time.Minute

// PushOption configures PushChart.
type PushOption func(*pushConfig)

type pushConfig struct {
	auth authn.Authenticator
}

// WithPushAuth pushes with Basic credentials (or, for a token-auth registry, exchanges them).
func WithPushAuth(username, password string) PushOption {
	return func(c *pushConfig) { c.auth = &authn.Basic{Username: username, Password: password} }
}

// PushChart pushes files as an OCI Helm chart artifact to host/repo:tag over plain HTTP and
// returns the manifest digest (see registry.PushChart).
func PushChart(t testing.TB, host, repo, tag string, files ChartFiles, opts ...PushOption) v1.Hash {
	t.Helper()
	cfg := pushConfig{auth: authn.Anonymous}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultPushTimeout)
	defer cancel()
	digest, err := registry.PushChart(ctx, host+"/"+repo+":"+tag, files, true, cfg.auth)
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	return digest
}

// PushBundle pushes a werf bundle, which is a Helm chart artifact, to host/repo:tag: a minimal
// chart named after the repository's last path element with version tag.
func PushBundle(t testing.TB, host, repo, tag string, opts ...PushOption) v1.Hash {
	t.Helper()
	return PushChart(t, host, repo, tag, MinimalChart(path.Base(repo), tag), opts...)
}
