package sampleapp

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/slipway-dev/slipway/internal/ociimage"
)

// TestImage_ServesTheGreetingOfItsEnvironment builds the image, checks what the restricted
// profile and a read-only root need of it (the nonroot user, a static entrypoint), then runs the
// very binary of the image on loopback with the variables a pod would get, and checks its answer,
// its health path and that SIGTERM stops it at once.
func TestImage_ServesTheGreetingOfItsEnvironment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	img, err := Image(ctx, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image built in %s", time.Since(start).Round(time.Millisecond))
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != ociimage.User || !slices.Equal(cf.Config.Entrypoint, []string{binaryPath}) ||
		!slices.Contains(cf.Config.Env, EnvVersion+"=1.0.0") {
		t.Fatalf("config: user %q entrypoint %q env %q", cf.Config.User, cf.Config.Entrypoint, cf.Config.Env)
	}
	bin := extract(t, img, binaryPath)

	port := freePort(t)
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = []string{EnvPort + "=" + strconv.Itoa(port), EnvGreeting + "=hi there", "POD_NAME=web-abc", EnvVersion + "=1.0.0"}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	base := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if got := get(ctx, t, base+"/"); got != Answer("hi there", "web-abc", "1.0.0") {
		t.Errorf("GET / = %q, want %q", got, Answer("hi there", "web-abc", "1.0.0"))
	}
	if got := get(ctx, t, base+HealthPath); got != "ok\n" {
		t.Errorf("GET %s = %q", HealthPath, got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the server did not stop within 5s of SIGTERM")
	}
}

// TestVersioned_ChangesOnlyTheVersion: a second version is the same binary with another
// $SAMPLE_APP_VERSION, so it has another digest (a new tag's pods really differ).
func TestVersioned_ChangesOnlyTheVersion(t *testing.T) {
	img, err := Image(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := Versioned(img, "2")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := v2.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(slices.Clone(cf.Config.Env), func(e string) bool { return e != EnvVersion+"=2" })); n != 1 ||
		slices.Contains(cf.Config.Env, EnvVersion+"=1") || cf.Config.Labels["org.opencontainers.image.version"] != "2" {
		t.Fatalf("env %q labels %v", cf.Config.Env, cf.Config.Labels)
	}
	d1, _ := img.Digest()
	d2, _ := v2.Digest()
	l1, _ := img.Layers()
	l2, _ := v2.Layers()
	if d1 == d2 || len(l1) != len(l2) {
		t.Fatalf("digests %s %s, layers %d %d", d1, d2, len(l1), len(l2))
	}
	for i := range l1 {
		a, _ := l1[i].Digest()
		b, _ := l2[i].Digest()
		if a != b {
			t.Fatalf("layer %d differs: %s %s", i, a, b)
		}
	}
}

// extract writes the file at path in img to a temporary file and returns its name.
func extract(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	r := mutate.Extract(img)
	defer func() { _ = r.Close() }()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s not in the image", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if "/"+h.Name != path {
			continue
		}
		out := filepath.Join(t.TempDir(), filepath.Base(path))
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// get polls url until the server answers 200 and returns the body.
func get(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := hc.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(body)
			}
			err = errors.Join(rerr, errors.New(resp.Status))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("GET %s: %v", url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
