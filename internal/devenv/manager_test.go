package devenv

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/slipway-dev/slipway/internal/registry"
)

// Every start writes new secrets and a new certificate, and removes the previous run's
// database: a second make dev-up never meets the first one's state.
func TestWriteManagerSecrets_FreshOnEveryStart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	first, err := writeManagerSecrets(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.database, []byte("the first run's database"), 0o600); err != nil {
		t.Fatal(err)
	}
	s1, k1 := readFile(t, first.jwtSecret), readFile(t, first.keys)
	second, err := writeManagerSecrets(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(second.database); !os.IsNotExist(err) {
		t.Errorf("the previous run's database is still there (%v)", err)
	}
	for _, path := range []string{second.jwtSecret, second.keys, second.cert, second.key} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(path), info.Mode().Perm())
		}
	}
	if info, err := os.Stat(second.dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the manager's state directory: %v, mode %v, want 0700", err, info.Mode().Perm())
	}
	s2 := readFile(t, second.jwtSecret)
	if s1 == s2 {
		t.Error("both starts wrote the same HS256 secret")
	}
	if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s2)); err != nil || len(raw) != 32 {
		t.Errorf("the HS256 secret %q is not base64 of 32 bytes (%v)", s2, err)
	}
	line := strings.TrimSpace(readFile(t, second.keys))
	id, key, ok := strings.Cut(line, ":")
	if raw, err := base64.StdEncoding.DecodeString(key); !ok || id != managerKeyID || err != nil || len(raw) != 32 {
		t.Errorf("the encryption key line %q is not %s:<base64 of 32 bytes> (%v)", line, managerKeyID, err)
	}
	if line == strings.TrimSpace(k1) {
		t.Error("both starts wrote the same encryption key")
	}
	if bytes.Equal(first.certPEM, second.certPEM) {
		t.Error("both starts wrote the same certificate")
	}
}

// The certificate serves 127.0.0.1, ::1 and localhost and is trusted by adding it to the roots.
func TestWriteManagerSecrets_CertificateServesLoopback(t *testing.T) {
	f, err := writeManagerSecrets(t.TempDir(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		t.Fatalf("the certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(f.certPEM)
	for _, host := range []string{"127.0.0.1", "::1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "example.com"}); err == nil {
		t.Error("the certificate is valid for example.com")
	}
}

// charts/slipway is published in each version to the local registry (the dev environment's own)
// as an OCI chart that the Helm SDK loads at its version, CRDs included.
func TestPublishSampleOperator_EachVersionOfTheChart(t *testing.T) {
	srv := httptest.NewServer(newRegistryHandler(filepath.Join(t.TempDir(), "registry.log")))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir, err := findChartDir()
	if err != nil {
		t.Fatal(err)
	}
	repository, err := publishSampleOperator(t.Context(), addr, dir, SampleOperatorVersions)
	if err != nil {
		t.Fatal(err)
	}
	if want := "oci://" + addr + "/charts"; repository != want {
		t.Errorf("repository %q, want %q", repository, want)
	}
	client, err := registry.NewClient(registry.Options{Insecure: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := client.ListTags(t.Context(), addr+"/charts/"+SampleOperator, "")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags.Tags)
	if !slices.Equal(tags.Tags, SampleOperatorVersions) {
		t.Fatalf("tags %v, want %v", tags.Tags, SampleOperatorVersions)
	}
	for _, v := range SampleOperatorVersions {
		ref, err := name.NewTag(addr+"/charts/"+SampleOperator+":"+v, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(ref, remote.WithContext(t.Context()))
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Layers) != 1 || m.Layers[0].MediaType != registry.HelmChartLayerMediaType {
			t.Fatalf("%s: layers %v, want one Helm chart layer", v, m.Layers)
		}
		layer, err := img.LayerByDigest(m.Layers[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := layer.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		checkChartArchive(t, "the OCI chart", rc, v)
		_ = rc.Close()
	}
}

// checkChartArchive loads a chart archive with the Helm SDK and checks it is charts/slipway at
// version, with its CRDs and templates.
func checkChartArchive(t *testing.T, what string, archive io.Reader, version string) {
	t.Helper()
	c, err := loader.LoadArchive(archive)
	if err != nil {
		t.Fatalf("%s %s: the Helm SDK does not load it: %v", what, version, err)
	}
	if c.Name() != SampleOperator || c.Metadata.Version != version {
		t.Errorf("%s: chart %s %s, want %s %s", what, c.Name(), c.Metadata.Version, SampleOperator, version)
	}
	if len(c.CRDObjects()) == 0 {
		t.Errorf("%s %s carries no CRDs", what, version)
	}
	if len(c.Templates) == 0 {
		t.Errorf("%s %s carries no templates", what, version)
	}
}

func TestChartAt_NotAChartNamesTheDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := chartAt(dir, "0.1.0")
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("error %v, want one naming %s", err, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: other\nversion: 1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chartAt(dir, "0.1.0"); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("error %v, want one naming the wrong chart name", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: slipway\nversion: 1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := chartAt(dir, "not-semver"); err == nil || !strings.Contains(err.Error(), "not-semver") {
		t.Fatalf("error %v, want one naming the bad version", err)
	}
}

func TestManagerURL_WildcardHostsAreReachedOnLoopback(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8443": "https://127.0.0.1:8443",
		"0.0.0.0:8443":   "https://127.0.0.1:8443",
		"[::]:8443":      "https://127.0.0.1:8443",
		":9000":          "https://127.0.0.1:9000",
		"localhost:9000": "https://localhost:9000",
		"[::1]:9000":     "https://" + net.JoinHostPort("::1", "9000"),
	} {
		if got := managerURL(addr); got != want {
			t.Errorf("managerURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
