package operators

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

func TestPollHTTPAsksWithTheETag(t *testing.T) {
	charts := allVersions()
	repo := charttest.ServeRepository(t, charts[0], charts[1])
	c := newCharts(t, Options{})
	ctx := context.Background()
	ref := ChartRef{Repository: repo.URL, Name: chartName}

	first, err := c.Poll(ctx, ref, PollState{})
	if err != nil {
		t.Fatal(err)
	}
	if first.NotModified || first.Validators.ETag == "" || !slices.Equal(versionNames(first.Versions), []string{"1.1.0", "1.0.0"}) {
		t.Fatalf("first poll: %+v", first)
	}
	same, err := c.Poll(ctx, ref, PollState{Validators: first.Validators})
	if err != nil {
		t.Fatal(err)
	}
	if !same.NotModified || same.Versions != nil || same.Validators != first.Validators || repo.NotModified() != 1 {
		t.Fatalf("unchanged index: %+v, 304s %d", same, repo.NotModified())
	}

	repo.Add(t, charts[2])
	repo.Remove(t, chartName, "1.0.0")
	changed, err := c.Poll(ctx, ref, PollState{Validators: first.Validators})
	if err != nil {
		t.Fatal(err)
	}
	if changed.NotModified || changed.Validators.ETag == first.Validators.ETag ||
		!slices.Equal(versionNames(changed.Versions), []string{"2.0.0", "1.1.0"}) {
		t.Fatalf("changed index: %+v", changed)
	}
	if repo.NotModified() != 1 || repo.IndexReads() != 3 {
		t.Fatalf("index reads %d (304: %d), want 3 (1)", repo.IndexReads(), repo.NotModified())
	}
	// What a refresh then fetches is the version as polled: the index's digest is checked.
	vc, err := c.InspectVersion(ctx, ref, changed.Versions[0])
	if err != nil {
		t.Fatal(err)
	}
	if vc.Version.Version != "2.0.0" || len(vc.CRDs) != 2 {
		t.Fatalf("inspected %s with %d CRDs, want 2.0.0 with the Widget and Gadget CRDs", vc.Version.Version, len(vc.CRDs))
	}

	// Errors are Discover's.
	_, err = c.Poll(ctx, ChartRef{Repository: repo.URL, Name: "nope"}, PollState{Validators: first.Validators})
	wantInvalid(t, err, "chart.name", "notFound")
	_, err = c.Poll(ctx, ChartRef{Repository: "ftp://x", Name: chartName}, PollState{})
	wantInvalid(t, err, "chart.repository", "format")
}

// A repository that gives Last-Modified (a file server) is asked If-Modified-Since.
func TestPollHTTPAsksIfModifiedSince(t *testing.T) {
	index := indexOf(t, allVersions()[0])
	modified := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var conditional []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conditional = append(conditional, r.Header.Get("If-Modified-Since"))
		mu.Unlock()
		http.ServeContent(w, r, "index.yaml", modified, bytes.NewReader(index))
	}))
	t.Cleanup(srv.Close)
	c := newCharts(t, Options{})
	ref := ChartRef{Repository: srv.URL, Name: chartName}
	first, err := c.Poll(context.Background(), ref, PollState{})
	if err != nil {
		t.Fatal(err)
	}
	if first.Validators.LastModified != modified.Format(http.TimeFormat) || first.Validators.ETag != "" {
		t.Fatalf("validators %+v, want Last-Modified %s", first.Validators, modified.Format(http.TimeFormat))
	}
	again, err := c.Poll(context.Background(), ref, PollState{Validators: first.Validators})
	if err != nil {
		t.Fatal(err)
	}
	if !again.NotModified {
		t.Fatalf("second poll: %+v, want not modified", again)
	}
	if want := []string{"", modified.Format(http.TimeFormat)}; !slices.Equal(conditional, want) {
		t.Fatalf("If-Modified-Since sent %q, want %q", conditional, want)
	}
}

// indexOf is the index.yaml of a repository serving files.
func indexOf(t *testing.T, files charttest.ChartFiles) []byte {
	t.Helper()
	repo := charttest.ServeRepository(t, files)
	resp, err := http.Get(repo.URL + "/index.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// countingTransport records the path of every request.
type countingTransport struct {
	mu    sync.Mutex
	paths []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) manifests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, p := range c.paths {
		if i := strings.Index(p, "/manifests/"); i >= 0 {
			out = append(out, p[i+len("/manifests/"):])
		}
	}
	c.paths = nil
	return out
}

// An OCI source has no conditional tag list: a poll lists the tags and reads the manifest of new
// tags only.
func TestPollOCIReadsOnlyNewTags(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	charts := allVersions()
	repository := charttest.PushOCI(t, reg, "charts", charts[0], charts[1])
	tr := &countingTransport{}
	c := newCharts(t, Options{PlainHTTPRegistries: []string{reg.Host}, Transport: tr})
	ctx := context.Background()
	ref := ChartRef{Repository: repository, Name: chartName}

	first, err := c.Poll(ctx, ref, PollState{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.manifests(); len(got) < 2 {
		t.Fatalf("first poll read manifests %v, want those of both tags", got)
	}
	known := map[string]Version{}
	for _, v := range first.Versions {
		known[v.Version] = v
	}
	charttest.PushOCI(t, reg, "charts", charts[2])
	second, err := c.Poll(ctx, ref, PollState{Known: known})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(versionNames(second.Versions), []string{"2.0.0", "1.1.0", "1.0.0"}) {
		t.Fatalf("versions %v", versionNames(second.Versions))
	}
	for _, m := range tr.manifests() {
		if m == "1.0.0" || m == "1.1.0" || m == known["1.0.0"].Digest || m == known["1.1.0"].Digest {
			t.Fatalf("the second poll read the manifest of a known tag: %s", m)
		}
	}
	for _, v := range second.Versions {
		if v.Digest == "" || v.AppVersion != "v"+v.Version {
			t.Fatalf("version %+v: want its digest and appVersion", v)
		}
		if k, ok := known[v.Version]; ok && k.Digest != v.Digest {
			t.Fatalf("known version %s: digest %s, want %s", v.Version, v.Digest, k.Digest)
		}
	}
}

func TestFilterVersions(t *testing.T) {
	vs := []Version{{Version: "2.0.0"}, {Version: "1.2.0"}, {Version: "1.0.0"}}
	got, err := FilterVersions(vs, ">=1.1 <2")
	if err != nil || !slices.Equal(versionNames(got), []string{"1.2.0"}) {
		t.Fatalf("filtered %v, %v", versionNames(got), err)
	}
	if got, err := FilterVersions(vs, ">=3"); err != nil || len(got) != 0 {
		t.Fatalf("nothing matches: %v, %v", got, err)
	}
	_, err = FilterVersions(vs, "not a constraint")
	wantInvalid(t, err, "versions", "format")
}
