package devenv

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/slipway-dev/slipway/internal/registry"
)

// newRegistryHandler is an in-memory OCI distribution registry (go-containerregistry) that logs
// each request to logPath.
func newRegistryHandler(logPath string) http.Handler {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		out = os.Stderr
	}
	return ggcrregistry.New(ggcrregistry.Logger(log.New(out, "", log.LstdFlags)))
}

// The sample bundle config/samples deploys.
const sampleRepo = "samples/hello"

var sampleTags = []string{"1.0.0", "1.1.0", "2.0.0-rc.1"}

// publishSampleBundle pushes a real Helm chart artifact, several semver tags of it, to the local
// registry, as `werf bundle publish` would.
func publishSampleBundle(ctx context.Context, addr string) error {
	for _, tag := range sampleTags {
		ref := addr + "/" + sampleRepo + ":" + tag
		if _, err := registry.PushChart(ctx, ref, registry.MinimalChart("hello", tag), true, nil); err != nil {
			return fmt.Errorf("publishing the sample bundle: %w", err)
		}
	}
	return nil
}
