package werfbundle

import (
	"context"
	"errors"
	"fmt"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/registry/access"
)

// Keys of the per-Job Secret.
const (
	secretKeyValues = "values.yaml"
	secretKeyDocker = "config.json"
	secretKeyCA     = access.KeyCA
)

// errCredentials marks a registry Secret that is missing or unusable.
var errCredentials = access.ErrSecret

// access returns the bundle's registry settings, read once per reconcile: the poll and the Job's
// Secret use the same read.
func (r *Reconciler) access(ctx context.Context, s *scope) (access.Access, error) {
	if s.access == nil {
		a, err := access.Read(ctx, r.APIReader, accessSpec(s.bundle))
		s.access = &accessResult{a, err}
	}
	return s.access.access, s.access.err
}

type accessResult struct {
	access access.Access
	err    error
}

// accessSpec is what the bundle says about its registry.
func accessSpec(b *werfv1.WerfBundle) access.Spec {
	s := access.Spec{Namespace: b.Namespace, Repository: b.Spec.Registry.URL, Insecure: b.Spec.Registry.Insecure, UserAgent: "slipway-werfbundle"}
	if ref := b.Spec.Registry.SecretRef; ref != nil {
		s.SecretRef = ref.Name
	}
	if ref := b.Spec.Registry.CertSecretRef; ref != nil {
		s.CertSecretRef = ref.Name
	}
	return s
}

// registryClient returns a client for the bundle, shared by bundles with the same settings so
// connections and bearer tokens are reused.
func (r *Reconciler) registryClient(ctx context.Context, s *scope) (TagLister, error) {
	a, err := r.access(ctx, s)
	if err != nil {
		return nil, err
	}
	c, err := r.clients.Get(a.Options, r.Limiter, access.Factory[TagLister](r.Registry))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCredentials, err)
	}
	return c, nil
}

type clientCache struct {
	clients access.Cache[TagLister]
}

// jobSecretData is the content of a Job's Secret: merged values, a docker config.json for the
// registry credentials and the CA. Returns nil data (and records a failure) when the registry
// Secret is unusable.
func (r *Reconciler) jobSecretData(ctx context.Context, s *scope) (map[string][]byte, error) {
	a, err := r.access(ctx, s)
	if err != nil {
		if errors.Is(err, errCredentials) {
			s.fail(&failure{reason: ReasonCredentialsInvalid, message: err.Error(), stalled: true})
			return nil, nil
		}
		return nil, err
	}
	data := map[string][]byte{}
	if len(s.valuesYAML) > 0 {
		data[secretKeyValues] = s.valuesYAML
	}
	cfg, err := a.DockerConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		data[secretKeyDocker] = cfg
	}
	if len(a.Options.CACert) > 0 {
		data[secretKeyCA] = a.Options.CACert
	}
	return data, nil
}
