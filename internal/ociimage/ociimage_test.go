package ociimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/elf"
	"encoding/pem"
	"errors"
	"io"
	"maps"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/slipway-dev/slipway/internal/ociimage"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

var created = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// TestBuild_ManagerImageFromARegistryRuns builds the manager's image from the binary users run
// (static, stripped), pushes it to a real registry (distribution), pulls it back and checks the
// manifest and config (OCI media types, user 65532, entrypoint, labels, time stamps) and every
// file in it; the binary extracted from the pulled image then prints its usage, makes a key and
// migrates a SQLite database, as the image's user when the test may switch to it.
func TestBuild_ManagerImageFromARegistryRuns(t *testing.T) {
	bin := operatorproc.BinaryOf(t, "./cmd/manager", "")
	ca := testCABundle(t)
	labels := map[string]string{"org.opencontainers.image.title": "slipway-manager", "org.opencontainers.image.version": "0.1.0"}
	img, err := ociimage.Build(ociimage.Spec{Binary: bin, Path: "/manager", Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Labels: labels, Created: created, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.StartDistribution(t)
	ref := reg.Repository("slipway/slipway-manager") + ":0.1.0"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	digest, err := ociimage.Push(ctx, ref, []v1.Image{img}, false)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(parseRef(t, ref), remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := pulled.Digest(); d != digest {
		t.Errorf("the tag names %s, the push returned %s", d, digest)
	}
	checkManifest(t, pulled, 2)
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := []string{"HOME=/home/nonroot", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	if c := cf.Config; c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/manager"}) || len(c.Cmd) != 0 ||
		c.WorkingDir != "/home/nonroot" || !slices.Equal(c.Env, wantEnv) || !maps.Equal(c.Labels, labels) {
		t.Errorf("config %+v: want user 65532:65532, entrypoint /manager, no cmd, working dir and HOME /home/nonroot, SSL_CERT_FILE, labels %v", c, labels)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Equal(created) {
		t.Errorf("config platform %s/%s created %s, want linux/%s %s", cf.OS, cf.Architecture, cf.Created, runtime.GOARCH, created)
	}

	binData, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	files := extract(t, pulled)
	want := map[string]entry{
		"etc":                               {mode: 0o755, dir: true},
		"etc/passwd":                        {mode: 0o644, data: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		"etc/group":                         {mode: 0o644, data: "root:x:0:\nnonroot:x:65532:\n"},
		"etc/nsswitch.conf":                 {mode: 0o644, data: "hosts: files dns\n"},
		"etc/ssl":                           {mode: 0o755, dir: true},
		"etc/ssl/certs":                     {mode: 0o755, dir: true},
		"etc/ssl/certs/ca-certificates.crt": {mode: 0o644, data: string(ca)},
		"home":                              {mode: 0o755, dir: true},
		"home/nonroot":                      {mode: 0o700, uid: 65532, dir: true},
		"tmp":                               {mode: 0o1777, dir: true},
		"manager":                           {mode: 0o755, data: string(binData)},
	}
	checkFiles(t, files, want)

	// The binary, as pulled, runs: in a directory the image's user may reach (t.TempDir's parent
	// is root's alone).
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	exe := filepath.Join(dir, "manager")
	if err := os.WriteFile(exe, []byte(files["manager"].data), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	asImageUser(t, dir, data)
	if out, err := runAs(exe, "--help"); err != nil || !strings.Contains(out, "Usage: manager <command>") {
		t.Errorf("manager --help: %v\n%s", err, out)
	}
	if out, err := runAs(exe, "gen-key"); err != nil || !regexp.MustCompile(`(?m)^[A-Za-z0-9._-]+:[A-Za-z0-9+/]{43}=$`).MatchString(out) {
		t.Errorf("manager gen-key: %v\n%s", err, out)
	}
	if out, err := runAs(exe, "migrate", "--database-path="+filepath.Join(data, "manager.db")); err != nil || !strings.Contains(out, "sqlite database is up to date") {
		t.Errorf("manager migrate: %v\n%s", err, out)
	}
}

// imageUser is the credential the extracted binary runs with: the image's user when this test
// runs as root (it may switch), else the test's own.
var imageUser *syscall.Credential

// asImageUser makes dirs the image user's, as the image's home and a volume with fsGroup are.
func asImageUser(t *testing.T, dirs ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	imageUser = &syscall.Credential{Uid: ociimage.UID, Gid: ociimage.UID}
	for _, d := range dirs {
		if err := os.Chown(d, ociimage.UID, ociimage.UID); err != nil {
			t.Fatal(err)
		}
	}
}

func runAs(exe string, args ...string) (string, error) {
	cmd := exec.Command(exe, args...)
	cmd.Env = []string{"HOME=" + filepath.Dir(exe)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: imageUser}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBuild_SameInputsSameDigest: the digest depends on the binary, the labels and the creation
// time alone, so a rebuild from the same commit gives the same image.
func TestBuild_SameInputsSameDigest(t *testing.T) {
	spec := ociimage.Spec{Binary: buildHello(t, runtime.GOARCH), Path: "/hello", Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Labels: map[string]string{"org.opencontainers.image.revision": "abc"}, Created: created}
	first, second := digestOf(t, spec), digestOf(t, spec)
	if first != second {
		t.Errorf("two builds of the same inputs: %s and %s", first, second)
	}
	later := spec
	later.Created = created.Add(time.Second)
	relabelled := spec
	relabelled.Labels = map[string]string{"org.opencontainers.image.revision": "def"}
	for what, s := range map[string]ociimage.Spec{"another creation time": later, "another label": relabelled} {
		if d := digestOf(t, s); d == first {
			t.Errorf("%s gives the same digest %s", what, d)
		}
	}
}

// TestBuild_RefusesWhatCannotRunOnAnEmptyBase: a dynamically linked binary, one for another
// architecture, a file that is no executable, a bad path or platform are refused, saying why.
func TestBuild_RefusesWhatCannotRunOnAnEmptyBase(t *testing.T) {
	hello := buildHello(t, "amd64")
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	linux := v1.Platform{OS: "linux", Architecture: "amd64"}
	for _, tc := range []struct {
		name string
		spec ociimage.Spec
		want string
	}{
		{"dynamic", ociimage.Spec{Binary: dynamicBinary(t), Path: "/true", Platform: linux}, "dynamically linked"},
		{"other architecture", ociimage.Spec{Binary: hello, Path: "/hello", Platform: v1.Platform{OS: "linux", Architecture: "arm64"}}, "built for EM_X86_64, not for arm64"},
		{"unknown architecture", ociimage.Spec{Binary: hello, Path: "/hello", Platform: v1.Platform{OS: "linux", Architecture: "vax"}}, `unsupported architecture "vax"`},
		{"script", ociimage.Spec{Binary: text, Path: "/script", Platform: linux}, "not an ELF executable"},
		{"missing", ociimage.Spec{Binary: filepath.Join(t.TempDir(), "nope"), Path: "/nope", Platform: linux}, "no such file"},
		{"relative path", ociimage.Spec{Binary: hello, Path: "hello", Platform: linux}, "must be an absolute file path"},
		{"root path", ociimage.Spec{Binary: hello, Path: "/", Platform: linux}, "must be an absolute file path"},
		{"unclean path", ociimage.Spec{Binary: hello, Path: "/bin/../hello", Platform: linux}, "must be an absolute file path"},
		{"windows", ociimage.Spec{Binary: hello, Path: "/hello", Platform: v1.Platform{OS: "windows", Architecture: "amd64"}}, "only linux"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ociimage.Build(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Build: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestIndex_TwoPlatformsInALayoutAndARegistry writes an amd64 and an arm64 image as one index into
// an OCI layout (replacing an entry of the same name, keeping others) and pushes it; each
// platform's manifest holds the binary built for it.
func TestIndex_TwoPlatformsInALayoutAndARegistry(t *testing.T) {
	var images []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := ociimage.Build(ociimage.Spec{Binary: buildHello(t, arch), Path: "/hello",
			Platform: v1.Platform{OS: "linux", Architecture: arch}, Created: created})
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}
	if _, err := ociimage.Index(images[0], images[0]); err == nil || !strings.Contains(err.Error(), "two images for platform linux/amd64") {
		t.Errorf("an index of one platform twice: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	digest, err := ociimage.WriteLayout(dir, "0.1.0", images)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, dir, map[string]v1.Hash{"0.1.0": digest})
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	child, err := idx.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	checkPlatforms(t, child)

	// The same name again replaces the entry; another name adds one.
	single, err := ociimage.WriteLayout(dir, "0.1.0", images[:1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ociimage.WriteLayout(dir, "0.2.0", images); err != nil {
		t.Fatal(err)
	}
	checkLayout(t, dir, map[string]v1.Hash{"0.1.0": single, "0.2.0": digest})

	reg := registrytest.StartDistribution(t)
	ref := reg.Repository("slipway/hello") + ":0.1.0"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pushed, err := ociimage.Push(ctx, ref, images, false)
	if err != nil {
		t.Fatal(err)
	}
	remoteIdx, err := remote.Index(parseRef(t, ref), remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := remoteIdx.Digest(); d != pushed || pushed != digest {
		t.Errorf("registry index %s, pushed %s, layout %s: want one digest", d, pushed, digest)
	}
	checkPlatforms(t, remoteIdx)
}

// TestWriteTarball_DockerLoadable writes one image as a docker tarball and reads it back; several
// platforms are refused.
func TestWriteTarball_DockerLoadable(t *testing.T) {
	img, err := ociimage.Build(ociimage.Spec{Binary: buildHello(t, runtime.GOARCH), Path: "/hello",
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "hello.tar")
	if err := ociimage.WriteTarball(file, "slipway-hello:0.1.0", []v1.Image{img}); err != nil {
		t.Fatal(err)
	}
	tag := name.MustParseReference("slipway-hello:0.1.0").(name.Tag)
	loaded, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, _ := img.ConfigName()
	if got, _ := loaded.ConfigName(); got != wantCfg {
		t.Errorf("the tarball's config %s, want %s", got, wantCfg)
	}
	if cf, err := loaded.ConfigFile(); err != nil || cf.Config.User != ociimage.User {
		t.Errorf("the tarball's config: %v %+v", err, cf)
	}
	if err := ociimage.WriteTarball(file, "slipway-hello:0.1.0", []v1.Image{img, img}); err == nil || !strings.Contains(err.Error(), "one platform") {
		t.Errorf("two images into a docker tarball: %v", err)
	}
}

// entry is one file of an image's filesystem.
type entry struct {
	mode int64
	uid  int
	dir  bool
	data string
	mod  time.Time
}

func extract(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != h.Gid {
			t.Errorf("%s: uid %d, gid %d", h.Name, h.Uid, h.Gid)
		}
		out[h.Name] = entry{mode: h.Mode, uid: h.Uid, dir: h.Typeflag == tar.TypeDir, data: string(data), mod: h.ModTime}
	}
}

// checkFiles compares an image's files with want, and every file's time with created.
func checkFiles(t *testing.T, got, want map[string]entry) {
	t.Helper()
	for n, w := range want {
		g, ok := got[n]
		if !ok {
			t.Errorf("%s missing from the image", n)
			continue
		}
		if !g.mod.Equal(created) {
			t.Errorf("%s modified %s, want %s", n, g.mod, created)
		}
		g.mod = time.Time{}
		if g != w {
			t.Errorf("%s: mode %o uid %d dir %t, %d bytes; want mode %o uid %d dir %t, %d bytes", n, g.mode, g.uid, g.dir, len(g.data), w.mode, w.uid, w.dir, len(w.data))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: unexpected in the image", n)
		}
	}
}

func checkManifest(t *testing.T, img v1.Image, layers int) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != layers {
		t.Errorf("manifest %s, config %s, %d layers: want OCI media types and %d layers", m.MediaType, m.Config.MediaType, len(m.Layers), layers)
	}
	for _, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer %s: media type %s", l.Digest, l.MediaType)
		}
	}
}

// checkLayout checks index.json's entries by name.
func checkLayout(t *testing.T, dir string, want map[string]v1.Hash) {
	t.Helper()
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]v1.Hash{}
	for _, d := range im.Manifests {
		got[d.Annotations[ociimage.RefNameAnnotation]] = d.Digest
	}
	if !maps.Equal(got, want) {
		t.Errorf("OCI layout index.json names %v, want %v", got, want)
	}
}

// checkPlatforms: the index holds linux/amd64 and linux/arm64, each image's config and binary for
// its platform.
func checkPlatforms(t *testing.T, idx v1.ImageIndex) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != d.Platform.Architecture {
			t.Errorf("%s: config says %s", d.Platform, cf.Architecture)
		}
		f, err := elf.NewFile(strings.NewReader(extract(t, img)["hello"].data))
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != machines[d.Platform.Architecture] {
			t.Errorf("%s: the binary is %s", d.Platform, f.Machine)
		}
	}
	if slices.Sort(platforms); !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("index platforms %v", platforms)
	}
}

func parseRef(t *testing.T, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func digestOf(t *testing.T, s ociimage.Spec) v1.Hash {
	t.Helper()
	img, err := ociimage.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// buildHello builds testdata/hello, static, for linux/arch.
func buildHello(t *testing.T, arch string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "hello-"+arch)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./testdata/hello")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hello for %s: %v\n%s", arch, err, b)
	}
	return out
}

// dynamicBinary is a dynamically linked executable of the system: /bin/true.
func dynamicBinary(t *testing.T) string {
	t.Helper()
	f, err := elf.Open("/bin/true")
	if err != nil {
		t.Fatalf("the refusal needs a dynamically linked executable: /bin/true: %v", err)
	}
	defer func() { _ = f.Close() }()
	if !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		t.Fatal("/bin/true is statically linked here: the refusal needs a dynamic executable")
	}
	return "/bin/true"
}

// testCABundle is a PEM bundle of one self-signed CA certificate.
func testCABundle(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "slipway test CA"}, IsCA: true,
		NotBefore: created, NotAfter: created.Add(time.Hour), BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
