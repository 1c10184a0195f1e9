package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/ui"
)

// TestUIHandlerConnectSrc: with an OIDC client id the UI's pages may connect to the issuer's
// origin (the page fetches its discovery document and token endpoint), and to the origins of
// --ui-connect-src; nothing else is added, and what is not an origin is refused at start.
func TestUIHandlerConnectSrc(t *testing.T) {
	for _, tc := range []struct {
		name, clientID, connect, issuer string
		wantConnect                     string
		wantErr                         string
	}{
		{name: "no OIDC", wantConnect: "connect-src 'self';"},
		{name: "issuer without a UI client", issuer: "https://idp.example.com/realms/x", wantConnect: "connect-src 'self';"},
		{name: "issuer", clientID: "slipway-ui", issuer: "https://idp.example.com/realms/x",
			wantConnect: "connect-src 'self' https://idp.example.com;"},
		{name: "token endpoint elsewhere", clientID: "slipway-ui", issuer: "https://accounts.example.com",
			connect:     "https://oauth2.example.com:8443/token, https://accounts.example.com",
			wantConnect: "connect-src 'self' https://accounts.example.com https://oauth2.example.com:8443;"},
		{name: "loopback http for tests", connect: "http://127.0.0.1:5556", wantConnect: "connect-src 'self' http://127.0.0.1:5556;"},
		{name: "plain http elsewhere", connect: "http://idp.example.com", wantErr: "over https only"},
		{name: "not a URL", connect: "idp.example.com", wantErr: "is not an origin"},
		{name: "a wildcard", connect: "*", wantErr: "is not an origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := uiOptions{enabled: true, clientID: tc.clientID, connectSrc: tc.connect}
			h, err := o.handler(tc.issuer)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("handler: %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/fleet", nil))
			csp := rec.Header().Get("Content-Security-Policy")
			if !strings.Contains(csp, tc.wantConnect) || !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q, want %q and script-src 'self'", csp, tc.wantConnect)
			}
			if tc.wantConnect == "connect-src 'self';" && csp != ui.ContentSecurityPolicy {
				t.Errorf("Content-Security-Policy %q, want the strict default %q", csp, ui.ContentSecurityPolicy)
			}
		})
	}
	if h, err := (&uiOptions{enabled: false, clientID: "x"}).handler("https://idp.example.com"); h != nil || err != nil {
		t.Errorf("--ui=false: handler %v, %v; want none", h, err)
	}
}
