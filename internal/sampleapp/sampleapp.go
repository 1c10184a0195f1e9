// Package sampleapp builds the samples' application into a container image: the program in
// ./server (a static Go HTTP server that answers a greeting with its pod's name and its version,
// and /healthz), built for linux by `go build` and put into an image by internal/ociimage as the
// operator's own images are (user 65532, no shell, nothing written to the root file system), so
// it runs under the restricted Pod Security profile with a read-only root. The WebApp and
// Catalyst tests run it on the real node, and make dev runs the WebApp and preview samples with it.
//
// It is a package of its own under internal/ because three others import it — the WebApp
// controller's tests, the Catalyst controller's tests and internal/devenv — and it imports only
// internal/ociimage: nothing that imports a controller or the dev environment, so no cycle can
// form. The program itself imports nothing of the project (a small image).
package sampleapp

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/slipway-dev/slipway/internal/ociimage"
)

const (
	// Repository is the name the image is imported under on a real node: a registry that
	// resolves nowhere, so the image is never pulled (imagePullPolicy IfNotPresent or Never).
	Repository = "slipway.local/sample-app"
	// DefaultPort is where the server listens unless $PORT or --port says otherwise.
	DefaultPort = 8080
	// EnvGreeting, EnvPort and EnvVersion are the variables the server reads; EnvVersion is set
	// by the image (Image).
	EnvGreeting = "GREETING"
	EnvPort     = "PORT"
	EnvVersion  = "SAMPLE_APP_VERSION"
	// DefaultGreeting is the greeting without $GREETING.
	DefaultGreeting = "hello"
	// HealthPath answers 200 "ok" while the server runs.
	HealthPath = "/healthz"
	// program is the server's main package.
	program = "github.com/slipway-dev/slipway/internal/sampleapp/server"
	// binaryPath is the server's path in the image, its entrypoint.
	binaryPath = "/sample-app"
)

// Ref is the image's local name for a version: Repository:version.
func Ref(version string) string { return Repository + ":" + version }

// Answer is what the server answers at "/" for a greeting, the name of its pod and its version.
func Answer(greeting, pod, version string) string {
	return fmt.Sprintf("%s from %s, version %s\n", greeting, pod, version)
}

// Image builds the server from the module the working directory is in (as tests and make dev
// run) for linux on this machine's architecture and returns its image reporting version. Its
// creation time is fixed: the same source and version give the same digest.
func Image(ctx context.Context, version string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "slipway-sample-app-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "sample-app")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, program)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the sample app (go build %s, from a directory of the slipway module): %w\n%s", program, err, out)
	}
	img, err := ociimage.Build(ociimage.Spec{
		Binary:   bin,
		Path:     binaryPath,
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Labels: map[string]string{
			"org.opencontainers.image.title":   "slipway-sample-app",
			"org.opencontainers.image.version": version,
		},
		Created: time.Unix(0, 0),
	})
	if err != nil {
		return nil, err
	}
	return Versioned(img, version)
}

// Versioned returns img reporting version (the image's $SAMPLE_APP_VERSION) instead: a second
// version of the app without a second build.
func Versioned(img v1.Image, version string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config.Env = slices.DeleteFunc(slices.Clone(cf.Config.Env), func(e string) bool { return strings.HasPrefix(e, EnvVersion+"=") })
	cf.Config.Env = append(cf.Config.Env, EnvVersion+"="+version)
	cf.Config.Labels = maps.Clone(cf.Config.Labels)
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	cf.Config.Labels["org.opencontainers.image.version"] = version
	return mutate.ConfigFile(img, cf)
}
