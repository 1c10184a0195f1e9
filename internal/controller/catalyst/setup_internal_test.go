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
