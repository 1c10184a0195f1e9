package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
)

// Keys of a credentials Secret that is not of a docker config type.
const (
	SecretKeyUsername = "username"
	SecretKeyPassword = "password"
	SecretKeyToken    = "token"
)

// defaultTokenUsername is the user name sent with a Token when Credentials.Username is empty.
// Registries that accept an access token as a password (ghcr.io, Docker Hub, Harbor robot
// tokens, ...) ignore it or require only that it is non-empty.
const defaultTokenUsername = "token"

// Credentials authenticate to a registry. The zero value is anonymous access.
//
// Username and Password are a user name and password (or an access token used as a password).
// Token is an access token: whenever the registry asks for credentials it is sent as the
// password, with Username (or "token" when Username is empty) as the user name, both for Basic
// authentication and for the Bearer token exchange at the registry's token realm. Only when the
// registry asks for credentials without naming a usable scheme (a 401 without a Basic or Bearer
// challenge, or a Bearer challenge without a realm) is Token sent directly as
// "Authorization: Bearer <Token>". Credentials are never sent to a registry that has not asked for
// them with a 401.
type Credentials struct {
	Username string
	Password string
	Token    string
}

// IsAnonymous reports whether c holds no credentials.
func (c Credentials) IsAnonymous() bool {
	return c.Username == "" && c.Password == "" && c.Token == ""
}

// String hides the secret parts, so Credentials are safe to print by accident.
func (c Credentials) String() string {
	switch {
	case c.Token != "":
		return fmt.Sprintf("token for user %q", c.basicUsername())
	case c.Password != "":
		return fmt.Sprintf("password for user %q", c.Username)
	case c.Username != "":
		return fmt.Sprintf("user %q without password", c.Username)
	}
	return "anonymous"
}

// GoString is String, so %#v does not reveal secrets either.
func (c Credentials) GoString() string { return c.String() }

// basic returns the user name and password to send for Basic authentication or a token exchange,
// and whether there are any.
func (c Credentials) basic() (username, password string, ok bool) {
	if c.Token != "" {
		return c.basicUsername(), c.Token, true
	}
	if c.Username == "" && c.Password == "" {
		return "", "", false
	}
	return c.Username, c.Password, true
}

// Authenticator is c for go-containerregistry: anonymous when c holds nothing, otherwise Basic
// with the user name and password basic gives (a token as the password).
func (c Credentials) Authenticator() authn.Authenticator {
	user, pass, ok := c.basic()
	if !ok {
		return authn.Anonymous
	}
	return &authn.Basic{Username: user, Password: pass}
}

func (c Credentials) basicUsername() string {
	if c.Username == "" {
		return defaultTokenUsername
	}
	return c.Username
}

// dockerConfigEntry is one registry of a docker config file's auths.
type dockerConfigEntry struct {
	Auth     string `json:"auth"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// CredentialsFromSecret reads the credentials for registryHost (host[:port]; a scheme, path or
// repository after the host is ignored) from secret. It accepts:
//
//   - a kubernetes.io/dockerconfigjson Secret (key .dockerconfigjson) or a legacy
//     kubernetes.io/dockercfg Secret (key .dockercfg): the entry whose key names registryHost,
//     written as a bare host or as a URL such as https://host/v1/, with either a base64 auth
//     field ("user:password") or username and password fields;
//   - keys username and password;
//   - key token, optionally with key username (see Credentials for how a Token is used).
//
// Errors name the Secret, the key or the host, never a value.
func CredentialsFromSecret(secret *corev1.Secret, registryHost string) (Credentials, error) {
	if secret == nil {
		return Credentials{}, errors.New("registry credentials: no Secret given")
	}
	ref := secret.Name
	if secret.Namespace != "" {
		ref = secret.Namespace + "/" + secret.Name
	}
	data := secretData(secret)

	switch {
	case secret.Type == corev1.SecretTypeDockerConfigJson || hasKey(data, corev1.DockerConfigJsonKey):
		raw, err := requireKey(ref, data, corev1.DockerConfigJsonKey)
		if err != nil {
			return Credentials{}, err
		}
		var cfg struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return Credentials{}, fmt.Errorf("registry credentials: Secret %s: key %s is not a valid docker config: %s", ref, corev1.DockerConfigJsonKey, describeJSONError(err))
		}
		return fromDockerAuths(ref, corev1.DockerConfigJsonKey, cfg.Auths, registryHost)

	case secret.Type == corev1.SecretTypeDockercfg || hasKey(data, corev1.DockerConfigKey):
		raw, err := requireKey(ref, data, corev1.DockerConfigKey)
		if err != nil {
			return Credentials{}, err
		}
		var auths map[string]dockerConfigEntry
		if err := json.Unmarshal([]byte(raw), &auths); err != nil {
			return Credentials{}, fmt.Errorf("registry credentials: Secret %s: key %s is not a valid docker config: %s", ref, corev1.DockerConfigKey, describeJSONError(err))
		}
		return fromDockerAuths(ref, corev1.DockerConfigKey, auths, registryHost)

	case hasKey(data, SecretKeyToken):
		if hasKey(data, SecretKeyPassword) {
			return Credentials{}, fmt.Errorf("registry credentials: Secret %s has both keys %s and %s; set only one", ref, SecretKeyToken, SecretKeyPassword)
		}
		token, err := requireKey(ref, data, SecretKeyToken)
		if err != nil {
			return Credentials{}, err
		}
		return Credentials{Username: trimLine(data[SecretKeyUsername]), Token: trimLine(token)}, nil

	case hasKey(data, SecretKeyUsername) || hasKey(data, SecretKeyPassword):
		username, err := requireKey(ref, data, SecretKeyUsername)
		if err != nil {
			return Credentials{}, err
		}
		password, err := requireKey(ref, data, SecretKeyPassword)
		if err != nil {
			return Credentials{}, err
		}
		return Credentials{Username: trimLine(username), Password: trimLine(password)}, nil
	}
	return Credentials{}, fmt.Errorf("registry credentials: Secret %s has none of the keys %s, %s and %s, or %s",
		ref, corev1.DockerConfigJsonKey, SecretKeyUsername, SecretKeyPassword, SecretKeyToken)
}

// secretData merges StringData (set on objects that were never stored, such as test fixtures)
// over Data.
func secretData(secret *corev1.Secret) map[string]string {
	out := make(map[string]string, len(secret.Data)+len(secret.StringData))
	for k, v := range secret.Data {
		out[k] = string(v)
	}
	for k, v := range secret.StringData {
		out[k] = v
	}
	return out
}

func hasKey(data map[string]string, key string) bool {
	_, ok := data[key]
	return ok
}

func requireKey(ref string, data map[string]string, key string) (string, error) {
	v, ok := data[key]
	if !ok {
		return "", fmt.Errorf("registry credentials: Secret %s is missing key %s", ref, key)
	}
	if strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("registry credentials: Secret %s has an empty key %s", ref, key)
	}
	return v, nil
}

// trimLine drops the line break that files written by editors or `echo` leave at the end.
func trimLine(s string) string {
	return strings.TrimRight(s, "\r\n")
}

func fromDockerAuths(ref, key string, auths map[string]dockerConfigEntry, registryHost string) (Credentials, error) {
	want := normalizeHost(registryHost)
	if want == "" {
		return Credentials{}, fmt.Errorf("registry credentials: Secret %s: no registry host given to look up in %s", ref, key)
	}
	hosts := make([]string, 0, len(auths))
	for k := range auths {
		hosts = append(hosts, k)
	}
	// Exact keys first, then the rest in a stable order, so the choice never depends on map order.
	sort.Slice(hosts, func(i, j int) bool {
		ei, ej := hosts[i] == registryHost, hosts[j] == registryHost
		if ei != ej {
			return ei
		}
		return hosts[i] < hosts[j]
	})
	for _, k := range hosts {
		if normalizeHost(k) != want {
			continue
		}
		entry := auths[k]
		creds, err := entryCredentials(entry)
		if err != nil {
			return Credentials{}, fmt.Errorf("registry credentials: Secret %s: %s entry for %s: %w", ref, key, want, err)
		}
		return creds, nil
	}
	return Credentials{}, fmt.Errorf("registry credentials: Secret %s: %s has no auths entry for registry %s", ref, key, want)
}

func entryCredentials(e dockerConfigEntry) (Credentials, error) {
	if e.Auth != "" {
		raw, err := decodeBase64(strings.TrimSpace(e.Auth))
		if err != nil {
			return Credentials{}, errors.New("field auth is not valid base64")
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok || user == "" || pass == "" {
			return Credentials{}, errors.New(`field auth is not of the form base64("username:password")`)
		}
		return Credentials{Username: user, Password: trimLine(pass)}, nil
	}
	switch {
	case e.Username == "" && e.Password == "":
		return Credentials{}, errors.New("has neither field auth nor fields username and password")
	case e.Username == "":
		return Credentials{}, errors.New("is missing field username")
	case e.Password == "":
		return Credentials{}, errors.New("is missing field password")
	}
	return Credentials{Username: e.Username, Password: e.Password}, nil
}

func decodeBase64(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("invalid base64")
}

// dockerHubHosts are the names under which Docker Hub appears in docker config files.
var dockerHubHosts = map[string]bool{
	"docker.io":               true,
	"index.docker.io":         true,
	"registry-1.docker.io":    true,
	"registry.hub.docker.com": true,
}

// normalizeHost reduces a registry key or reference ("https://ghcr.io/v1/", "ghcr.io/org/app",
// "GHCR.io") to a lowercase host[:port], with Docker Hub's aliases folded into docker.io.
func normalizeHost(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	// Drop userinfo, which has no place in a key but must not leak into error messages either.
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	s = strings.ToLower(s)
	if dockerHubHosts[s] {
		return "docker.io"
	}
	return s
}

// describeJSONError reports where a JSON document is broken without quoting any of it: a
// json.SyntaxError's text includes the offending character, which may belong to a secret.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Sprintf("syntax error at byte offset %d", syntax.Offset)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf("unexpected %s for field %q", typ.Value, typ.Field)
	}
	return "malformed JSON"
}
