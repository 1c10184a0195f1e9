package catalyst

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/registry"
)

// ManifestChecker asks a registry whether an image exists; *registry.Client is the production one.
type ManifestChecker interface {
	ManifestExists(ctx context.Context, reference string) (bool, error)
}

// RegistryFactory makes a ManifestChecker for one set of registry settings.
type RegistryFactory func(opts registry.Options, limiter *registry.Limiter) (ManifestChecker, error)

// errSecret marks a referenced Secret that is missing or unusable: a human must fix it.
var errSecret = errors.New("secret")

// readSecret reads a Secret through the API server (Secrets are not cached).
func readSecret(ctx context.Context, c client.Reader, ns, name, field string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s/%s named in %s does not exist", errSecret, ns, name, field)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	return secret, nil
}

// registryHost is the host[:port] of an image repository.
func registryHost(repository string) string {
	return strings.SplitN(repository, "/", 2)[0]
}

// registryOptions reads the Project's registry credentials (uncached) into client options.
func registryOptions(ctx context.Context, c client.Reader, project *catalystv1alpha1.Project) (registry.Options, error) {
	spec := project.Spec.Registry
	opts := registry.Options{Insecure: spec.Insecure, UserAgent: "slipway-catalyst"}
	if spec.SecretRef == nil {
		return opts, nil
	}
	secret, err := readSecret(ctx, c, project.Namespace, spec.SecretRef.Name, "spec.registry.secretRef")
	if err != nil {
		return opts, err
	}
	creds, err := registry.CredentialsFromSecret(secret, registryHost(spec.Repository))
	if err != nil {
		return opts, fmt.Errorf("%w: %w", errSecret, err)
	}
	opts.Credentials = creds
	return opts, nil
}

// clientCache shares registry clients between environments with the same settings, so
// connections and bearer tokens are reused.
type clientCache struct {
	mu      sync.Mutex
	clients map[string]ManifestChecker
}

const maxCachedClients = 256

func (c *clientCache) get(opts registry.Options, limiter *registry.Limiter, make RegistryFactory) (ManifestChecker, error) {
	key := clientKey(opts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.clients[key]; ok {
		return m, nil
	}
	m, err := make(opts, limiter)
	if err != nil {
		return nil, err
	}
	if c.clients == nil || len(c.clients) >= maxCachedClients {
		c.clients = map[string]ManifestChecker{}
	}
	c.clients[key] = m
	return m, nil
}

// clientKey identifies client options without keeping secrets in memory as map keys.
func clientKey(o registry.Options) string {
	h := sha256.New()
	fmt.Fprintf(h, "%t\x00%s\x00%s\x00%s\x00", o.Insecure, o.Credentials.Username, o.Credentials.Password, o.Credentials.Token)
	return hex.EncodeToString(h.Sum(nil))
}

// dockerConfigJSON renders registry credentials as a docker config.json, for build Jobs and the
// image pull Secret.
func dockerConfigJSON(host string, c registry.Credentials) ([]byte, error) {
	user, pass := c.Username, c.Password
	if c.Token != "" {
		pass = c.Token
		if user == "" {
			user = "token"
		}
	}
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
}
