package engine

import (
	"context"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestSubmit_BakeWindow: a request's bakeWindow is stored on the deployment and shown by its dry
// run; without one the deployment gets the engine's BakeWindow (--bake-window); PT0S stores
// none; a bad bakeWindow is a 400 on bakeWindow, from Submit and from DryRun alike.
func TestSubmit_BakeWindow(t *testing.T) {
	h := newHarness(t, []target{{Name: "bake-1", Environment: store.EnvironmentDev, Server: single(t)}},
		func(c *Config) { c.BakeWindow = 40 * time.Minute })
	h.operator("bakeop", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	const base = `{"operator": "bakeop", "version": "1.0.0", "clusters": ["bake-1"], "strategy": "Direct"`

	for body, want := range map[string]string{base + `}`: "PT40M", base + `, "bakeWindow": "PT5M"}`: "PT5M", base + `, "bakeWindow": "PT0S"}`: "PT0S"} {
		dry, err := h.dryRun(body)
		if err != nil || dry.BakeWindow != want {
			t.Errorf("%s: dry run bakeWindow %q (%v), want %q", body, dry.BakeWindow, err, want)
		}
	}
	for body, field := range map[string]string{
		base + `, "bakeWindow": "P2D"}`:   "bakeWindow",
		base + `, "bakeWindow": "-PT1M"}`: "bakeWindow",
		base + `, "bakeWindow": "15m"}`:   "bakeWindow",
	} {
		for what, err := range map[string]error{"submit": h.submitErr(body), "dry run": func() error { _, err := h.dryRun(body); return err }()} {
			if e, ok := invalid.As(err); !ok || e.Field != field {
				t.Errorf("%s %s: error %v, want *invalid.Error on %s", what, body, err, field)
			}
		}
	}

	for body, want := range map[string]time.Duration{base + `, "bakeWindow": "PT1M30.5S"}`: 90*time.Second + 500*time.Millisecond, base + `}`: 40 * time.Minute, base + `, "bakeWindow": "PT0S"}`: 0} {
		d := h.submit(body)
		got, err := h.store.DeploymentGetByID(context.Background(), d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.BakeWindow != want {
			t.Errorf("%s: stored bake window %s, want %s", body, got.BakeWindow, want)
		}
		if _, err := h.eng.Cancel(context.Background(), d.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		h.waitStatus(d.ID, store.DeploymentCancelled)
	}
}

// TestConfig_BakeWindow: the engine's BakeWindow left 0 is the default (15 minutes), a negative
// one none (what --bake-window 0 sets), and one over a day is refused.
func TestConfig_BakeWindow(t *testing.T) {
	st := newHarness(t, nil, nil).store
	for in, want := range map[time.Duration]time.Duration{0: DefaultBakeWindow, -1: -1, time.Hour: time.Hour} {
		c, err := Config{Store: st, BakeWindow: in}.withDefaults()
		if err != nil || c.BakeWindow != want {
			t.Errorf("BakeWindow %s: %s, %v; want %s", in, c.BakeWindow, err, want)
		}
	}
	if _, err := (Config{Store: st, BakeWindow: 25 * time.Hour}).withDefaults(); err == nil {
		t.Error("a bake window over a day was accepted")
	}
}
