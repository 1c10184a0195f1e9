package devenv

import (
	"log"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/registry"
)

// newRegistryHandler is an in-memory OCI distribution registry (go-containerregistry) that logs
// each request to logPath.
func newRegistryHandler(logPath string) http.Handler {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		out = os.Stderr
	}
	return registry.New(registry.Logger(log.New(out, "", log.LstdFlags)))
}
