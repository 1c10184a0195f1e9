package webhookcert

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/slipway-dev/slipway/internal/testenv"
)

func pairFiles(t *testing.T, ca *keyPair) (map[string][]byte, *keyPair) {
	t.Helper()
	s := mustServing(t, ca, newHosts([]string{"localhost"}), time.Now(), time.Hour)
	return map[string][]byte{KeyCert: s.certPEM, KeyKey: s.keyPEM, KeyCA: ca.certPEM}, s
}

func TestWriteFiles_SwitchesAllFilesAndKeepsOneVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	ca := mustCA(t, time.Now(), 2*time.Hour)
	// A plain file where a link will go, as a cert dir used before might hold.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyCert), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	var last map[string][]byte
	for range 3 {
		last, _ = pairFiles(t, ca)
		if err := writeFiles(dir, last); err != nil {
			t.Fatal(err)
		}
	}
	if !filesEqual(dir, last) {
		t.Fatal("the directory does not hold the last write")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	versions := 0
	for _, e := range entries {
		if len(e.Name()) > len("..version-") && e.Name()[:len("..version-")] == "..version-" {
			versions++
			continue
		}
		names = append(names, e.Name())
	}
	if versions != 1 || !slices.Equal(names, []string{dataLink, KeyCA, KeyCert, KeyKey}) {
		t.Errorf("directory holds %v and %d versions; want the links and one version", names, versions)
	}
	for _, n := range []string{KeyCert, KeyKey, KeyCA} {
		if target, err := os.Readlink(filepath.Join(dir, n)); err != nil || target != filepath.Join(dataLink, n) {
			t.Errorf("%s links to %q (%v)", n, target, err)
		}
	}
}

// TestWriteFiles_CertWatcherReloads is the reload path of the webhook server: controller-runtime's
// certwatcher picks up a new pair written by writeFiles without being restarted.
func TestWriteFiles_CertWatcherReloads(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, time.Now(), 2*time.Hour)
	files, first := pairFiles(t, ca)
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	w, err := certwatcher.New(filepath.Join(dir, KeyCert), filepath.Join(dir, KeyKey))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { _ = w.Start(ctx) }()
	serial := func() string {
		c, _ := w.GetCertificate(nil)
		return c.Leaf.SerialNumber.String()
	}
	if serial() != first.cert.SerialNumber.String() {
		t.Fatal("the watcher did not load the first pair")
	}
	files, second := pairFiles(t, ca)
	// Whether the watcher's file watches are in place yet or not, its events or its 10 s poll
	// pick the switch up.
	if err := writeFiles(dir, files); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the watcher serves the second pair", func() (bool, error) {
		return serial() == second.cert.SerialNumber.String(), nil
	})
}
