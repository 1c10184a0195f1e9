package gitsource

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Keys of a git credentials Secret.
const (
	// SecretKeyUsername and SecretKeyPassword: HTTP basic auth.
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
	// SecretKeyToken: an access token sent as the basic-auth password, with the username from
	// SecretKeyUsername or DefaultTokenUsername.
	SecretKeyToken = "token"
	// SecretKeyBearerToken: a token sent as an Authorization: Bearer header.
	SecretKeyBearerToken = "bearerToken"
)

// DefaultTokenUsername goes with a token when the Secret names no username. GitHub requires it
// for app installation tokens and accepts it for personal tokens; GitLab and Gitea accept any
// username with a token.
const DefaultTokenUsername = "x-access-token"

// Credentials authenticate to a git server over HTTP(S): basic auth (Username and Password) or a
// bearer token. The zero value means none. String never shows the secrets.
type Credentials struct {
	Username    string
	Password    string
	BearerToken string
}

// CredentialsFromSecretData reads credentials from a Secret's data: username and password, or
// token (with an optional username), or bearerToken.
func CredentialsFromSecretData(data map[string][]byte) (*Credentials, error) {
	user, pass := string(data[SecretKeyUsername]), string(data[SecretKeyPassword])
	token, bearer := string(data[SecretKeyToken]), string(data[SecretKeyBearerToken])
	switch {
	case bearer != "":
		return &Credentials{BearerToken: bearer}, nil
	case token != "":
		if user == "" {
			user = DefaultTokenUsername
		}
		return &Credentials{Username: user, Password: token}, nil
	case user != "" && pass != "":
		return &Credentials{Username: user, Password: pass}, nil
	case user != "":
		return nil, fmt.Errorf("%w: key %s without %s", ErrInvalidCredentials, SecretKeyUsername, SecretKeyPassword)
	}
	return nil, fmt.Errorf("%w: the Secret needs keys %s and %s, or %s, or %s",
		ErrInvalidCredentials, SecretKeyUsername, SecretKeyPassword, SecretKeyToken, SecretKeyBearerToken)
}

// String describes the credentials without their secrets.
func (c *Credentials) String() string {
	switch {
	case c == nil || *c == (Credentials{}):
		return "none"
	case c.BearerToken != "":
		return "bearer token"
	}
	return fmt.Sprintf("basic auth as %q", c.Username)
}

func (c *Credentials) auth() transport.AuthMethod {
	switch {
	case c == nil || *c == (Credentials{}):
		return nil
	case c.BearerToken != "":
		return &githttp.TokenAuth{Token: c.BearerToken}
	}
	return &githttp.BasicAuth{Username: c.Username, Password: c.Password}
}
