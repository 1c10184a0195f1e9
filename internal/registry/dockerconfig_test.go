package registry

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestDockerConfigJSON_ReadsBackAsSent: what DockerConfigJSON writes, CredentialsFromSecret reads
// back as the user name and password Client would send (a token becomes the password, with
// "token" as the user name when none is given).
func TestDockerConfigJSON_ReadsBackAsSent(t *testing.T) {
	tests := map[string]struct {
		in, want Credentials
	}{
		"password":            {Credentials{Username: "bot", Password: secretValue}, Credentials{Username: "bot", Password: secretValue}},
		"password with colon": {Credentials{Username: "bot", Password: "a:b:" + secretValue}, Credentials{Username: "bot", Password: "a:b:" + secretValue}},
		"token alone":         {Credentials{Token: secretValue}, Credentials{Username: "token", Password: secretValue}},
		"token and user":      {Credentials{Username: "ci", Token: secretValue}, Credentials{Username: "ci", Password: secretValue}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cfg, err := DockerConfigJSON("registry.example.dev:5000", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			s := secret(dockerConfig(string(cfg)))
			got, err := CredentialsFromSecret(s, "registry.example.dev:5000/org/app")
			if err != nil {
				t.Fatalf("reading back %s: %v", cfg, err)
			}
			if got != tt.want {
				t.Errorf("read back %v, want %v", got, tt.want)
			}
			user, pass, _ := tt.in.basic()
			if got.Username != user || got.Password != pass {
				t.Errorf("the config holds %q:%q, the client sends %q:%q", got.Username, got.Password, user, pass)
			}
		})
	}
}

// TestDockerConfigJSON_OneEntryForTheHost: the config has exactly one auths entry, keyed by the
// host as given, so a kubelet or a build tool finds it under the image reference's host.
func TestDockerConfigJSON_OneEntryForTheHost(t *testing.T) {
	cfg, err := DockerConfigJSON("ghcr.io", Credentials{Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Auths map[string]map[string]string `json:"auths"`
	}
	if err := json.Unmarshal(cfg, &parsed); err != nil {
		t.Fatal(err)
	}
	if len(parsed.Auths) != 1 || parsed.Auths["ghcr.io"]["auth"] != b64("u:p") {
		t.Errorf("config = %s, want one entry for ghcr.io with auth base64(u:p)", cfg)
	}
	if _, err := CredentialsFromSecret(&corev1.Secret{Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}, "docker.io"); err == nil {
		t.Error("the entry for ghcr.io was found for docker.io")
	}
}

func TestDockerConfigJSON_RefusesNothingToWrite(t *testing.T) {
	if _, err := DockerConfigJSON("ghcr.io", Credentials{}); err == nil || !strings.Contains(err.Error(), "anonymous") {
		t.Errorf("anonymous credentials: error = %v, want one saying they are anonymous", err)
	}
	if _, err := DockerConfigJSON("", Credentials{Username: "u", Password: "p"}); err == nil {
		t.Error("an empty host was accepted")
	}
}
