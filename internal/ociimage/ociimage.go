// Package ociimage builds slipway's container images without a container engine: one static Go
// binary on an empty base, as the Dockerfile's distroless stages do, written as an OCI image
// (one per platform, an image index for several) to a registry, an OCI layout directory or a
// tarball `docker load` reads. `make image` runs it through hack/image (docs/manager.md, Install
// in a cluster).
//
// An image has two layers. The base holds what a static binary may look for: /etc/passwd and
// /etc/group naming root and nonroot (65532), /etc/nsswitch.conf, the CA bundle at
// /etc/ssl/certs/ca-certificates.crt when one is given, /home/nonroot owned by 65532 and a
// sticky /tmp. The second holds the binary, mode 0755, owned by root. The image runs as
// 65532:65532 with the binary as its entrypoint. Every time stamp is Spec.Created, so the same
// binary and Spec give the same digest.
package ociimage

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: distroless's nonroot.
const (
	UID      = 65532
	User     = "65532:65532"
	HomeDir  = "/home/nonroot"
	CAPath   = "/etc/ssl/certs/ca-certificates.crt"
	userName = "nonroot"
)

// Spec describes one platform's image.
type Spec struct {
	// Binary is the executable's file on disk: a statically linked ELF for Platform.
	Binary string
	// Path is where the binary goes in the image and the entrypoint, e.g. "/manager".
	Path string
	// Platform is the binary's; only linux.
	Platform v1.Platform
	// Labels go into the image config (org.opencontainers.image.* and any other).
	Labels map[string]string
	// Created is the image's creation time and every file's modification time (whole seconds).
	Created time.Time
	// CABundle, when not empty, is installed at CAPath (and named by $SSL_CERT_FILE).
	CABundle []byte
}

// Build returns the image Spec describes, after checking that the binary runs on an empty base:
// an ELF executable for the platform's architecture with no program interpreter (static).
func Build(s Spec) (v1.Image, error) {
	if !path.IsAbs(s.Path) || path.Clean(s.Path) != s.Path || s.Path == "/" {
		return nil, fmt.Errorf("the binary's path in the image %q must be an absolute file path such as /manager", s.Path)
	}
	if s.Platform.OS != "linux" {
		return nil, fmt.Errorf("platform %s: only linux images are built", s.Platform.String())
	}
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(bin, s.Platform.Architecture); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Binary, err)
	}
	created := s.Created.UTC().Truncate(time.Second)
	base, err := layer(baseFiles(s), created)
	if err != nil {
		return nil, err
	}
	app, err := layer([]file{{name: strings.TrimPrefix(s.Path, "/"), mode: 0o755, data: bin}}, created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, app)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant, s.Platform.OSVersion
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{s.Path},
		WorkingDir: HomeDir,
		Env:        env(s),
		Labels:     s.Labels,
	}
	cf.History = []v1.History{
		{Created: cf.Created, CreatedBy: "slipway ociimage: base files (passwd, group, nsswitch.conf, CA bundle, home, tmp)"},
		{Created: cf.Created, CreatedBy: "slipway ociimage: " + s.Path},
	}
	return mutate.ConfigFile(img, cf)
}

// Index returns an image index of images, one per platform (each image's config names it).
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, img := range images {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		p := cf.Platform()
		if seen[p.String()] {
			return nil, fmt.Errorf("two images for platform %s", p.String())
		}
		seen[p.String()] = true
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	return idx, nil
}

func env(s Spec) []string {
	e := []string{"HOME=" + HomeDir}
	if len(s.CABundle) > 0 {
		e = append(e, "SSL_CERT_FILE="+CAPath)
	}
	return e
}

// elfMachines maps GOARCH to the ELF machine of its executables.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM, "386": elf.EM_386,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV, "loong64": elf.EM_LOONGARCH,
}

// checkStatic fails unless bin is an ELF executable for arch with no program interpreter.
func checkStatic(bin []byte, arch string) error {
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("unsupported architecture %q", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer func() { _ = f.Close() }()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("ELF type %s is not an executable", f.Type)
	}
	if f.Machine != want {
		return fmt.Errorf("built for %s, not for %s (%s): set GOARCH", f.Machine, arch, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it names a program interpreter): build it with CGO_ENABLED=0, " +
				"the image has no C library")
		}
	}
	return nil
}

// file is one entry of a layer: a directory when dir is set.
type file struct {
	name     string
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

func baseFiles(s Spec) []file {
	files := []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", userName, UID, UID, userName, HomeDir)},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", userName, UID)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
	}
	if len(s.CABundle) > 0 {
		files = append(files,
			file{name: "etc/ssl", mode: 0o755, dir: true},
			file{name: "etc/ssl/certs", mode: 0o755, dir: true},
			file{name: strings.TrimPrefix(CAPath, "/"), mode: 0o644, data: s.CABundle})
	}
	return append(files,
		file{name: "home", mode: 0o755, dir: true},
		file{name: strings.TrimPrefix(HomeDir, "/"), mode: 0o700, uid: UID, gid: UID, dir: true},
		file{name: "tmp", mode: 0o1777, dir: true})
}

// layer is a gzip-compressed OCI layer of files, in order (parents first), each modified at
// mtime.
func layer(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, Format: tar.FormatUSTAR, ModTime: mtime}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
}
