// Package devimage builds the operator's container image from this repository's source, for
// tests and make dev: `go build` of ./cmd/operator (static, the released binary's flags) put into
// an image by internal/ociimage exactly as `make image` does (hack/image): user 65532, HOME
// /home/nonroot, the machine's CA bundle at /etc/ssl/certs/ca-certificates.crt, the binary at
// /operator as the entrypoint. The image is imported into a real node under a local name
// (OperatorRef) and never pulled.
//
// It lives apart from internal/ociimage because it runs the Go toolchain on the repository's
// source: ociimage turns given binaries into images and is what the release build uses; this
// package is only for the development loop and the tests.
package devimage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/slipway-dev/slipway/internal/ociimage"
)

// OperatorRef is the local name the operator image is imported under (imagePullPolicy Never or
// IfNotPresent): a registry name that resolves nowhere, so a pull could never succeed.
const (
	OperatorRepository = "slipway.local/slipway-operator"
	OperatorTag        = "dev"
	OperatorRef        = OperatorRepository + ":" + OperatorTag
)

// OperatorPackage is the operator's main package relative to the module root.
const OperatorPackage = "./cmd/operator"

// caBundle is the bundle `make image` installs (hack/image's --ca-bundle default).
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// buildFlags are the released binary's (the Dockerfile's and make image's).
var buildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// Operator builds ./cmd/operator of the module around the working directory for linux on this
// machine's architecture and returns its image.
func Operator(ctx context.Context) (v1.Image, error) {
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	return Build(ctx, root, OperatorPackage, "/operator", "slipway-operator")
}

// Build builds the main package pkg of the module at root (CGO_ENABLED=0) and returns it as an
// image with the binary at path, titled title.
func Build(ctx context.Context, root, pkg, path, title string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "slipway-devimage-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, filepath.Base(path))
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, buildFlags...), "-o", bin, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	return FromBinary(bin, path, title)
}

// FromBinary returns the image of a static binary already built (make dev's --operator, a test's
// build) with the binary at path, titled title. Created is fixed, so the same binary gives the
// same digest and a re-import is a no-op for containerd.
func FromBinary(bin, path, title string) (v1.Image, error) {
	ca, err := os.ReadFile(caBundle)
	if err != nil {
		return nil, fmt.Errorf("the image's CA bundle: %w (Debian's ca-certificates package provides it)", err)
	}
	return ociimage.Build(ociimage.Spec{
		Binary:   bin,
		Path:     path,
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Labels: map[string]string{
			"org.opencontainers.image.title":       title,
			"org.opencontainers.image.description": "slipway " + filepath.Base(path) + ", built from the working tree",
			"org.opencontainers.image.version":     OperatorTag,
		},
		Created:  time.Unix(0, 0),
		CABundle: ca,
	})
}

// ModuleRoot returns the nearest directory at or above the working directory that holds a go.mod.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("not inside the slipway repository (no go.mod at or above " + wd + "): run make dev, or the tests, from it")
		}
	}
}
