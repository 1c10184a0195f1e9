package werfbundle

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/registry"
)

// Keys of the per-Job Secret.
const (
	secretKeyValues = "values.yaml"
	secretKeyDocker = "config.json"
	secretKeyCA     = "ca.crt"
)

// tokenUsername goes with a token-only credential, as the registry client does.
const tokenUsername = "token"

// errCredentials marks a registry Secret that is missing or unusable.
var errCredentials = errors.New("registry credentials")

// registryAccess is what a bundle needs to reach its registry.
type registryAccess struct {
	opts registry.Options
	host string
}

// access returns the bundle's registry settings, read once per reconcile: the poll and the Job's
// Secret use the same read.
func (r *Reconciler) access(ctx context.Context, s *scope) (registryAccess, error) {
	if s.access == nil {
		a, err := r.readAccess(ctx, s.bundle)
		s.access = &accessResult{a, err}
	}
	return s.access.access, s.access.err
}

type accessResult struct {
	access registryAccess
	err    error
}

// readAccess reads the bundle's registry Secret and CA Secret (uncached) into client options.
func (r *Reconciler) readAccess(ctx context.Context, b *werfv1.WerfBundle) (registryAccess, error) {
	host := strings.SplitN(b.Spec.Registry.URL, "/", 2)[0]
	a := registryAccess{host: host, opts: registry.Options{Insecure: b.Spec.Registry.Insecure, UserAgent: "slipway-werfbundle"}}
	if ref := b.Spec.Registry.SecretRef; ref != nil {
		secret, err := r.readSecret(ctx, b.Namespace, ref.Name, "spec.registry.secretRef")
		if err != nil {
			return a, err
		}
		creds, err := registry.CredentialsFromSecret(secret, host)
		if err != nil {
			return a, fmt.Errorf("%w: %w", errCredentials, err)
		}
		a.opts.Credentials = creds
	}
	if ref := b.Spec.Registry.CertSecretRef; ref != nil {
		secret, err := r.readSecret(ctx, b.Namespace, ref.Name, "spec.registry.certSecretRef")
		if err != nil {
			return a, err
		}
		ca := secret.Data["ca.crt"]
		if len(ca) == 0 {
			return a, fmt.Errorf("%w: Secret %s/%s has no ca.crt key", errCredentials, b.Namespace, ref.Name)
		}
		a.opts.CACert = ca
	}
	return a, nil
}

func (r *Reconciler) readSecret(ctx context.Context, ns, name, field string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s/%s named in %s does not exist", errCredentials, ns, name, field)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	return secret, nil
}

// registryClient returns a client for the bundle, shared by bundles with the same settings so
// connections and bearer tokens are reused.
func (r *Reconciler) registryClient(ctx context.Context, s *scope) (TagLister, error) {
	a, err := r.access(ctx, s)
	if err != nil {
		return nil, err
	}
	key := clientKey(a.opts)
	r.clientsMu.Lock()
	defer r.clientsMu.Unlock()
	if c, ok := r.clients[key]; ok {
		return c, nil
	}
	c, err := r.Registry(a.opts, r.Limiter)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCredentials, err)
	}
	if r.clients == nil || len(r.clients) >= maxCachedClients {
		r.clients = map[string]TagLister{}
	}
	r.clients[key] = c
	return c, nil
}

const maxCachedClients = 256

// clientKey identifies client options without keeping secrets in memory as map keys.
func clientKey(o registry.Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%t\x00%s\x00%s\x00%s\x00", o.Insecure, o.Credentials.Username, o.Credentials.Password, o.Credentials.Token)
	h.Write(o.CACert)
	return hex.EncodeToString(h.Sum(nil))
}

type clientCache struct {
	clientsMu sync.Mutex
	clients   map[string]TagLister
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
	if c := a.opts.Credentials; !c.IsAnonymous() {
		cfg, err := dockerConfig(a.host, c)
		if err != nil {
			return nil, err
		}
		data[secretKeyDocker] = cfg
	}
	if len(a.opts.CACert) > 0 {
		data[secretKeyCA] = a.opts.CACert
	}
	return data, nil
}

// dockerConfig renders credentials as a docker config.json for werf's --docker-config.
func dockerConfig(host string, c registry.Credentials) ([]byte, error) {
	user, pass := c.Username, c.Password
	if c.Token != "" {
		pass = c.Token
		if user == "" {
			user = tokenUsername
		}
	}
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
}
