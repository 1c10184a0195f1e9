package registrytest_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/slipway-dev/slipway/internal/registry"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a plain-HTTP registry client with opts applied.
func newClient(t *testing.T, opts ...func(*registry.Options)) *registry.Client {
	t.Helper()
	o := registry.Options{Insecure: true, Timeout: 10 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	c, err := registry.NewClient(o, registry.NewLimiter(10))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func withCredentials(creds registry.Credentials) func(*registry.Options) {
	return func(o *registry.Options) { o.Credentials = creds }
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestDistribution_ServesPushedBundlesToTheClient(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	for _, tag := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1"} {
		registrytest.PushBundle(t, reg.Host, "org/bundle", tag)
	}
	c := newClient(t)
	ctx := testContext(t)

	list, err := c.ListTags(ctx, reg.Repository("org/bundle"), "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if want := []string{"1.0.0", "1.1.0", "2.0.0-rc.1"}; !slices.Equal(sorted(list.Tags), want) {
		t.Errorf("Tags = %v, want %v", list.Tags, want)
	}
	if list.Requests != 1 {
		t.Errorf("Requests = %d, want 1", list.Requests)
	}

	for ref, want := range map[string]bool{
		reg.Repository("org/bundle:1.1.0"): true,
		reg.Repository("org/bundle:9.9.9"): false,
		reg.Repository("org/other:1.1.0"):  false,
	} {
		got, err := c.ManifestExists(ctx, ref)
		if err != nil || got != want {
			t.Errorf("ManifestExists(%s) = %v, %v; want %v", ref, got, err, want)
		}
	}

	if _, err := c.ListTags(ctx, reg.Repository("org/missing"), ""); !registry.IsNotFound(err) {
		t.Errorf("ListTags of an unknown repository: error = %v, want not found", err)
	}
}

func TestPushChart_PushesAHelmChartArtifact(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	digest := registrytest.PushChart(t, reg.Host, "charts/demo", "0.1.0", registrytest.MinimalChart("demo", "0.1.0"))

	ref, err := name.ParseReference(reg.Repository("charts/demo:0.1.0"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(testContext(t)))
	if err != nil {
		t.Fatalf("pulling the chart: %v", err)
	}
	if got, _ := img.Digest(); got != digest {
		t.Errorf("digest = %s, want %s", got, digest)
	}
	manifest, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if manifest.Config.MediaType != registry.HelmConfigMediaType || len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != registry.HelmChartLayerMediaType {
		t.Fatalf("manifest = %+v, want a Helm chart artifact", manifest)
	}
	config, err := img.RawConfigFile()
	if err != nil || !strings.Contains(string(config), `"name":"demo"`) || !strings.Contains(string(config), `"version":"0.1.0"`) {
		t.Errorf("config = %s, %v; want the chart metadata", config, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	gz, err := gzip.NewReader(rc)
	if err != nil {
		t.Fatalf("the chart layer is not gzip: %v", err)
	}
	var files []string
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the chart tarball: %v", err)
		}
		files = append(files, hdr.Name)
	}
	if want := []string{"demo/Chart.yaml", "demo/templates/configmap.yaml", "demo/values.yaml"}; !slices.Equal(files, want) {
		t.Errorf("chart files = %v, want %v", files, want)
	}
}

// TestDistribution_TagListHasNoETagNorPagination pins what distribution 2.8 does, which is why
// FaultProxy adds ETags: no ETag on tag lists, and n and last are ignored.
func TestDistribution_TagListHasNoETagNorPagination(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	for _, tag := range []string{"a", "b", "c"} {
		registrytest.PushBundle(t, reg.Host, "org/bundle", tag)
	}
	resp, err := http.Get(reg.URL + "/v2/org/bundle/tags/list?n=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != "" || resp.Header.Get("Link") != "" {
		t.Errorf("tag list: %d, ETag %q, Link %q; want 200 without ETag or Link", resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Link"))
	}
	var doc struct{ Tags []string }
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Tags) != 3 {
		t.Errorf("tag list with n=1 = %s, want all three tags", body)
	}
}

func TestFaultProxy_ETagRevalidation(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	registrytest.PushBundle(t, reg.Host, "org/bundle", "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.Host)
	c := newClient(t)
	ctx := testContext(t)
	repo := proxy.Repository("org/bundle")

	first, err := c.ListTags(ctx, repo, "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if first.ETag == "" || first.NotModified {
		t.Fatalf("first list = %+v, want an ETag", first)
	}
	same, err := c.ListTags(ctx, repo, first.ETag)
	if err != nil {
		t.Fatalf("ListTags with ETag: %v", err)
	}
	if !same.NotModified || same.Tags != nil || same.ETag != first.ETag || same.Requests != 1 {
		t.Errorf("unchanged list = %+v, want NotModified with the same ETag after 1 request", same)
	}
	if proxy.Responses(http.StatusNotModified) != 1 {
		t.Errorf("proxy answered 304 %d times, want 1", proxy.Responses(http.StatusNotModified))
	}

	registrytest.PushBundle(t, reg.Host, "org/bundle", "1.1.0")
	changed, err := c.ListTags(ctx, repo, first.ETag)
	if err != nil {
		t.Fatalf("ListTags after a push: %v", err)
	}
	if changed.NotModified || !slices.Equal(sorted(changed.Tags), []string{"1.0.0", "1.1.0"}) || changed.ETag == first.ETag || changed.ETag == "" {
		t.Errorf("changed list = %+v, want both tags and a new ETag", changed)
	}
	if got := proxy.Requests("/v2/org/bundle/tags/list"); got != 3 {
		t.Errorf("proxy saw %d tag list requests, want 3", got)
	}
}

func TestFaultProxy_FaultsBecomeClientErrors(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	registrytest.PushBundle(t, reg.Host, "org/bundle", "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.Host)
	c := newClient(t)
	impatient := newClient(t, func(o *registry.Options) { o.Timeout = 500 * time.Millisecond })
	repo := proxy.Repository("org/bundle")

	tests := []struct {
		rule   registrytest.Rule
		client *registry.Client
		check  func(error) bool
		want   string
	}{
		{rule: registrytest.Rule{Fault: registrytest.ServerError}, check: registry.IsRetryable, want: "500"},
		{rule: registrytest.Rule{Fault: registrytest.Hang}, client: impatient, check: func(err error) bool {
			return registry.IsRetryable(err) && errors.Is(err, context.DeadlineExceeded)
		}, want: "no complete response within 500ms"},
		{rule: registrytest.Rule{Fault: registrytest.ConnectionReset}, check: registry.IsRetryable, want: "GET request failed"},
		{rule: registrytest.Rule{Fault: registrytest.TooManyRequests, RetryAfter: "42"}, check: func(err error) bool {
			d, ok := registry.RetryAfter(err)
			return registry.IsRetryable(err) && ok && d == 42*time.Second
		}, want: "429"},
		{rule: registrytest.Rule{Fault: registrytest.TooManyRequests, RetryAfter: time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, check: func(err error) bool {
			d, ok := registry.RetryAfter(err)
			return ok && d > 50*time.Minute && d <= time.Hour
		}, want: "429"},
		{rule: registrytest.Rule{Fault: registrytest.MalformedJSON}, check: func(err error) bool { return !registry.IsRetryable(err) }, want: "malformed tag list"},
		{rule: registrytest.Rule{Fault: registrytest.HugeBody}, check: func(err error) bool { return !registry.IsRetryable(err) }, want: "exceeds the limit of 4194304 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.rule.Fault.String(), func(t *testing.T) {
			// Every matching request fails until Clear: net/http itself retries a GET once
			// when a reused connection is reset, so a one-shot reset would go unnoticed.
			tt.rule.Match = registrytest.IsTagsList
			proxy.Add(tt.rule)
			client := c
			if tt.client != nil {
				client = tt.client
			}
			_, err := client.ListTags(testContext(t), repo, "")
			proxy.Clear()
			if err == nil {
				t.Fatal("ListTags succeeded, want an error")
			}
			if !tt.check(err) {
				t.Errorf("error %q fails the check", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			// Without the rule the next call passes through.
			if list, err := c.ListTags(testContext(t), repo, ""); err != nil || len(list.Tags) != 1 {
				t.Errorf("ListTags after the fault = %+v, %v; want the tag", list, err)
			}
		})
	}
	if got := proxy.Responses(registrytest.StatusNoResponse); got < 2 {
		t.Errorf("proxy counted %d requests without response, want at least 2 (hang, reset)", got)
	}
}

func TestFaultProxy_FaultsOnManifests(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	registrytest.PushBundle(t, reg.Host, "org/bundle", "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.Host)
	proxy.Add(registrytest.Rule{Fault: registrytest.TooManyRequests, Match: registrytest.IsManifest, Times: 1, RetryAfter: "3"})
	c := newClient(t)

	_, err := c.ManifestExists(testContext(t), proxy.Repository("org/bundle:1.0.0"))
	if d, ok := registry.RetryAfter(err); !ok || d != 3*time.Second {
		t.Errorf("ManifestExists error = %v, want Retry-After 3s", err)
	}
	if ok, err := c.ManifestExists(testContext(t), proxy.Repository("org/bundle:1.0.0")); !ok || err != nil {
		t.Errorf("ManifestExists after the fault = %v, %v; want true", ok, err)
	}
}

func TestFaultProxy_BearerTokenExchange(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	registrytest.PushBundle(t, reg.Host, "org/bundle", "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.Host, registrytest.WithTokenAuth("ci", "s3cret"))
	repo := proxy.Repository("org/bundle")
	ctx := testContext(t)

	c := newClient(t, withCredentials(registry.Credentials{Username: "ci", Password: "s3cret"}))
	first, err := c.ListTags(ctx, repo, "")
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if first.Requests != 3 || proxy.Requests("/token") != 1 {
		t.Errorf("first call: %d requests, %d token requests; want 3 (401, token, retry) and 1", first.Requests, proxy.Requests("/token"))
	}
	second, err := c.ListTags(ctx, repo, first.ETag)
	if err != nil || !second.NotModified || second.Requests != 1 || proxy.Requests("/token") != 1 {
		t.Errorf("second call = %+v, %v with %d token requests; want NotModified in 1 request with the cached token", second, err, proxy.Requests("/token"))
	}
	if ok, err := c.ManifestExists(ctx, repo+":1.0.0"); !ok || err != nil {
		t.Errorf("ManifestExists = %v, %v; want true", ok, err)
	}

	proxy.RevokeTokens()
	third, err := c.ListTags(ctx, repo, "")
	if err != nil {
		t.Fatalf("ListTags after revocation: %v", err)
	}
	if third.Requests != 3 {
		t.Errorf("after revocation: %d requests, want 3 (401, token, retry)", third.Requests)
	}

	for name, creds := range map[string]registry.Credentials{
		"wrong password": {Username: "ci", Password: "nope"},
		"anonymous":      {},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := newClient(t, withCredentials(creds)).ListTags(ctx, repo, "")
			if !registry.IsAuth(err) || registry.IsRetryable(err) {
				t.Errorf("error = %v, want a non-retryable auth error", err)
			}
		})
	}
}

func TestFaultProxy_TokenCredentialAsPassword(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	registrytest.PushBundle(t, reg.Host, "org/bundle", "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.Host, registrytest.WithTokenAuth("token", "pat-123"))
	c := newClient(t, withCredentials(registry.Credentials{Token: "pat-123"}))
	if _, err := c.ListTags(testContext(t), proxy.Repository("org/bundle"), ""); err != nil {
		t.Errorf("ListTags with a Token credential: %v", err)
	}
}

func TestFaultProxy_AnonymousBearerToken(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	registrytest.PushBundle(t, reg.Host, "library/app", "1.0.0")
	proxy := registrytest.NewFaultProxy(t, reg.Host, registrytest.WithTokenAuth("", ""))
	list, err := newClient(t).ListTags(testContext(t), proxy.Repository("library/app"), "")
	if err != nil || len(list.Tags) != 1 {
		t.Errorf("anonymous ListTags = %+v, %v; want one tag", list, err)
	}
}

func TestDistribution_BasicAuth(t *testing.T) {
	reg := registrytest.StartDistribution(t, registrytest.WithBasicAuth("ci", "s3cret"))
	registrytest.PushBundle(t, reg.Host, "org/bundle", "1.0.0", registrytest.WithPushAuth(reg.Username, reg.Password))
	ctx := testContext(t)

	good := newClient(t, withCredentials(registry.Credentials{Username: "ci", Password: "s3cret"}))
	for _, repo := range []string{reg.Repository("org/bundle"), registrytest.NewFaultProxy(t, reg.Host).Repository("org/bundle")} {
		list, err := good.ListTags(ctx, repo, "")
		if err != nil || !slices.Equal(list.Tags, []string{"1.0.0"}) {
			t.Errorf("ListTags(%s) = %+v, %v; want [1.0.0]", repo, list, err)
		}
	}

	for name, creds := range map[string]registry.Credentials{
		"wrong password": {Username: "ci", Password: "nope"},
		"anonymous":      {},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := newClient(t, withCredentials(creds)).ListTags(ctx, reg.Repository("org/bundle"), "")
			if !registry.IsAuth(err) {
				t.Errorf("error = %v, want an auth error", err)
			}
			if strings.Contains(err.Error(), "nope") {
				t.Errorf("error %q reveals the password", err)
			}
		})
	}

	// A token-auth front over the htpasswd registry: the client only ever sees Bearer.
	front := registrytest.NewFaultProxy(t, reg.Host, registrytest.WithTokenAuth("robot", "pat-456"), registrytest.WithUpstreamAuth("ci", "s3cret"))
	c := newClient(t, withCredentials(registry.Credentials{Username: "robot", Token: "pat-456"}))
	if list, err := c.ListTags(ctx, front.Repository("org/bundle"), ""); err != nil || len(list.Tags) != 1 {
		t.Errorf("ListTags through the token front = %+v, %v; want one tag", list, err)
	}
}

// TestDistribution_TLS: WithTLS serves HTTPS only, trusted with Registry.CACert and refused
// without it.
func TestDistribution_TLS(t *testing.T) {
	reg := registrytest.StartDistribution(t, registrytest.WithTLS())
	ctx := testContext(t)
	if !strings.HasPrefix(reg.URL, "https://") {
		t.Errorf("URL = %s, want https", reg.URL)
	}
	trusting := newClient(t, func(o *registry.Options) { o.Insecure, o.CACert = false, reg.CACert })
	if exists, err := trusting.ManifestExists(ctx, reg.Repository("org/app:1.0.0")); err != nil || exists {
		t.Errorf("with the CA: %v, %v; want the registry to answer that there is no such image", exists, err)
	}
	untrusting := newClient(t, func(o *registry.Options) { o.Insecure = false })
	if _, err := untrusting.ManifestExists(ctx, reg.Repository("org/app:1.0.0")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: error = %v, want the certificate refused", err)
	}
}
