package engine

import (
	"context"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/operators/sourceauth"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestPrivateChartSource: the engine downloads an operator's chart from a repository that wants
// HTTP Basic with the operator's credentials, sealed in the store and opened through sourceauth,
// and installs it on the real control plane.
func TestPrivateChartSource(t *testing.T) {
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := clusters.ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		c.Credentials = sourceauth.Lookup(c.Store, keys)
	})
	h.repo = charttest.ServePrivateRepository(t, charttest.Auth{Username: "ci", Password: "s3cret-engine"})
	op := h.operator("private", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	ctx := context.Background()
	ct, kid, err := sourceauth.Seal(keys, op.ID, operators.Credentials{Username: "ci", Password: "s3cret-engine"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.OperatorConfigSet(ctx, &store.OperatorConfigSetParams{Now: time.Now(),
		OperatorConfig: store.OperatorConfig{OperatorID: op.ID, CredentialsCiphertext: ct, KeyID: kid}}); err != nil {
		t.Fatal(err)
	}
	h.start()

	d := h.submit(`{"operator": "private", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	rel, err := install.Status(ctx, h.admin["dev-1"], "private", "op-private")
	if err != nil || rel.ChartVersion != "1.0.0" {
		t.Fatalf("release %+v, %v; want 1.0.0", rel, err)
	}
	if h.repo.Refused() != 0 {
		t.Fatalf("the repository refused %d requests: the engine read it without the credentials", h.repo.Refused())
	}
}
