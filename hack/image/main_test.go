package main

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/slipway-dev/slipway/internal/ociimage"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// TestMakeImage_PushesTheManager runs `make image` for the manager into a real registry
// (distribution) and reads the image back: the manager binary at /manager as entrypoint, user
// 65532, labels naming the commit, its time the commit's. The image agrees with the Dockerfile's
// manager target (binary, user, entrypoint), which no test can build here (no container engine).
func TestMakeImage_PushesTheManager(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	out := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGES=manager", "IMAGE_REPO="+reg.Host+"/slipway",
		"IMAGE_TAG=0.0.0-test", "IMAGE_PLATFORMS=linux/"+runtime.GOARCH, "IMAGE_OUT="+out)
	cmd.Dir = filepath.Join("..", "..")
	// Run by make test, the test inherits make's flags and variables: leave them out.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "MAKEOVERRIDES" && k != "SOURCE_DATE_EPOCH" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, output)
	}
	ref := reg.Host + "/slipway/slipway-manager:0.0.0-test"
	if !strings.Contains(string(output), "pushed "+ref+"@sha256:") {
		t.Errorf("make image does not say what it pushed:\n%s", output)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	commit := git(t, "rev-parse", "HEAD")
	commitTime, err := strconv.ParseInt(git(t, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	wantCreated := time.Unix(commitTime, 0).UTC()
	for k, want := range map[string]string{
		"org.opencontainers.image.title": "slipway-manager", "org.opencontainers.image.version": "0.0.0-test",
		"org.opencontainers.image.revision": commit, "org.opencontainers.image.created": wantCreated.Format(time.RFC3339),
		"org.opencontainers.image.source": "https://github.com/slipway-dev/slipway",
	} {
		if got := cf.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if !cf.Created.Equal(wantCreated) || cf.Architecture != runtime.GOARCH {
		t.Errorf("created %s for %s, want the commit's time %s, %s", cf.Created, cf.Architecture, wantCreated, runtime.GOARCH)
	}
	built, err := os.ReadFile(filepath.Join(out, "linux_"+runtime.GOARCH, "manager"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fileOf(t, img, "manager"); !bytes.Equal(got, built) {
		t.Errorf("the image's /manager (%d bytes) is not the binary make built (%d bytes)", len(got), len(built))
	}

	user, entrypoint := dockerfileTarget(t, "manager")
	if cf.Config.User != user || !slices.Equal(cf.Config.Entrypoint, entrypoint) {
		t.Errorf("image user %q entrypoint %q; the Dockerfile's manager target: %q %q", cf.Config.User, cf.Config.Entrypoint, user, entrypoint)
	}
}

// TestDockerfile_AgreesWithTheBuilder: both Dockerfile targets copy their own binary to /<name>,
// run it as the builder's user and have it as entrypoint, from the same static build as
// `make image` (CGO off, -trimpath -ldflags="-s -w").
func TestDockerfile_AgreesWithTheBuilder(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"operator", "manager"} {
		user, entrypoint := dockerfileTarget(t, target)
		if user != ociimage.User || !slices.Equal(entrypoint, []string{"/" + target}) {
			t.Errorf("Dockerfile target %s: USER %q ENTRYPOINT %q, want %q [/%s]", target, user, entrypoint, ociimage.User, target)
		}
		build := `RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/` + target + ` ./cmd/` + target
		if !strings.Contains(string(data), build) {
			t.Errorf("Dockerfile does not build %s as make image does: want %q", target, build)
		}
	}
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`CGO_ENABLED=0 GOOS=$${p%%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags="-s -w" -o $$out ./cmd/$$name`, "--path /$$name"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("the Makefile's image target lacks %q", want)
		}
	}
}

// TestRun_WritesLayoutAndTarball runs the command with a small binary into an OCI layout and a
// docker tarball, and refuses incomplete or wrong arguments with a message.
func TestRun_WritesLayoutAndTarball(t *testing.T) {
	hello := filepath.Join(t.TempDir(), "hello")
	build := exec.Command("go", "build", "-o", hello, "../../internal/ociimage/testdata/hello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building hello: %v\n%s", err, out)
	}
	dir, file := filepath.Join(t.TempDir(), "oci"), filepath.Join(t.TempDir(), "hello.tar")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--version", "1.2.3",
		"--label", "team=platform", "--created", "2026-11-23T12:00:00Z", "--ca-bundle", "", "--oci-layout", dir,
		"--tarball", file, "--tag", "slipway-hello:1.2.3"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !regexp.MustCompile(`wrote slipway-hello:1.2.3 \(sha256:[0-9a-f]{64}\) to the OCI layout`).MatchString(stdout.String()) {
		t.Errorf("output:\n%s", stdout.String())
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Annotations[ociimage.RefNameAnnotation] != "slipway-hello:1.2.3" {
		t.Fatalf("layout index %+v: %v", im, err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, img)
	tag, err := name.NewTag("slipway-hello:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, loaded)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello"}, "say where the image goes"},
		{[]string{"--path", "/hello", "--oci-layout", dir, "--tag", "x"}, "--binary is required"},
		{[]string{"--binary", hello, "--path", "/hello", "--oci-layout", dir, "--tag", "x"}, "want PLATFORM=FILE"},
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--oci-layout", dir, "--tag", "x", "--created", "yesterday"}, "want Unix seconds or RFC 3339"},
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--oci-layout", dir, "--tag", "x", "--label", "novalue"}, "want KEY=VALUE"},
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--oci-layout", dir}, "needs --tag or --version"},
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--tarball", file}, "needs --tag"},
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--push", "Not A Ref"}, "image reference"},
		{[]string{"--binary", "linux/arm64=" + hello, "--path", "/hello", "--oci-layout", dir, "--tag", "x"}, "not for arm64"},
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--oci-layout", dir, "--tag", "x", "--ca-bundle", "/nonexistent"}, "--ca-bundle"},
		{[]string{"--binary", "linux/amd64=" + hello, "--path", "/hello", "--tarball", file, "--tag", "x", "extra"}, "unexpected arguments"},
	} {
		if err := run(context.Background(), tc.args, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func checkConfig(t *testing.T, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != ociimage.User || !slices.Equal(c.Entrypoint, []string{"/hello"}) || c.Labels["team"] != "platform" ||
		c.Labels["org.opencontainers.image.version"] != "1.2.3" || c.Labels["org.opencontainers.image.created"] != "2026-11-23T12:00:00Z" ||
		slices.ContainsFunc(c.Env, func(e string) bool { return strings.HasPrefix(e, "SSL_CERT_FILE=") }) {
		t.Errorf("config %+v: want user 65532, /hello, the labels and no CA bundle", c)
	}
}

var (
	stageLine = regexp.MustCompile(`(?m)^FROM \S+ AS (\S+)$`)
	userLine  = regexp.MustCompile(`(?m)^USER (\S+)$`)
	entryLine = regexp.MustCompile(`(?m)^ENTRYPOINT \["([^"]+)"\]$`)
)

// dockerfileTarget returns the USER and ENTRYPOINT of the Dockerfile's stage target, failing the
// test when it has none or its binary is not the target's own build.
func dockerfileTarget(t *testing.T, target string) (string, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := stageLine.FindAllStringSubmatchIndex(string(data), -1)
	for i, s := range stages {
		if string(data[s[2]:s[3]]) != target {
			continue
		}
		end := len(data)
		if i+1 < len(stages) {
			end = stages[i+1][0]
		}
		stage := string(data[s[0]:end])
		if !strings.HasPrefix(stage, "FROM gcr.io/distroless/static:nonroot ") ||
			!strings.Contains(stage, "COPY --from=build-"+target+" /out/"+target+" /"+target+"\n") {
			t.Errorf("Dockerfile target %s:\n%s\nwant distroless static with its own binary at /%s", target, stage, target)
		}
		u, e := userLine.FindStringSubmatch(stage), entryLine.FindStringSubmatch(stage)
		if u == nil || e == nil {
			t.Fatalf("Dockerfile target %s has no USER or ENTRYPOINT:\n%s", target, stage)
		}
		return u[1], []string{e[1]}
	}
	t.Fatalf("the Dockerfile has no target %s", target)
	return "", nil
}

// fileOf returns the content of the file at name (no leading slash) in img's filesystem.
func fileOf(t *testing.T, img v1.Image, name string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no %s in the image: %v", name, err)
		}
		if h.Name == name {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
	}
}

func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}
