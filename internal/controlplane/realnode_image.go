package controlplane

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"time"
)

// Images of the real node. They are built here, from busybox-static, as OCI image layout archives
// and imported into the node's containerd: nothing is ever pulled.
const (
	// PauseImage is the real node's pod sandbox image (a busybox that sleeps).
	PauseImage = "slipway.local/pause:1"
	// HTTPTestImage serves HTTPTestBody over HTTP on port 8080 (busybox httpd): a test image.
	HTTPTestImage = "slipway.local/httpd-test:1"
	// HTTPTestBody is what HTTPTestImage answers at "/".
	HTTPTestBody = "slipway real node\n"
)

// busyboxPath is Debian's busybox-static (hack/deps.sh).
const busyboxPath = "/bin/busybox"

// imageFile is one file of an image's single layer.
type imageFile struct {
	mode    int64
	data    []byte
	symlink string // a symlink to this target when set
	dir     bool
}

// OCIImage describes a one-layer image to build.
type OCIImage struct {
	Ref        string
	Entrypoint []string
	Cmd        []string
	files      map[string]imageFile
}

// busyboxImage is an image holding busybox at /bin/busybox and /bin/sh, plus the given files.
func busyboxImage(ref string, entrypoint []string, extra map[string]string) (*OCIImage, error) {
	bb, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, fmt.Errorf("busybox-static is needed for the real node's images (hack/deps.sh): %w", err)
	}
	// Debian's busybox package is linked dynamically: in an image without a libc it cannot start.
	if f, err := elf.NewFile(bytes.NewReader(bb)); err != nil {
		return nil, fmt.Errorf("%s: %w", busyboxPath, err)
	} else if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		return nil, fmt.Errorf("%s is linked dynamically: install busybox-static (hack/deps.sh)", busyboxPath)
	}
	files := map[string]imageFile{
		"bin":         {dir: true, mode: 0o755},
		"bin/busybox": {mode: 0o755, data: bb},
		"bin/sh":      {symlink: "busybox"},
		"tmp":         {dir: true, mode: 0o1777},
	}
	for name, content := range extra {
		files[path.Dir(name)] = imageFile{dir: true, mode: 0o755}
		files[name] = imageFile{mode: 0o644, data: []byte(content)}
	}
	return &OCIImage{Ref: ref, Entrypoint: entrypoint, files: files}, nil
}

// realNodeImages are the images every real node gets.
func realNodeImages() ([]*OCIImage, error) {
	pause, err := busyboxImage(PauseImage, []string{"/bin/busybox", "sleep", "2147483647"}, nil)
	if err != nil {
		return nil, err
	}
	httpd, err := busyboxImage(HTTPTestImage, []string{"/bin/busybox", "httpd", "-f", "-v", "-p", "8080", "-h", "/www"},
		map[string]string{"www/index.html": HTTPTestBody})
	if err != nil {
		return nil, err
	}
	return []*OCIImage{pause, httpd}, nil
}

// WriteArchive writes the image as an OCI image layout tar archive (what `ctr images import`
// reads). The archive is reproducible: same files, same bytes.
func (img *OCIImage) WriteArchive(file string) error {
	layer, err := img.layer()
	if err != nil {
		return err
	}
	layerDigest := digest(layer)
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config": map[string]any{
			"Entrypoint": img.Entrypoint,
			"Cmd":        img.Cmd,
			"Env":        []string{"PATH=/bin"},
			"WorkingDir": "/",
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", config),
		"layers":        []any{descriptor("application/vnd.oci.image.layer.v1.tar", layer)},
	})
	if err != nil {
		return err
	}
	md := descriptor("application/vnd.oci.image.manifest.v1+json", manifest)
	md["platform"] = map[string]string{"architecture": "amd64", "os": "linux"}
	md["annotations"] = map[string]string{
		"io.containerd.image.name":          img.Ref,
		"org.opencontainers.image.ref.name": img.Ref,
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []any{md},
	})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	for _, blob := range [][]byte{layer, config, manifest} {
		if err := add("blobs/sha256/"+digest(blob)[len("sha256:"):], blob); err != nil {
			return err
		}
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := add("index.json", index); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o644)
}

// layer is the image's one layer, an uncompressed tar.
func (img *OCIImage) layer() ([]byte, error) {
	names := make([]string, 0, len(img.files))
	for n := range img.files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		f := img.files[n]
		h := &tar.Header{Name: n, Mode: f.mode, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		switch {
		case f.dir:
			h.Name, h.Typeflag, h.Size = n+"/", tar.TypeDir, 0
		case f.symlink != "":
			h.Typeflag, h.Linkname, h.Mode, h.Size = tar.TypeSymlink, f.symlink, 0o777, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digest(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

func descriptor(mediaType string, b []byte) map[string]any {
	return map[string]any{"mediaType": mediaType, "digest": digest(b), "size": len(b)}
}
