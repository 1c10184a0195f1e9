package registry

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const secretValue = "hunter2-very-secret"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// secret builds a test Secret from functional options.
func secret(opts ...func(*corev1.Secret)) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds"}, Data: map[string][]byte{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func withKey(k, v string) func(*corev1.Secret) {
	return func(s *corev1.Secret) { s.Data[k] = []byte(v) }
}

func dockerConfig(json string) func(*corev1.Secret) {
	return func(s *corev1.Secret) {
		s.Type = corev1.SecretTypeDockerConfigJson
		s.Data[corev1.DockerConfigJsonKey] = []byte(json)
	}
}

func TestCredentialsFromSecret(t *testing.T) {
	auth := b64("robot:" + secretValue)
	tests := map[string]struct {
		secret  *corev1.Secret
		host    string
		want    Credentials
		wantErr string
	}{
		"docker config, auth field": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"auth":"` + auth + `"}}}`)),
			host:   "ghcr.io", want: Credentials{Username: "robot", Password: secretValue},
		},
		"docker config, username and password": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"username":"robot","password":"` + secretValue + `"}}}`)),
			host:   "ghcr.io", want: Credentials{Username: "robot", Password: secretValue},
		},
		"docker config, https key with path": {
			secret: secret(dockerConfig(`{"auths":{"https://registry.example.com:5000/v2/":{"auth":"` + auth + `"}}}`)),
			host:   "registry.example.com:5000", want: Credentials{Username: "robot", Password: secretValue},
		},
		"docker config, host given as a repository": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"auth":"` + auth + `"}}}`)),
			host:   "ghcr.io/org/bundle", want: Credentials{Username: "robot", Password: secretValue},
		},
		"docker config, docker hub alias": {
			secret: secret(dockerConfig(`{"auths":{"https://index.docker.io/v1/":{"auth":"` + auth + `"}}}`)),
			host:   "docker.io", want: Credentials{Username: "robot", Password: secretValue},
		},
		"docker config, case and padding": {
			secret: secret(dockerConfig(`{"auths":{"GHCR.IO":{"auth":"` + strings.TrimRight(auth, "=") + `"}}}`)),
			host:   "ghcr.io", want: Credentials{Username: "robot", Password: secretValue},
		},
		"docker config, exact key preferred": {
			secret: secret(dockerConfig(`{"auths":{"https://ghcr.io":{"auth":"` + b64("other:x") + `"},"ghcr.io":{"auth":"` + auth + `"}}}`)),
			host:   "ghcr.io", want: Credentials{Username: "robot", Password: secretValue},
		},
		"docker config without type": {
			secret: secret(withKey(corev1.DockerConfigJsonKey, `{"auths":{"ghcr.io":{"auth":"`+auth+`"}}}`)),
			host:   "ghcr.io", want: Credentials{Username: "robot", Password: secretValue},
		},
		"legacy dockercfg": {
			secret: secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeDockercfg }, withKey(corev1.DockerConfigKey, `{"quay.io":{"auth":"`+auth+`"}}`)),
			host:   "quay.io", want: Credentials{Username: "robot", Password: secretValue},
		},
		"username and password": {
			secret: secret(withKey("username", "robot\n"), withKey("password", secretValue+"\n")),
			want:   Credentials{Username: "robot", Password: secretValue},
		},
		"token": {
			secret: secret(withKey("token", secretValue)),
			want:   Credentials{Token: secretValue},
		},
		"token with username": {
			secret: secret(withKey("token", secretValue), withKey("username", "robot")),
			want:   Credentials{Username: "robot", Token: secretValue},
		},
		"string data": {
			secret: secret(func(s *corev1.Secret) { s.StringData = map[string]string{"token": secretValue} }),
			want:   Credentials{Token: secretValue},
		},
		"nil secret":       {secret: nil, wantErr: "no Secret given"},
		"no known keys":    {secret: secret(withKey("ca.crt", "x")), wantErr: "Secret team/creds has none of the keys"},
		"missing password": {secret: secret(withKey("username", "robot")), wantErr: "Secret team/creds is missing key password"},
		"missing username": {secret: secret(withKey("password", secretValue)), wantErr: "Secret team/creds is missing key username"},
		"empty token":      {secret: secret(withKey("token", " ")), wantErr: "Secret team/creds has an empty key token"},
		"token and password": {
			secret: secret(withKey("token", secretValue), withKey("password", secretValue)), wantErr: "has both keys token and password",
		},
		"docker config type without key": {
			secret: secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeDockerConfigJson }), wantErr: "is missing key .dockerconfigjson",
		},
		"docker config, not JSON": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"auth":` + secretValue + `}}}`)), host: "ghcr.io",
			wantErr: "key .dockerconfigjson is not a valid docker config: syntax error at byte offset",
		},
		"docker config, wrong type": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"auth":12}}}`)), host: "ghcr.io",
			wantErr: "not a valid docker config: unexpected number",
		},
		"docker config, no entry for host": {
			secret: secret(dockerConfig(`{"auths":{"quay.io":{"auth":"` + auth + `"}}}`)), host: "ghcr.io",
			wantErr: ".dockerconfigjson has no auths entry for registry ghcr.io",
		},
		"docker config, no host given": {
			secret: secret(dockerConfig(`{"auths":{}}`)), wantErr: "no registry host given",
		},
		"docker config, auth not base64": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"auth":"%%%` + secretValue + `"}}}`)), host: "ghcr.io",
			wantErr: "field auth is not valid base64",
		},
		"docker config, auth without colon": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"auth":"` + b64(secretValue) + `"}}}`)), host: "ghcr.io",
			wantErr: `field auth is not of the form base64("username:password")`,
		},
		"docker config, entry without credentials": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"identitytoken":"` + secretValue + `"}}}`)), host: "ghcr.io",
			wantErr: "has neither field auth nor fields username and password",
		},
		"docker config, entry without password": {
			secret: secret(dockerConfig(`{"auths":{"ghcr.io":{"username":"robot"}}}`)), host: "ghcr.io",
			wantErr: "is missing field password",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := CredentialsFromSecret(tt.secret, tt.host)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secretValue) || strings.Contains(err.Error(), "hunter") {
					t.Errorf("error %q reveals the secret", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CredentialsFromSecret: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCredentials_PrintingHidesSecrets(t *testing.T) {
	for _, c := range []Credentials{{Username: "u", Password: secretValue}, {Token: secretValue}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			if out := fmt.Sprintf(verb, c); strings.Contains(out, secretValue) {
				t.Errorf("%s of %s reveals the secret: %s", verb, c, out)
			}
		}
	}
}

// TestCredentials_Authenticator checks what go-containerregistry is given for each form: nothing
// for anonymous, Basic for a user and password, and a token as the password under the user given
// or "token" (the user name registries that take a token accept).
func TestCredentials_Authenticator(t *testing.T) {
	for _, tc := range []struct {
		name       string
		c          Credentials
		user, pass string
	}{
		{name: "anonymous"},
		{name: "user and password", c: Credentials{Username: "ci", Password: "pw"}, user: "ci", pass: "pw"},
		{name: "token alone", c: Credentials{Token: "tk"}, user: "token", pass: "tk"},
		{name: "token with a user", c: Credentials{Username: "robot$ci", Token: "tk"}, user: "robot$ci", pass: "tk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.Authenticator().Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if got.Username != tc.user || got.Password != tc.pass || got.Auth != "" || got.RegistryToken != "" {
				t.Errorf("authorization %+v, want user %q password %q", got, tc.user, tc.pass)
			}
		})
	}
}
