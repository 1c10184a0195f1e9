package operators

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

func TestOCIDiscoverAndFetch(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	repository := charttest.PushOCI(t, reg, "charts", allVersions()...)
	// A tag that is not a version is left out.
	registrytest.PushChart(t, reg.Host, "charts/"+chartName, "latest", allVersions()[2])
	c := newCharts(t, Options{PlainHTTPRegistries: []string{reg.Host}})
	ctx := context.Background()
	ref := ChartRef{Repository: repository, Name: chartName}

	got, err := c.Discover(ctx, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2.0.0", "1.1.0", "1.0.0"}; !slices.Equal(versionNames(got), want) {
		t.Fatalf("versions %v, want %v", versionNames(got), want)
	}
	for _, v := range got {
		if v.AppVersion != "v"+v.Version || !strings.HasPrefix(v.Digest, "sha256:") {
			t.Fatalf("version %+v: want appVersion v%s and a manifest digest", v, v.Version)
		}
	}

	ch, err := c.Fetch(ctx, ref, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Chart.Metadata.Name != chartName || ch.Chart.Metadata.Version != "1.0.0" {
		t.Fatalf("fetched %s %s, want %s 1.0.0", ch.Chart.Metadata.Name, ch.Chart.Metadata.Version, chartName)
	}
	if want := got[2]; ch.Version.Digest != want.Digest || ch.Version.AppVersion != want.AppVersion {
		t.Fatalf("fetched version %+v, want digest and appVersion as discovered: %+v", ch.Version, want)
	}
	_, err = c.Fetch(ctx, ref, "1.2.3")
	wantInvalid(t, err, "version", "notFound")

	_, err = c.Discover(ctx, ChartRef{Repository: repository, Name: "nope"}, "")
	wantInvalid(t, err, "chart.name", "notFound")
	_, err = c.Discover(ctx, ChartRef{Repository: repository + ":1.0.0", Name: chartName}, "")
	wantInvalid(t, err, "chart.repository", "format")

	// Without the plain-HTTP exception the registry is spoken to over HTTPS, which it does not
	// serve: unreachable.
	secure := newCharts(t, Options{})
	_, err = secure.Discover(ctx, ref, "")
	wantInvalid(t, err, "chart.repository", "unreachable")
}

func TestOCINoSemverVersion(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	registrytest.PushChart(t, reg.Host, "charts/"+chartName, "latest", allVersions()[0])
	c := newCharts(t, Options{PlainHTTPRegistries: []string{reg.Host}})
	_, err := c.Discover(context.Background(), ChartRef{Repository: "oci://" + reg.Host + "/charts", Name: chartName}, "")
	wantInvalid(t, err, "chart.name", "noVersions")
}
