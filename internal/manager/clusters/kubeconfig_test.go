package clusters

import (
	"regexp"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// A kubeconfig with recognisable fake secrets, to check no error quotes them.
const (
	fakeToken = "eyJhbGciOiJSUzI1NiJ9.SECRET-TOKEN-DO-NOT-ECHO.c2lnbmF0dXJl"
	fakeCA    = "Q0EtREFUQS1TRUNSRVQtRE8tTk9ULUVDSE8="
	fakeCert  = "Q0VSVC1EQVRBLVNFQ1JFVC1ETy1OT1QtRUNITw=="
	fakeKey   = "S0VZLURBVEEtU0VDUkVULURPLU5PVC1FQ0hP"
)

func kubeconfigText(cluster, user string) string {
	return `apiVersion: v1
kind: Config
current-context: secret-context-name
contexts:
- name: secret-context-name
  context: {cluster: secret-cluster-name, user: secret-user-name, namespace: ns1}
- name: other
  context: {cluster: other, user: other}
clusters:
- name: secret-cluster-name
  cluster:
` + cluster + `
- name: other
  cluster: {server: "https://other.example:6443"}
users:
- name: secret-user-name
  user:
` + user + `
- name: other
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/should-not-matter}
`
}

const (
	goodCluster = "    server: https://secret-host.example:6443\n    certificate-authority-data: " + fakeCA
	goodUser    = "    token: " + fakeToken
)

func TestParseKubeconfigAcceptsInlineCredentialsAndKeepsOnlyTheCurrentContext(t *testing.T) {
	for name, user := range map[string]string{
		"token":       goodUser,
		"client cert": "    client-certificate-data: " + fakeCert + "\n    client-key-data: " + fakeKey,
	} {
		t.Run(name, func(t *testing.T) {
			kc, err := ParseKubeconfig([]byte(kubeconfigText(goodCluster, user)))
			if err != nil {
				t.Fatal(err)
			}
			min := string(kc.Minified)
			if strings.Contains(min, "other") || strings.Contains(min, "should-not-matter") || strings.Contains(min, "ns1") {
				t.Fatalf("minified kubeconfig keeps more than the current context:\n%s", min)
			}
			if cfg := kc.RESTConfig(); cfg.Host != "https://secret-host.example:6443" || len(cfg.CAData) == 0 {
				t.Fatalf("rest config: host %q, CA %d bytes", cfg.Host, len(cfg.CAData))
			}
			if _, err := ParseKubeconfig(kc.Minified); err != nil {
				t.Fatalf("the minified kubeconfig does not parse again: %v", err)
			}
		})
	}
}

func TestParseKubeconfigRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, text, reason, says string
	}{
		{"empty", "", "required", "required"},
		{"not yaml", "{{{ " + fakeToken, "format", "not a valid kubeconfig"},
		{"yaml syntax", "apiVersion: v1\nkind: Config\n  bad: [" + fakeToken, "format", "line"},
		{"wrong kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: " + fakeToken + "}\n", "format", "not a valid kubeconfig"},
		{"no current context", strings.Replace(kubeconfigText(goodCluster, goodUser), "current-context: secret-context-name", "", 1), "format", "current-context"},
		{"unknown current context", strings.Replace(kubeconfigText(goodCluster, goodUser), "current-context: secret-context-name", "current-context: nope", 1), "format", "context"},
		{"no server", kubeconfigText("    certificate-authority-data: "+fakeCA, goodUser), "format", "no server"},
		{"http server", kubeconfigText("    server: http://secret-host.example:8080", goodUser), "format", "https"},
		{"ca file", kubeconfigText("    server: https://secret-host.example\n    certificate-authority: /etc/secret-ca.pem", goodUser), "fileReference", "certificate-authority file"},
		{"exec plugin", kubeconfigText(goodCluster, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /usr/bin/secret-helper"), "plugin", "runs no program"},
		{"auth provider", kubeconfigText(goodCluster, "    auth-provider:\n      name: oidc\n      config: {id-token: "+fakeToken+"}"), "plugin", "auth-provider"},
		{"client key file", kubeconfigText(goodCluster, "    client-certificate: /etc/secret.crt\n    client-key: /etc/secret.key"), "fileReference", "client-key file"},
		{"token file", kubeconfigText(goodCluster, "    tokenFile: /var/run/secret-token"), "fileReference", "tokenFile"},
		{"cert without key", kubeconfigText(goodCluster, "    client-certificate-data: "+fakeCert), "format", "only one of"},
		{"no credential", kubeconfigText(goodCluster, "    {}"), "format", "no credential"},
		{"too large", strings.Repeat("#", MaxKubeconfigBytes+1), "tooLarge", "256 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKubeconfig([]byte(tc.text))
			e, ok := invalid.As(err)
			if !ok || e.Field != "kubeconfig" || e.Reason != tc.reason {
				t.Fatalf("want *invalid.Error on kubeconfig with reason %q, got %#v", tc.reason, err)
			}
			if !strings.Contains(e.Message, tc.says) {
				t.Fatalf("message %q does not say %q", e.Message, tc.says)
			}
			assertNoSecret(t, err, fakeToken, fakeCA, fakeCert, fakeKey, "secret")
			t.Log(err)
		})
	}
}

// assertNoSecret fails when err's text holds any of the secrets.
func assertNoSecret(t testing.TB, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Fatalf("error %q quotes the kubeconfig (%q)", err, s)
		}
	}
}

// kubeconfigMessages is every message ParseKubeconfig may give: fixed sentences and a line number.
var kubeconfigMessages = regexp.MustCompile(`^(is required: the YAML text of a kubeconfig|is larger than 256 KiB|` +
	`is not a valid kubeconfig: YAML syntax error at line \d+|is not a valid kubeconfig: not YAML or JSON of a kubeconfig \(apiVersion v1, kind Config\)|` +
	`has no current-context: .*|current-context names a context the kubeconfig does not define|` +
	`the current context names a (cluster|user) the kubeconfig does not define|the current context's cluster .*|` +
	`the cluster names a certificate-authority file: .*|the cluster's proxy-url is not a URL|the user .*|` +
	`the current context cannot be extracted from the kubeconfig|the kubeconfig cannot be serialized again|does not give a usable client configuration)$`)

// FuzzParseKubeconfig: any input parses or is refused with an *invalid.Error on "kubeconfig"
// whose message is one of the fixed sentences (so it cannot quote the input), without a cause,
// and never panics.
func FuzzParseKubeconfig(f *testing.F) {
	f.Add([]byte(kubeconfigText(goodCluster, goodUser)))
	f.Add([]byte(kubeconfigText(goodCluster, "    client-certificate-data: "+fakeCert+"\n    client-key-data: "+fakeKey)))
	f.Add([]byte(kubeconfigText(goodCluster, "    exec: {command: x}")))
	f.Add([]byte(kubeconfigText("    server: https://[::1]:6443\n    proxy-url: '%zz'", goodUser)))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","current-context":"a","contexts":[{"name":"a","context":{"cluster":"a","user":"a"}}]}`))
	f.Add([]byte("apiVersion: v1\nkind: Config\ncurrent-context: x\n"))
	f.Add([]byte("- - -\n: :"))
	f.Add([]byte{0xff, 0xfe, 0x00})
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		kc, err := ParseKubeconfig(data)
		if err == nil {
			if kc == nil || len(kc.Minified) == 0 || kc.RESTConfig().Host == "" {
				t.Fatal("accepted without a usable configuration")
			}
			return
		}
		e, ok := invalid.As(err)
		if !ok || e.Field != "kubeconfig" || e.Err != nil {
			t.Fatalf("want *invalid.Error on kubeconfig without a cause, got %#v", err)
		}
		if !kubeconfigMessages.MatchString(e.Message) {
			t.Fatalf("message not one of the fixed sentences: %q", e.Message)
		}
	})
}
