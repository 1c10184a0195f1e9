package registry

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTLS_VerifiedAgainstCACert(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"tags":["1.0.0"]}`)
	}))
	t.Cleanup(srv.Close)
	repo := strings.TrimPrefix(srv.URL, "https://") + "/org/app"
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	untrusting, err := NewClient(Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = untrusting.ListTags(ctx(t), repo, "")
	if err == nil || IsRetryable(err) {
		t.Errorf("without CACert: error = %v, want a non-retryable certificate error", err)
	}

	trusting, err := NewClient(Options{CACert: caPEM}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trusting.ListTags(ctx(t), repo, ""); err != nil {
		t.Errorf("with CACert: %v", err)
	}

	// A base transport that skips verification is overridden: TLS is always verified.
	base := srv.Client().Transport.(*http.Transport).Clone()
	base.TLSClientConfig.InsecureSkipVerify = true
	base.TLSClientConfig.RootCAs = nil
	skipping, err := NewClient(Options{Transport: base}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := skipping.ListTags(ctx(t), repo, ""); err == nil {
		t.Error("InsecureSkipVerify in the base transport was honoured")
	}
}

func TestTLS_InsecureMeansPlainHTTPOnly(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	c := newTestClient(t) // Insecure: speaks http to a TLS port and must not fall back to https
	_, err := c.ListTags(ctx(t), strings.TrimPrefix(srv.URL, "https://")+"/org/app", "")
	if err == nil {
		t.Error("an insecure client reached a TLS server")
	}
}

func TestNewClient_RejectsBadCACert(t *testing.T) {
	if _, err := NewClient(Options{CACert: []byte("not pem")}, nil); err == nil {
		t.Error("NewClient accepted a CACert without certificates")
	}
}
