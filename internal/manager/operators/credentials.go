package operators

import (
	"net/http"
	"net/url"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/registry"
)

// Credentials authenticate to a private chart source: Username and Password (HTTP Basic for a
// Helm HTTP repository, registry Basic or token exchange for OCI) or Token (a Bearer token for an
// HTTP repository, a registry access token for OCI). The zero value is anonymous. Printing them
// shows no secret.
type Credentials = registry.Credentials

// MaxCredentialLength bounds each credential field.
const MaxCredentialLength = 4096

// ValidateCredentials checks c is one of the two forms (username and password, or a token with
// an optional username), each part at most MaxCredentialLength long. It returns *invalid.Error
// for chart.credentials, never echoing a value.
func ValidateCredentials(c Credentials) error {
	const field = "chart.credentials"
	for _, p := range []struct{ name, v string }{{"username", c.Username}, {"password", c.Password}, {"token", c.Token}} {
		if len(p.v) > MaxCredentialLength {
			return invalid.Reasoned(field, "tooLong", nil, "%s is longer than %d bytes", p.name, MaxCredentialLength)
		}
	}
	switch {
	case c.IsAnonymous():
		return invalid.Reasoned(field, "required", nil, "give username and password, or token")
	case c.Token != "" && c.Password != "":
		return invalid.Reasoned(field, "format", nil, "give either a password or a token, not both")
	case c.Token == "" && (c.Username == "" || c.Password == ""):
		return invalid.Reasoned(field, "format", nil, "username and password go together")
	}
	return nil
}

// authorize adds ref's credentials to a request to an HTTP repository, only when the request
// goes to the repository's own host (as Helm does without --pass-credentials).
func authorize(req *http.Request, ref ChartRef) {
	if ref.Auth.IsAnonymous() {
		return
	}
	repo, err := url.Parse(ref.Repository)
	if err != nil || repo.Host != req.URL.Host || repo.Scheme != req.URL.Scheme {
		return
	}
	if ref.Auth.Token != "" {
		req.Header.Set("Authorization", "Bearer "+ref.Auth.Token)
		return
	}
	req.SetBasicAuth(ref.Auth.Username, ref.Auth.Password)
}
