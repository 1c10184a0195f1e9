package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testIssuer is a real OIDC issuer over HTTP: a discovery document and a JWKS that tests rotate.
type testIssuer struct {
	srv        *httptest.Server
	mu         sync.Mutex
	jwks       []map[string]string
	broken     bool
	jwksServed atomic.Int32
}

type signingKey struct {
	kid    string
	method jwt.SigningMethod
	priv   crypto.Signer
}

func newTestIssuer(t testing.TB) *testIssuer {
	ti := &testIssuer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                ti.srv.URL,
			"jwks_uri":                              ti.srv.URL + "/keys",
			"authorization_endpoint":                ti.srv.URL + "/auth",
			"token_endpoint":                        ti.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
		})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksServed.Add(1)
		ti.mu.Lock()
		defer ti.mu.Unlock()
		if ti.broken {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": ti.jwks})
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

// publish replaces the JWKS with the public halves of keys.
func (ti *testIssuer) publish(t testing.TB, keys ...signingKey) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.jwks = nil
	for _, k := range keys {
		ti.jwks = append(ti.jwks, jwk(t, k))
	}
}

func (ti *testIssuer) setBroken(b bool) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	ti.broken = b
}

func jwk(t testing.TB, k signingKey) map[string]string {
	enc := base64.RawURLEncoding.EncodeToString
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "kid": k.kid, "use": "sig", "alg": "RS256",
			"n": enc(pub.N.Bytes()), "e": enc(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		b, err := pub.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"kty": "EC", "kid": k.kid, "use": "sig", "alg": "ES256", "crv": "P-256",
			"x": enc(b[1:33]), "y": enc(b[33:65])}
	}
	t.Fatalf("unexpected key %T", k.priv)
	return nil
}

func newRSAKey(t testing.TB, kid string) signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, method: jwt.SigningMethodRS256, priv: k}
}

func newECKey(t testing.TB, kid string) signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid: kid, method: jwt.SigningMethodES256, priv: k}
}

func (ti *testIssuer) claims(sub string, roles ...string) jwt.MapClaims {
	return jwt.MapClaims{"iss": ti.srv.URL, "aud": "slipway-api", "sub": sub, "roles": roles,
		"iat": testNow.Unix(), "exp": testNow.Add(time.Hour).Unix()}
}

func sign(t testing.TB, k signingKey, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(k.method, claims)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newOIDCVerifier(t testing.TB, ti *testIssuer) Verifier {
	v, err := NewOIDC(context.Background(), ti.srv.URL, "slipway-api", Options{Now: fixedClock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOIDC(t *testing.T) {
	ti := newTestIssuer(t)
	rsaKey, ecKey := newRSAKey(t, "rsa-1"), newECKey(t, "ec-1")
	ti.publish(t, rsaKey, ecKey)
	v := newOIDCVerifier(t, ti)

	stranger := newRSAKey(t, "rsa-1") // same kid, key the issuer never published
	pubDER, err := x509.MarshalPKIXPublicKey(rsaKey.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	hsWithPublicKey := func(secret []byte) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, ti.claims("mallory", "Admin"))
		tok.Header["kid"] = rsaKey.kid
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	rsaAsEC := sign(t, rsaKey, ti.claims("mallory", "Admin"))
	parts := strings.Split(rsaAsEC, ".")
	swappedKid := b64(`{"alg":"RS256","kid":"ec-1","typ":"JWT"}`) + "." + parts[1] + "." + parts[2]
	ps256 := jwt.NewWithClaims(jwt.SigningMethodPS256, ti.claims("alice", "Admin"))
	ps256.Header["kid"] = rsaKey.kid
	ps256Signed, err := ps256.SignedString(rsaKey.priv)
	if err != nil {
		t.Fatal(err)
	}
	claimsWithout := func(k string) jwt.MapClaims { return with(ti.claims("alice", "Admin"), k, nil) }

	for _, tc := range []struct {
		name   string
		token  string
		reason string
		roles  []Role
	}{
		{"RS256", sign(t, rsaKey, ti.claims("alice", "Operator")), "", []Role{Operator}},
		{"ES256", sign(t, ecKey, ti.claims("alice", "EnvironmentOwner:Staging", "Unknown")), "", []Role{EnvironmentOwner}},
		{"RS256 without kid", sign(t, signingKey{method: jwt.SigningMethodRS256, priv: rsaKey.priv}, ti.claims("alice", "Viewer")), "", []Role{Viewer}},
		{"key the issuer never published", sign(t, stranger, ti.claims("alice", "Admin")), ReasonSignature, nil},
		{"HS256 signed with the issuer's public key (PEM)", hsWithPublicKey(pubPEM), ReasonAlgorithm, nil},
		{"HS256 signed with the issuer's public key (DER)", hsWithPublicKey(pubDER), ReasonAlgorithm, nil},
		{"RS256 signature under the EC key's kid", swappedKid, ReasonSignature, nil},
		{"PS256 is not pinned", ps256Signed, ReasonAlgorithm, nil},
		{"alg none", b64(`{"alg":"none"}`) + "." + parts[1] + ".", ReasonAlgorithm, nil},
		{"wrong audience", sign(t, rsaKey, with(ti.claims("alice"), "aud", "another-api")), ReasonAudience, nil},
		{"no audience", sign(t, rsaKey, claimsWithout("aud")), ReasonAudience, nil},
		{"wrong issuer", sign(t, rsaKey, with(ti.claims("alice"), "iss", "https://evil.example")), ReasonIssuer, nil},
		{"expired", sign(t, ecKey, with(ti.claims("alice"), "exp", testNow.Add(-time.Hour).Unix())), ReasonExpired, nil},
		{"missing exp", sign(t, ecKey, claimsWithout("exp")), ReasonNoExpiry, nil},
		{"not yet valid", sign(t, ecKey, with(ti.claims("alice"), "nbf", testNow.Add(10*time.Minute).Unix())), ReasonNotYetValid, nil},
		{"JWS JSON serialization", `{"payload":"` + parts[1] + `","signatures":[]}`, ReasonMalformed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), tc.token)
			if tc.reason != "" {
				assertRefused(t, id, err, tc.reason)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if id.Subject != "alice" || !slices.Equal(id.Roles, tc.roles) {
				t.Fatalf("identity %v, want alice %v", id, tc.roles)
			}
		})
	}
}

func TestOIDCKeyRotation(t *testing.T) {
	ti := newTestIssuer(t)
	old, next := newRSAKey(t, "2026-10"), newECKey(t, "2026-11")
	ti.publish(t, old)
	v := newOIDCVerifier(t, ti)
	ctx := context.Background()

	if _, err := v.Verify(ctx, sign(t, old, ti.claims("alice", "Admin"))); err != nil {
		t.Fatalf("token from the first key: %v", err)
	}
	fetches := ti.jwksServed.Load()
	if _, err := v.Verify(ctx, sign(t, old, ti.claims("alice", "Admin"))); err != nil {
		t.Fatal(err)
	}
	if got := ti.jwksServed.Load(); got != fetches {
		t.Fatalf("a cached key fetched the JWKS again (%d -> %d)", fetches, got)
	}

	// The issuer rotates: the new key is published and the old one withdrawn.
	ti.publish(t, next)
	id, err := v.Verify(ctx, sign(t, next, ti.claims("alice", "Viewer")))
	if err != nil {
		t.Fatalf("token from the rotated-in key: %v", err)
	}
	if !id.Has(Viewer) {
		t.Fatalf("identity %v", id)
	}
	if ti.jwksServed.Load() == fetches {
		t.Fatal("the new kid did not make the verifier fetch the JWKS")
	}
	refusedEventually(t, v, sign(t, old, ti.claims("alice", "Admin")), ReasonSignature)

	// The JWKS endpoint fails: tokens under an unknown kid are refused with a clear reason.
	ti.setBroken(true)
	refusedEventually(t, v, sign(t, newECKey(t, "2026-12"), ti.claims("alice", "Admin")), ReasonKeysMissing)
	// Cached keys keep working while the endpoint is down.
	if _, err := v.Verify(ctx, sign(t, next, ti.claims("alice", "Viewer"))); err != nil {
		t.Fatalf("cached key while the JWKS is down: %v", err)
	}
}

// refusedEventually verifies token until it is refused for reason. go-oidc's RemoteKeySet
// answers a waiting Verify before it swaps in the keys it fetched, so for a moment after a fetch
// the old key set (or the finished fetch's result) may still answer; the wait is bounded.
func refusedEventually(t *testing.T, v Verifier, token, reason string) {
	t.Helper()
	var last error
	for range 200 {
		id, err := v.Verify(context.Background(), token)
		var te *TokenError
		if errors.As(err, &te) && te.Reason == reason {
			if id != nil {
				t.Fatalf("identity %v returned with an error", id)
			}
			return
		}
		last = err
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("token never refused for %q; last result %v", reason, last)
}

func TestNewOIDCRefuses(t *testing.T) {
	ti := newTestIssuer(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, issuer, audience string
		opts                   Options
		want                   string
	}{
		{"no issuer", "", "api", Options{}, "issuer URL is empty"},
		{"no audience", ti.srv.URL, "", Options{}, "audience is empty"},
		{"issuer mismatch", ti.srv.URL + "/", "api", Options{}, "did not match"},
		{"no discovery document", ti.srv.URL + "/realms/none", "api", Options{}, "404"},
		{"leeway too large", ti.srv.URL, "api", Options{Leeway: time.Hour}, "maximum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewOIDC(ctx, tc.issuer, tc.audience, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestChain(t *testing.T) {
	ti := newTestIssuer(t)
	rsaKey := newRSAKey(t, "k1")
	ti.publish(t, rsaKey)
	hs, err := NewHS256(testSecret, Options{Now: fixedClock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	v := Chain(hs, newOIDCVerifier(t, ti))
	ctx := context.Background()
	if id, err := v.Verify(ctx, mustMint(t, testSecret, []Role{Admin}, time.Hour, testNow)); err != nil || !id.Has(Admin) {
		t.Fatalf("HS256 through the chain: %v, %v", id, err)
	}
	if id, err := v.Verify(ctx, sign(t, rsaKey, ti.claims("alice", "Viewer"))); err != nil || !id.Has(Viewer) {
		t.Fatalf("RS256 through the chain: %v, %v", id, err)
	}
	// Key confusion: HS256 with the RSA public key as the secret goes to the HS256 verifier, whose
	// secret it is not.
	pubDER, _ := x509.MarshalPKIXPublicKey(rsaKey.priv.Public())
	conf := jwt.NewWithClaims(jwt.SigningMethodHS256, ti.claims("mallory", "Admin"))
	confused, _ := conf.SignedString(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	id, err := v.Verify(ctx, confused)
	assertRefused(t, id, err, ReasonSignature)
	es := newECKey(t, "k2")
	id, err = v.Verify(ctx, sign(t, es, ti.claims("alice", "Admin")))
	assertRefused(t, id, err, ReasonSignature) // unknown kid: the JWKS, fetched again, lacks it
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, baseClaims()).SignedString(testSecret)
	id, err = v.Verify(ctx, hs512)
	assertRefused(t, id, err, ReasonAlgorithm)

	if Chain(hs) != hs {
		t.Fatal("a chain of one is not that verifier")
	}
	if _, err := Chain().Verify(ctx, mustMint(t, testSecret, []Role{Admin}, time.Hour, testNow)); err == nil || !strings.Contains(err.Error(), "no token verifier") {
		t.Fatalf("empty chain: %v", err)
	}
	// A verifier that does not say its algorithms sees every token, after the routed ones.
	var seen []string
	custom := verifierFunc(func(_ context.Context, raw string) (*Identity, error) {
		seen = append(seen, raw)
		return nil, &TokenError{Reason: ReasonSignature}
	})
	v = Chain(hs, custom)
	if _, err := v.Verify(ctx, mustMint(t, testSecret, []Role{Admin}, time.Hour, testNow)); err != nil || len(seen) != 0 {
		t.Fatalf("HS256 token: %v; custom verifier saw %d tokens", err, len(seen))
	}
	id, err = v.Verify(ctx, hs512)
	assertRefused(t, id, err, ReasonSignature)
	if len(seen) != 1 {
		t.Fatalf("custom verifier saw %d tokens, want 1", len(seen))
	}
}

type verifierFunc func(context.Context, string) (*Identity, error)

func (f verifierFunc) Verify(ctx context.Context, raw string) (*Identity, error) { return f(ctx, raw) }
