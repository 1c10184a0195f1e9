package access

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/registry"
)

// The fields of a WerfBundle and of a Catalyst Project that name registry Secrets, for errors.
const (
	FieldSecretRef     = "spec.registry.secretRef"
	FieldCertSecretRef = "spec.registry.certSecretRef"
)

// KeyCA is the key of the CA Secret that holds the PEM bundle.
const KeyCA = "ca.crt"

// Spec is what an object says about its registry.
type Spec struct {
	// Namespace is the object's, where the Secrets it names are.
	Namespace string
	// Repository is host[:port]/path, without a scheme.
	Repository string
	// SecretRef names the credentials Secret (FieldSecretRef); empty means anonymous.
	SecretRef string
	// CertSecretRef names the Secret whose KeyCA holds extra CAs (FieldCertSecretRef); empty
	// means the system roots.
	CertSecretRef string
	// Insecure and UserAgent go into the Options as they are.
	Insecure  bool
	UserAgent string
}

// Access is what reaches one registry: the client options and the host the credentials are for.
type Access struct {
	Host    string
	Options registry.Options
}

// Host is the host[:port] of a repository.
func Host(repository string) string {
	return strings.SplitN(repository, "/", 2)[0]
}

// Read reads the Secrets spec names (uncached) into an Access. Errors about the Secrets match
// ErrSecret.
func Read(ctx context.Context, reader client.Reader, spec Spec) (Access, error) {
	var creds, ca *corev1.Secret
	var err error
	if spec.SecretRef != "" {
		if creds, err = ReadSecret(ctx, reader, spec.Namespace, spec.SecretRef, FieldSecretRef); err != nil {
			return Access{}, err
		}
	}
	if spec.CertSecretRef != "" {
		if ca, err = ReadSecret(ctx, reader, spec.Namespace, spec.CertSecretRef, FieldCertSecretRef); err != nil {
			return Access{}, err
		}
	}
	return FromSecrets(spec, creds, ca)
}

// FromSecrets makes the Access for spec from the Secrets it names, as read (nil for a Secret it
// does not name).
func FromSecrets(spec Spec, creds, ca *corev1.Secret) (Access, error) {
	a := Access{Host: Host(spec.Repository), Options: registry.Options{Insecure: spec.Insecure, UserAgent: spec.UserAgent}}
	if creds != nil {
		c, err := registry.CredentialsFromSecret(creds, a.Host)
		if err != nil {
			return Access{}, Invalid(FieldSecretRef, err)
		}
		a.Options.Credentials = c
	}
	if ca != nil {
		pem, err := caBundle(ca)
		if err != nil {
			return Access{}, err
		}
		a.Options.CACert = pem
	}
	return a, nil
}

// caBundle is the CA Secret's KeyCA, checked to hold a certificate: a CA that cannot be used is
// the Secret's fault, said with its name, not a client error later.
func caBundle(s *corev1.Secret) ([]byte, error) {
	pem, ok := s.Data[KeyCA]
	var problem string
	switch {
	case !ok:
		problem = "has no key " + KeyCA
	case len(strings.TrimSpace(string(pem))) == 0:
		problem = "has an empty key " + KeyCA
	case !x509.NewCertPool().AppendCertsFromPEM(pem):
		problem = "holds no PEM certificate in key " + KeyCA
	default:
		return pem, nil
	}
	return nil, &SecretError{msg: fmt.Sprintf("Secret %s/%s named in %s %s", s.Namespace, s.Name, FieldCertSecretRef, problem)}
}

// DockerConfig is the credentials as a docker config.json for the registry's host, or nil for
// anonymous access.
func (a Access) DockerConfig() ([]byte, error) {
	if a.Options.Credentials.IsAnonymous() {
		return nil, nil
	}
	return registry.DockerConfigJSON(a.Host, a.Options.Credentials)
}
