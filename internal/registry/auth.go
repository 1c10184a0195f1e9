package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// authScheme is what a registry host asked for in its last 401.
type authScheme int

const (
	// authAnonymous: the host has not asked for credentials; none are sent.
	authAnonymous authScheme = iota
	// authBasic: the host sent a Basic challenge.
	authBasic
	// authBearer: the host sent a Bearer challenge with a realm to exchange credentials at.
	authBearer
	// authUnnamed: the host answered 401 without a challenge the client can follow; a Token is
	// sent as a bearer token as it is, a password with Basic.
	authUnnamed
)

// hostAuth is the authentication a registry host asked for.
type hostAuth struct {
	scheme  authScheme
	realm   string
	service string
}

// tokenKey identifies a bearer token: tokens are valid for one registry, realm, service and scope.
type tokenKey struct {
	host, realm, service, scope string
}

type cachedToken struct {
	token   string
	expires time.Time
}

const (
	// minTokenLifetime is the lifetime the distribution token spec assumes when a token service
	// says less or nothing.
	minTokenLifetime = 60 * time.Second
	// tokenRefreshMargin renews a cached token this long before it expires.
	tokenRefreshMargin = 10 * time.Second
	// maxTokenBodyBytes bounds a token service's answer.
	maxTokenBodyBytes = 1 << 20
)

// pullScope is the token scope for reading a repository.
func pullScope(repository string) string { return "repository:" + repository + ":pull" }

// send performs one registry request with authentication: it sends what the host asked for
// before (nothing at first), and on a 401 it follows the challenge (Basic, or a Bearer token
// exchange) and retries once. A 401 that cannot be answered is returned as an *Error.
func (c *Client) send(o *operation, method, rawURL string, header http.Header) (*http.Response, error) {
	host := o.repo.RegistryStr()
	scope := pullScope(o.repo.RepositoryStr())

	before := c.hostAuth(host)
	auth, err := c.authorization(o, host, scope, "")
	if err != nil {
		return nil, err
	}
	resp, err := c.request(o, method, rawURL, header, auth)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}

	challenges := parseChallenges(resp.Header.Values("WWW-Authenticate"))
	refused := c.responseError(o, resp)
	after, challengeScope := c.learn(host, challenges)
	if auth != "" {
		if after.scheme != authBearer && after == before {
			// The credentials were sent as asked and refused.
			return nil, refused
		}
		// A bearer token may have expired or been revoked, or lacks the scope: get a new one.
		c.forgetToken(tokenKey{host: host, realm: after.realm, service: after.service, scope: scope})
	}
	retry, err := c.authorization(o, host, scope, challengeScope)
	if err != nil {
		return nil, err
	}
	if retry == "" {
		refused.Message = joinMessage(refused.Message, "the registry requires credentials and none are configured")
		return nil, refused
	}
	return c.request(o, method, rawURL, header, retry)
}

func (c *Client) request(o *operation, method, rawURL string, header http.Header, auth string) (*http.Response, error) {
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	return c.roundTrip(o, method, rawURL, h)
}

func (c *Client) hostAuth(host string) hostAuth {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hosts[host]
}

// learn records what a 401's challenges ask for and returns it with the challenge's scope.
func (c *Client) learn(host string, challenges []challenge) (hostAuth, string) {
	var basic, bearer *challenge
	for i := range challenges {
		switch ch := &challenges[i]; ch.Scheme {
		case "bearer":
			if bearer == nil {
				bearer = ch
			}
		case "basic":
			if basic == nil {
				basic = ch
			}
		}
	}
	var (
		state hostAuth
		scope string
	)
	switch {
	case bearer != nil && bearer.Params["realm"] != "":
		state = hostAuth{scheme: authBearer, realm: bearer.Params["realm"], service: bearer.Params["service"]}
		scope = bearer.Params["scope"]
	case basic != nil:
		state = hostAuth{scheme: authBasic}
	default:
		state = hostAuth{scheme: authUnnamed}
	}
	c.mu.Lock()
	c.hosts[host] = state
	c.mu.Unlock()
	return state, scope
}

// authorization returns the Authorization header for a request to host, or "" to send none. For
// a Bearer host it uses a cached token or exchanges the credentials for one, asking for scope
// and, when given, the scope the registry's challenge named.
func (c *Client) authorization(o *operation, host, scope, challengeScope string) (string, error) {
	state := c.hostAuth(host)
	switch state.scheme {
	case authAnonymous:
		return "", nil
	case authBasic:
		if user, pass, ok := c.creds.basic(); ok {
			return basicAuth(user, pass), nil
		}
		return "", nil
	case authUnnamed:
		if c.creds.Token != "" {
			return "Bearer " + c.creds.Token, nil
		}
		if user, pass, ok := c.creds.basic(); ok {
			return basicAuth(user, pass), nil
		}
		return "", nil
	case authBearer:
		key := tokenKey{host: host, realm: state.realm, service: state.service, scope: scope}
		if tok, ok := c.cachedToken(key); ok {
			return "Bearer " + tok, nil
		}
		scopes := []string{scope}
		if challengeScope != "" && challengeScope != scope {
			scopes = []string{challengeScope, scope}
		}
		tok, err := c.fetchToken(o, state, scopes)
		if err != nil {
			return "", err
		}
		c.storeToken(key, tok)
		return "Bearer " + tok.token, nil
	}
	return "", nil
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func (c *Client) cachedToken(key tokenKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tokens[key]
	if !ok || !c.now().Add(tokenRefreshMargin).Before(t.expires) {
		return "", false
	}
	return t.token, true
}

func (c *Client) storeToken(key tokenKey, t cachedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for k, v := range c.tokens { // drop expired tokens so the cache cannot grow without bound
		if !now.Before(v.expires) {
			delete(c.tokens, k)
		}
	}
	c.tokens[key] = t
}

func (c *Client) forgetToken(key tokenKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tokens, key)
}

// fetchToken exchanges the client's credentials (or none, for anonymous access) for a bearer
// token at the realm of a Bearer challenge, as in the distribution token authentication spec.
func (c *Client) fetchToken(o *operation, state hostAuth, scopes []string) (cachedToken, error) {
	fail := func(e *Error) (cachedToken, error) {
		e.Op = OpToken
		return cachedToken{}, e
	}
	realm, err := c.checkRealm(state.realm)
	if err != nil {
		return fail(o.errorf(0, err, "unusable token realm in the registry's challenge"))
	}
	q := realm.Query()
	if state.service != "" {
		q.Set("service", state.service)
	}
	for _, s := range scopes {
		q.Add("scope", s)
	}
	realm.RawQuery = q.Encode()

	header := http.Header{"Accept": {"application/json"}}
	if user, pass, ok := c.creds.basic(); ok {
		header.Set("Authorization", basicAuth(user, pass))
	}
	resp, err := c.roundTrip(o, http.MethodGet, realm.String(), header)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return fail(e)
		}
		return fail(o.errorf(0, err, "token request failed"))
	}
	if resp.StatusCode != http.StatusOK {
		return fail(c.responseError(o, resp))
	}
	body, err := c.readBody(o, resp, min(c.maxBodyBytes, maxTokenBodyBytes))
	if err != nil {
		var e *Error
		errors.As(err, &e)
		return fail(e)
	}
	var answer struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		IssuedAt    string `json:"issued_at"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fail(o.errorf(http.StatusOK, nil, "token service answered malformed JSON: %s", describeJSONError(err)))
	}
	token := answer.Token
	if token == "" {
		token = answer.AccessToken
	}
	if token == "" {
		return fail(o.errorf(http.StatusOK, nil, "token service answered without a token"))
	}
	if strings.ContainsAny(token, "\r\n") {
		return fail(o.errorf(http.StatusOK, nil, "token service answered a token with a line break"))
	}
	now := c.now()
	issued := now
	if t, err := time.Parse(time.RFC3339, answer.IssuedAt); err == nil && t.Before(now) && now.Sub(t) < time.Hour {
		issued = t
	}
	lifetime := minTokenLifetime
	if answer.ExpiresIn > int64(minTokenLifetime/time.Second) && answer.ExpiresIn < int64(24*time.Hour/time.Second) {
		lifetime = time.Duration(answer.ExpiresIn) * time.Second
	}
	return cachedToken{token: token, expires: issued.Add(lifetime)}, nil
}

// checkRealm accepts a token realm only over HTTPS (or HTTP for an Insecure client), and never
// at a link-local address such as a cloud metadata service, which a hostile registry could name
// to make the client send credentials there.
func (c *Client) checkRealm(realm string) (*url.URL, error) {
	u, err := url.Parse(realm)
	if err != nil {
		return nil, errors.New("realm is not a URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && c.scheme == "http":
	default:
		return nil, errors.New("realm must be an https URL (http only for an insecure registry)")
	}
	if u.Host == "" {
		return nil, errors.New("realm has no host")
	}
	if u.User != nil {
		return nil, errors.New("realm must not carry user information")
	}
	if ip := net.ParseIP(strings.Trim(u.Hostname(), "[]")); ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified()) {
		return nil, errors.New("realm is a link-local or unspecified address")
	}
	u.Fragment = ""
	return u, nil
}

func joinMessage(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
