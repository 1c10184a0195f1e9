package catalyst

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
)

func parseFlags(args ...string) (*Config, error) {
	cfg := &Config{}
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.bindFlags(fs)
	return cfg, fs.Parse(args)
}

// TestFlags_RenderLimitsReachTheEngine: every render flag lands in the RenderLimits the deploy
// engine is made with, and without them the limits are the engine's defaults.
func TestFlags_RenderLimitsReachTheEngine(t *testing.T) {
	cfg, err := parseFlags("--catalyst-render-timeout=45s", "--catalyst-render-max-bytes=1000", "--catalyst-render-max-memory=2000",
		"--catalyst-render-concurrency=3", "--catalyst-render-lookup-timeout=3s", "--catalyst-render-lookup-max-bytes=65536")
	if err != nil {
		t.Fatal(err)
	}
	want := deploy.RenderLimits{Timeout: 45 * time.Second, MaxBytes: 1000, MaxMemory: 2000, Concurrency: 3,
		LookupTimeout: 3 * time.Second, LookupMaxBytes: 65536}
	if got := cfg.renderLimits(); got != want {
		t.Errorf("RenderLimits %+v, want %+v", got, want)
	}
	cfg, err = parseFlags()
	if err != nil {
		t.Fatal(err)
	}
	want = deploy.RenderLimits{Timeout: deploy.DefaultRenderTimeout, MaxBytes: deploy.DefaultRenderMaxBytes,
		MaxMemory: deploy.DefaultRenderMaxMemory, Concurrency: deploy.DefaultRenderConcurrency,
		LookupTimeout: deploy.DefaultLookupTimeout, LookupMaxBytes: deploy.DefaultLookupMaxBytes}
	if got := cfg.renderLimits(); got != want {
		t.Errorf("default RenderLimits %+v, want %+v", got, want)
	}
}

// TestFlags_RefuseALookupWithNoLimit: a lookup limit that is zero, negative or not a number is
// refused when the command line is parsed, with the flag named.
func TestFlags_RefuseALookupWithNoLimit(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"--catalyst-render-lookup-timeout=0s", "0s is not a positive duration"},
		{"--catalyst-render-lookup-timeout=-1s", "-1s is not a positive duration"},
		{"--catalyst-render-lookup-timeout=10", "missing unit"},
		{"--catalyst-render-lookup-max-bytes=0", "0 is not a positive number of bytes"},
		{"--catalyst-render-lookup-max-bytes=-4096", "-4096 is not a positive number of bytes"},
		{"--catalyst-render-lookup-max-bytes=4Mi", "not a whole number of bytes"},
	} {
		_, err := parseFlags(tc.arg)
		flagName := strings.TrimPrefix(strings.SplitN(tc.arg, "=", 2)[0], "-")
		if err == nil || !strings.Contains(err.Error(), flagName) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s and saying %q", tc.arg, err, flagName, tc.want)
		}
	}
}

// TestFlags_NamespaceAnnotations: --catalyst-namespace-annotation collects KEY=VALUE pairs (a
// value may hold "="), and refuses a malformed pair, an invalid key and a key of the operator's
// own domain when the command line is parsed.
func TestFlags_NamespaceAnnotations(t *testing.T) {
	cfg, err := parseFlags("--catalyst-namespace-annotation=scheduler.alpha.kubernetes.io/node-selector=pool=previews",
		"--catalyst-namespace-annotation=example.com/owner=platform")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"scheduler.alpha.kubernetes.io/node-selector": "pool=previews", "example.com/owner": "platform"}
	if len(cfg.NamespaceAnnotations) != 2 || cfg.NamespaceAnnotations["scheduler.alpha.kubernetes.io/node-selector"] != "pool=previews" ||
		cfg.NamespaceAnnotations["example.com/owner"] != "platform" {
		t.Errorf("annotations %v, want %v", cfg.NamespaceAnnotations, want)
	}
	for _, tc := range []struct{ arg, want string }{
		{"no-value", "want KEY=VALUE"},
		{"bad key/x=1", "annotation key"},
		{"catalyst.dev/branch=main", "operator's own domain"},
		{"policy.catalyst.catalyst.dev/host=evil.example.com", "operator's own domain"},
	} {
		_, err := parseFlags("--catalyst-namespace-annotation=" + tc.arg)
		if err == nil || !strings.Contains(err.Error(), "catalyst-namespace-annotation") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming the flag and saying %q", tc.arg, err, tc.want)
		}
	}
}
