package access

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/registry"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// TestCache_CAOrCredentialChangeGivesAFreshClient runs the real distribution registry over TLS
// with its own CA and htpasswd, and reads Secrets as a controller does: after the CA Secret or
// the credentials Secret changes, the cache serves a new client with the new settings (a client
// kept from before would still succeed, so the refused requests prove it is new); going back to
// the first settings is served the first client again.
func TestCache_CAOrCredentialChangeGivesAFreshClient(t *testing.T) {
	reg := registrytest.StartDistribution(t, registrytest.WithTLS(), registrytest.WithBasicAuth("bot", password))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := Spec{Namespace: "team", Repository: reg.Repository("org/app"), SecretRef: "creds", CertSecretRef: "ca", UserAgent: "slipway-test"}
	var cache Cache[*registry.Client]
	limiter := registry.NewLimiter(4)
	ask := func(creds, ca map[string]string) (*registry.Client, error) {
		t.Helper()
		a, err := FromSecrets(s, secretWith("creds", creds), secretWith("ca", ca))
		if err != nil {
			t.Fatal(err)
		}
		c, err := cache.Get(a.Options, limiter, registry.NewClient)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ManifestExists(ctx, reg.Repository("org/app:1.0.0"))
		return c, err
	}
	right := map[string]string{"username": "bot", "password": password}
	wrong := map[string]string{"username": "bot", "password": "not-" + password}
	rightCA := map[string]string{KeyCA: string(reg.CACert)}
	otherCA := map[string]string{KeyCA: string(testCA(t))}

	first, err := ask(right, rightCA)
	if err != nil {
		t.Fatalf("with the registry's CA and the right password: %v", err)
	}
	afterCA, err := ask(right, otherCA)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("after the CA changed: error = %v, want the registry's certificate refused", err)
	}
	afterPassword, err := ask(wrong, rightCA)
	if !registry.IsAuth(err) {
		t.Errorf("after the password changed: error = %v, want the registry to refuse it", err)
	}
	again, err := ask(right, rightCA)
	if err != nil {
		t.Errorf("back to the first settings: %v", err)
	}
	if afterCA == first || afterPassword == first || afterPassword == afterCA || again != first {
		t.Errorf("clients: first %p, after the CA change %p, after the password change %p, back %p; want three distinct, the last the first",
			first, afterCA, afterPassword, again)
	}
}
