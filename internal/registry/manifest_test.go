package registry

import (
	"net/http"
	"strings"
	"testing"
)

func TestManifestExists(t *testing.T) {
	srv := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v2/org/app/manifests/1.0.0", "/v2/org/app/manifests/sha256:" + strings.Repeat("a", 64):
			w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("a", 64))
			w.WriteHeader(200)
		case "/v2/org/app/manifests/broken":
			w.WriteHeader(500)
		default:
			writeJSON(w, 404, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`)
		}
	})
	c := newTestClient(t)
	tests := map[string]struct {
		ref     string
		want    bool
		wantErr bool
	}{
		"tag":            {ref: "/org/app:1.0.0", want: true},
		"digest":         {ref: "/org/app@sha256:" + strings.Repeat("a", 64), want: true},
		"unknown tag":    {ref: "/org/app:2.0.0"},
		"unknown repo":   {ref: "/org/other:1.0.0"},
		"server error":   {ref: "/org/app:broken", wantErr: true},
		"bad reference":  {ref: "/org/app:bad tag", wantErr: true},
		"bad digest":     {ref: "/org/app@sha256:zz", wantErr: true},
		"uppercase repo": {ref: "/Org/app:1.0.0", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := c.ManifestExists(ctx(t), srv.host()+tt.ref)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ManifestExists = %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	r := srv.seen()[0]
	if r.Method != http.MethodHead {
		t.Errorf("method = %s, want HEAD", r.Method)
	}
	for _, mt := range []string{"application/vnd.oci.image.manifest.v1+json", "application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.v2+json"} {
		if !strings.Contains(r.Header.Get("Accept"), mt) {
			t.Errorf("Accept %q lacks %s", r.Header.Get("Accept"), mt)
		}
	}
	if !IsRetryable(func() error { _, err := c.ManifestExists(ctx(t), srv.host()+"/org/app:broken"); return err }()) {
		t.Error("a 500 is not retryable")
	}
}
