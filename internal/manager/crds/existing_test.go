package crds

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// TestValidateExisting installs the Base Widget CRD in a real API server, creates objects that
// Base accepts, and checks them against the Compatible and Breaking schemas: Breaking refuses
// (or strips) exactly the four objects that use what it removes or tightens.
func TestValidateExisting(t *testing.T) {
	c := newCluster(t)
	base := charttest.Widget(charttest.Base)
	c.installCRD(t, base)
	c.namespace(t, "team-a")
	c.namespace(t, "team-b")
	c.create(t, base, "team-a", "plain", map[string]any{"size": int64(1), "color": "red"})
	c.create(t, base, "team-a", "with-tls", map[string]any{"size": int64(2), "color": "green", "tls": map[string]any{"secretName": "s"}})
	c.create(t, base, "team-b", "plain", map[string]any{"size": int64(100), "name": "abc"})
	c.create(t, base, "team-a", "legacy", map[string]any{"size": int64(3), "legacy": "old"})
	c.create(t, base, "team-a", "counted", map[string]any{"size": int64(4), "count": int64(3)})
	c.create(t, base, "team-b", "tls-without-secret", map[string]any{"size": int64(5), "tls": map[string]any{"insecure": true}})
	c.create(t, base, "team-b", "blue", map[string]any{"size": int64(6), "color": "blue"})
	ctx := context.Background()

	res, err := ValidateExisting(ctx, env.Config, charttest.Widget(charttest.Compatible))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Installed || res.Objects != 7 || len(res.Invalid) != 0 {
		t.Fatalf("compatible schema: installed %v, %d objects, invalid %+v; want installed, 7, none", res.Installed, res.Objects, res.Invalid)
	}

	res, err = ValidateExistingWith(ctx, c.dyn, charttest.Widget(charttest.Breaking))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Invalid
	want := []struct{ ns, name, errPart string }{
		{"team-a", "counted", "spec.count"},
		{"team-a", "legacy", "spec.legacy"},
		{"team-b", "blue", "spec.color"},
		{"team-b", "tls-without-secret", "spec.tls.secretName"},
	}
	if len(got) != len(want) {
		t.Fatalf("invalid objects %+v, want %d: %v", got, len(want), want)
	}
	for _, g := range got {
		t.Logf("%s/%s: %q", g.Namespace, g.Name, g.Errors)
	}
	for i, w := range want {
		g := got[i]
		if g.Namespace != w.ns || g.Name != w.name || g.Version != "v1alpha1" {
			t.Fatalf("invalid object %d is %s/%s@%s, want %s/%s@v1alpha1 (all: %+v)", i, g.Namespace, g.Name, g.Version, w.ns, w.name, got)
		}
		if len(g.Errors) != 1 || !strings.Contains(g.Errors[0], w.errPart) {
			t.Fatalf("%s/%s errors %q, want one about %s", g.Namespace, g.Name, g.Errors, w.errPart)
		}
	}
	if !slices.ContainsFunc(got[0].Errors, func(e string) bool { return strings.Contains(e, "string") }) {
		t.Fatalf("type error %q does not name the new type", got[0].Errors)
	}

	// A CRD the cluster does not have has no objects.
	res, err = ValidateExistingWith(ctx, c.dyn, charttest.Gadget(charttest.Breaking))
	if err != nil || res.Installed || res.Objects != 0 || len(res.Invalid) != 0 {
		t.Fatalf("absent CRD: %+v, %v; want not installed, no objects", res, err)
	}
}

func TestValidateExistingBadDefinition(t *testing.T) {
	c := newCluster(t)
	noSchema := charttest.Widget(charttest.Breaking)
	noSchema.Spec.Versions[0].Schema = nil
	noStorage := charttest.Widget(charttest.Breaking)
	noStorage.Spec.Versions[0].Storage = false
	if _, err := ValidateExistingWith(context.Background(), c.dyn, noSchema); !isInvalidDefinition(err) {
		t.Fatalf("no schema: %v, want an invalid definition", err)
	}
	if _, err := ValidateExistingWith(context.Background(), c.dyn, noStorage); !isInvalidDefinition(err) {
		t.Fatalf("no storage version: %v, want an invalid definition", err)
	}
	if _, err := ValidateExistingWith(context.Background(), c.dyn, nil); !isInvalidDefinition(err) {
		t.Fatalf("nil: %v, want an invalid definition", err)
	}
}

func isInvalidDefinition(err error) bool {
	e, ok := invalid.As(err)
	return ok && e.Field == "definition"
}
