package cli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
)

func TestFlattenKubeconfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.crt", "CA-PEM")
	write("token", "s3cret")
	write("kubeconfig", `apiVersion: v1
kind: Config
current-context: a
clusters:
- name: ca
  cluster: {server: "https://a.example:6443", certificate-authority: ca.crt}
- name: cb
  cluster: {server: "https://b.example:6443"}
users:
- name: ua
  user: {tokenFile: token}
- name: ub
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}
contexts:
- name: a
  context: {cluster: ca, user: ua, namespace: team}
- name: b
  context: {cluster: cb, user: ub}
`)
	data, err := FlattenKubeconfig(filepath.Join(dir, "kubeconfig"), "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Contexts) != 1 || len(cfg.Clusters) != 1 || len(cfg.AuthInfos) != 1 || cfg.CurrentContext != "a" {
		t.Errorf("not cut down to context a: %+v", cfg)
	}
	if got := string(cfg.Clusters["ca"].CertificateAuthorityData); got != "CA-PEM" || cfg.Clusters["ca"].CertificateAuthority != "" {
		t.Errorf("the CA is not inlined: data %q, file %q", got, cfg.Clusters["ca"].CertificateAuthority)
	}
	if u := cfg.AuthInfos["ua"]; u.Token != "s3cret" || u.TokenFile != "" {
		t.Errorf("the token file is not inlined: %+v", u)
	}
	if _, err := FlattenKubeconfig(filepath.Join(dir, "kubeconfig"), "b"); err == nil || !strings.Contains(err.Error(), "exec plugin") {
		t.Errorf("an exec user: %v", err)
	}
	if _, err := FlattenKubeconfig(filepath.Join(dir, "kubeconfig"), "c"); err == nil || !strings.Contains(err.Error(), `no context "c"`) {
		t.Errorf("a missing context: %v", err)
	}
}

func TestISODuration(t *testing.T) {
	for in, want := range map[string]string{"PT5M": "PT5M", "5m": "PT5M", "1h30m": "PT1H30M", "90s": "PT1M30S", "P1D": "P1D"} {
		got, err := isoDuration("x", in)
		if err != nil || got != want {
			t.Errorf("isoDuration(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := isoDuration("evaluation-period", "soon"); err == nil || !strings.Contains(err.Error(), "--evaluation-period must be a duration") {
		t.Errorf("isoDuration(soon) = %v", err)
	}
}

// TestConnection: --context, then $SLIPWAY_CONTEXT, then the current context; --server and
// $SLIPWAY_TOKEN replace the context's; nothing at all is an auth error (exit 4).
func TestConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg, _ := config.Load(path)
	cfg.Upsert(config.Context{Name: "b", Server: "https://b.example", CertificateAuthority: "ca.pem"}, config.User{Name: "b", Token: "tb"})
	cfg.Upsert(config.Context{Name: "a", Server: "https://a.example"}, config.User{Name: "a", Token: "ta"})
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	conn := func(env map[string]string, global GlobalOptions) (Connection, error) {
		ios, _, _, _ := iostreams.Test()
		env[config.EnvConfig] = path
		f := NewFactory(ios, func(k string) string { return env[k] })
		*f.Global = global
		return f.Connection()
	}
	c, err := conn(map[string]string{}, GlobalOptions{})
	if err != nil || c.Context != "a" || c.Token != "ta" {
		t.Errorf("the current context: %+v, %v", c, err)
	}
	c, err = conn(map[string]string{EnvContext: "b"}, GlobalOptions{})
	if err != nil || c.Context != "b" || c.CAFile != filepath.Join(filepath.Dir(path), "ca.pem") {
		t.Errorf("$SLIPWAY_CONTEXT: %+v, %v (a relative CA is relative to the config file)", c, err)
	}
	c, err = conn(map[string]string{EnvContext: "b", EnvToken: "env"}, GlobalOptions{Context: "a", Server: "https://other"})
	if err != nil || c.Context != "a" || c.Server != "https://other" || c.Token != "env" {
		t.Errorf("--context, --server, $SLIPWAY_TOKEN: %+v, %v", c, err)
	}
	if _, err = conn(map[string]string{}, GlobalOptions{Context: "zzz"}); err == nil || !strings.Contains(err.Error(), "the contexts are b, a") {
		t.Errorf("a missing --context: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "none.yaml")
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios, func(k string) string { return map[string]string{config.EnvConfig: empty}[k] })
	_, err = f.Connection()
	if !errors.Is(err, ErrNotSignedIn) || ExitCode(err) != ExitAuth {
		t.Errorf("no context: %v (exit %d)", err, ExitCode(err))
	}
}

func TestExitCodes(t *testing.T) {
	for err, want := range map[error]int{
		nil:                               ExitOK,
		errors.New("x"):                   ExitError,
		ErrCancelled:                      ExitCancelled,
		Pending("still"):                  ExitPending,
		flagErrorf("bad"):                 ExitError,
		&AuthError{Err: ErrNotSignedIn}:   ExitAuth,
		&client.APIError{StatusCode: 403}: ExitAuth,
		&client.APIError{StatusCode: 401}: ExitAuth,
		&client.APIError{StatusCode: 409}: ExitError,
	} {
		if got := ExitCode(err); got != want {
			t.Errorf("ExitCode(%v) = %d, want %d", err, got, want)
		}
	}
}

// TestListItems: a comma-separated flag completes its last item, each candidate after the items
// given and not one of them again (without its description after a comma, which bash could not
// match).
func TestListItems(t *testing.T) {
	cands := []string{"dev-1\tDev", "dev-2\tDev", "prod-1\tProduction"}
	for _, tc := range []struct {
		toComplete string
		want       []string
	}{
		{"", cands},
		{"dev", cands}, // the shell keeps those that match
		{"dev-1,", []string{"dev-1,dev-2", "dev-1,prod-1"}},
		{"dev-1,prod-1,d", []string{"dev-1,prod-1,dev-2"}},
		{"prod-1,dev-1,dev-2,", nil},
	} {
		if got := listItems(tc.toComplete, cands); !slices.Equal(got, tc.want) {
			t.Errorf("listItems(%q) = %q, want %q", tc.toComplete, got, tc.want)
		}
	}
}
