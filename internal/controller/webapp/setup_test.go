package webapp_test

import (
	"flag"
	"testing"

	"github.com/slipway-dev/slipway/internal/controller/webapp"
)

// TestController_Flags: the WebApp system registers its flags (and its webhooks' bound) under
// --webapp-, with the documented defaults, and they parse.
func TestController_Flags(t *testing.T) {
	c := webapp.Controller()
	if c.Name != "webapp" || c.Setup == nil {
		t.Fatalf("controller %q without Setup", c.Name)
	}
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	c.BindFlags(fs)
	for name, def := range map[string]string{
		"webapp-concurrency":       "8",
		"webapp-resync-period":     "30s",
		"webapp-progress-deadline": "10m0s",
		"webapp-retry-base-delay":  "1s",
		"webapp-retry-max-delay":   "5m0s",
		"webapp-max-replicas":      "100",
	} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("no flag --%s", name)
			continue
		}
		if f.DefValue != def {
			t.Errorf("--%s defaults to %s, want %s", name, f.DefValue, def)
		}
	}
	if err := fs.Parse([]string{"--webapp-concurrency=2", "--webapp-resync-period=1m"}); err != nil {
		t.Fatal(err)
	}
}
