package operators

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

func TestHTTPDiscover(t *testing.T) {
	repo := charttest.ServeRepository(t, allVersions()...)
	c := newCharts(t, Options{})
	ctx := context.Background()
	ref := ChartRef{Repository: repo.URL, Name: chartName}

	got, err := c.Discover(ctx, ref, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2.0.0", "1.1.0", "1.0.0"}; !slices.Equal(versionNames(got), want) {
		t.Fatalf("versions %v, want %v", versionNames(got), want)
	}
	if got[0].AppVersion != "v2.0.0" || !strings.HasPrefix(got[0].Digest, "sha256:") || len(got[0].Digest) != len("sha256:")+64 {
		t.Fatalf("newest version %+v: want appVersion v2.0.0 and a sha256 digest", got[0])
	}

	filtered, err := c.Discover(ctx, ref, "< 2")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1.1.0", "1.0.0"}; !slices.Equal(versionNames(filtered), want) {
		t.Fatalf("filtered versions %v, want %v", versionNames(filtered), want)
	}

	// A trailing slash on the repository URL is the same repository.
	if _, err := c.Discover(ctx, ChartRef{Repository: repo.URL + "/", Name: chartName}, ""); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPDiscoverErrors(t *testing.T) {
	repo := charttest.ServeRepository(t, allVersions()...)
	notIndex := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))
	t.Cleanup(notIndex.Close)
	empty := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(empty.Close)
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(private.Close)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	t.Cleanup(broken.Close)
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); slow.Close() })
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	c := newCharts(t, Options{Timeout: 2 * time.Second})
	small := newCharts(t, Options{MaxIndexBytes: 512})
	for _, tc := range []struct {
		name          string
		charts        *Charts
		ref           ChartRef
		filter        string
		field, reason string
	}{
		{"ftp scheme", c, ChartRef{Repository: "ftp://example.com/charts", Name: chartName}, "", "chart.repository", "format"},
		{"no scheme", c, ChartRef{Repository: "example.com/charts", Name: chartName}, "", "chart.repository", "format"},
		{"empty repository", c, ChartRef{Repository: "", Name: chartName}, "", "chart.repository", "required"},
		{"credentials in URL", c, ChartRef{Repository: "https://user:secret@example.com/charts", Name: chartName}, "", "chart.repository", "format"},
		{"empty name", c, ChartRef{Repository: repo.URL, Name: ""}, "", "chart.name", "required"},
		{"name with slash", c, ChartRef{Repository: repo.URL, Name: "a/b"}, "", "chart.name", "format"},
		{"unreachable", c, ChartRef{Repository: closed.URL, Name: chartName}, "", "chart.repository", "unreachable"},
		{"timeout", c, ChartRef{Repository: slow.URL, Name: chartName}, "", "chart.repository", "unreachable"},
		{"server error", c, ChartRef{Repository: broken.URL, Name: chartName}, "", "chart.repository", "unreachable"},
		{"unauthorized", c, ChartRef{Repository: private.URL, Name: chartName}, "", "chart.repository", "unauthorized"},
		{"no index.yaml", c, ChartRef{Repository: empty.URL, Name: chartName}, "", "chart.repository", "notFound"},
		{"not an index", c, ChartRef{Repository: notIndex.URL, Name: chartName}, "", "chart.repository", "format"},
		{"index too large", small, ChartRef{Repository: repo.URL, Name: chartName}, "", "chart.repository", "tooLarge"},
		{"unknown chart", c, ChartRef{Repository: repo.URL, Name: "nope"}, "", "chart.name", "notFound"},
		{"bad filter", c, ChartRef{Repository: repo.URL, Name: chartName}, ">= banana", "versions", "format"},
		{"filter keeps nothing", c, ChartRef{Repository: repo.URL, Name: chartName}, ">= 3", "versions", "noMatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.charts.Discover(context.Background(), tc.ref, tc.filter)
			wantInvalid(t, err, tc.field, tc.reason)
		})
	}
}

func TestHTTPFetch(t *testing.T) {
	repo := charttest.ServeRepository(t, allVersions()...)
	c := newCharts(t, Options{})
	ref := ChartRef{Repository: repo.URL, Name: chartName}

	ch, err := c.Fetch(context.Background(), ref, "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Chart.Metadata.Name != chartName || ch.Chart.Metadata.Version != "1.1.0" || ch.Version.Version != "1.1.0" {
		t.Fatalf("fetched %s %s (version %+v), want %s 1.1.0", ch.Chart.Metadata.Name, ch.Chart.Metadata.Version, ch.Version, chartName)
	}
	if len(ch.Archive) == 0 || len(ch.Chart.Templates) == 0 {
		t.Fatalf("fetched chart has %d archive bytes and %d templates", len(ch.Archive), len(ch.Chart.Templates))
	}

	if !strings.HasPrefix(ch.Version.Digest, "sha256:") || ch.Version.AppVersion != "v1.1.0" {
		t.Fatalf("fetched version %+v: want the index's digest and appVersion", ch.Version)
	}
	// A short version resolves by semver equality, as Helm does.
	if short, err := c.Fetch(context.Background(), ref, "2.0"); err != nil || short.Chart.Metadata.Version != "2.0.0" {
		t.Fatalf("Fetch 2.0: %v, %v; want 2.0.0", short, err)
	}
	// A version as stored (no source location) fetches too.
	if stored, err := c.FetchVersion(context.Background(), ref, Version{Version: "1.0.0"}); err != nil || stored.Chart.Metadata.Version != "1.0.0" {
		t.Fatalf("FetchVersion 1.0.0: %v, %v", stored, err)
	}

	_, err = c.Fetch(context.Background(), ref, "9.9.9")
	wantInvalid(t, err, "version", "notFound")
	_, err = c.Fetch(context.Background(), ref, "one")
	wantInvalid(t, err, "version", "format")

	small := newCharts(t, Options{MaxArchiveBytes: 100})
	_, err = small.Fetch(context.Background(), ref, "1.0.0")
	wantInvalid(t, err, "version", "tooLarge")
}
