package access

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/registry"
	"github.com/slipway-dev/slipway/internal/selfsigned"
)

const password = "hunter2-very-secret"

func secretWith(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func testCA(t *testing.T) []byte {
	t.Helper()
	cert, _, err := selfsigned.Generate(time.Now(), "test CA", []string{"registry.example.dev"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

var spec = Spec{Namespace: "team", Repository: "registry.example.dev:5000/org/app", SecretRef: "creds", CertSecretRef: "ca",
	Insecure: true, UserAgent: "slipway-test"}

// TestFromSecrets_OptionsForTheClient: the Secrets' credentials and CA, the insecure flag and the
// user agent all reach the client options, and the credentials are looked up for the
// repository's host.
func TestFromSecrets_OptionsForTheClient(t *testing.T) {
	ca := testCA(t)
	creds := secretWith("creds", map[string]string{"username": "bot", "password": password})
	a, err := FromSecrets(spec, creds, secretWith("ca", map[string]string{KeyCA: string(ca)}))
	if err != nil {
		t.Fatal(err)
	}
	want := registry.Options{Credentials: registry.Credentials{Username: "bot", Password: password}, CACert: ca, Insecure: true, UserAgent: "slipway-test"}
	if a.Host != "registry.example.dev:5000" || Key(a.Options) != Key(want) || !bytes.Equal(a.Options.CACert, ca) {
		t.Errorf("access = host %q, options %v; want host registry.example.dev:5000 and %v", a.Host, a.Options, want)
	}
	anonymous, err := FromSecrets(Spec{Repository: "ghcr.io/org/app"}, nil, nil)
	if err != nil || !anonymous.Options.Credentials.IsAnonymous() || anonymous.Options.CACert != nil {
		t.Errorf("without Secrets: %+v, %v; want anonymous access with the system roots", anonymous, err)
	}
}

// TestFromSecrets_ErrorsNameSecretFieldAndKey: every unusable Secret is an ErrSecret whose message
// names the Secret, the field naming it and what is wrong, and never a value.
func TestFromSecrets_ErrorsNameSecretFieldAndKey(t *testing.T) {
	goodCA := secretWith("ca", map[string]string{KeyCA: string(testCA(t))})
	goodCreds := secretWith("creds", map[string]string{"username": "bot", "password": password})
	tests := map[string]struct {
		creds, ca *corev1.Secret
		want      []string
	}{
		"password missing": {secretWith("creds", map[string]string{"username": "bot"}), goodCA,
			[]string{FieldSecretRef, "team/creds", "missing key password"}},
		"no credentials keys": {secretWith("creds", map[string]string{"other": password}), goodCA,
			[]string{FieldSecretRef, "team/creds", ".dockerconfigjson"}},
		"no entry for the host": {secretWith("creds", map[string]string{corev1.DockerConfigJsonKey: `{"auths":{"ghcr.io":{"auth":"Ym90OnB3"}}}`}), goodCA,
			[]string{FieldSecretRef, "team/creds", "no auths entry for registry registry.example.dev:5000"}},
		"CA key missing": {goodCreds, secretWith("ca", map[string]string{"tls.crt": "x"}),
			[]string{FieldCertSecretRef, "team/ca", "has no key ca.crt"}},
		"CA key empty": {goodCreds, secretWith("ca", map[string]string{KeyCA: "\n"}),
			[]string{FieldCertSecretRef, "team/ca", "empty key ca.crt"}},
		"CA not PEM": {goodCreds, secretWith("ca", map[string]string{KeyCA: password}),
			[]string{FieldCertSecretRef, "team/ca", "no PEM certificate in key ca.crt"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := FromSecrets(spec, tt.creds, tt.ca)
			if !errors.Is(err, ErrSecret) {
				t.Fatalf("error = %v, want an ErrSecret", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("error %q shows a secret value", err)
			}
		})
	}
}

// TestUnusable_IsAnErrSecretNamingTheSecret: the error for other Secrets a controller reads
// (git credentials) reads like the registry ones and keeps its cause.
func TestUnusable_IsAnErrSecretNamingTheSecret(t *testing.T) {
	cause := errors.New("no key password")
	err := Unusable("team", "git", "spec.source.secretRef", cause)
	if !errors.Is(err, ErrSecret) || !errors.Is(err, cause) ||
		err.Error() != "Secret team/git named in spec.source.secretRef: no key password" {
		t.Errorf("Unusable = %q", err)
	}
}

// TestAccess_DockerConfigOnlyWithCredentials: anonymous access writes no docker config; with
// credentials the config is for the repository's host.
func TestAccess_DockerConfigOnlyWithCredentials(t *testing.T) {
	cfg, err := Access{Host: "ghcr.io"}.DockerConfig()
	if err != nil || cfg != nil {
		t.Errorf("anonymous: %s, %v; want no config", cfg, err)
	}
	a, err := FromSecrets(Spec{Repository: "ghcr.io/org/app", SecretRef: "creds"}, secretWith("creds", map[string]string{"token": password}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err = a.DockerConfig(); err != nil {
		t.Fatal(err)
	}
	back, err := registry.CredentialsFromSecret(&corev1.Secret{Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}, "ghcr.io")
	if err != nil || back.Username != "token" || back.Password != password {
		t.Errorf("the config reads back as %v, %v; want the token as the password of user token", back, err)
	}
}
