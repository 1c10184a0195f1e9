package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var (
	testSecret  = []byte("0123456789abcdef0123456789abcdef-test")
	otherSecret = []byte("fedcba9876543210fedcba9876543210-other")
	testNow     = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
)

func fixedClock() time.Time { return testNow }

// quiet drops the warnings tests provoke on purpose.
var quiet = slog.New(slog.DiscardHandler)

// signHS256 signs arbitrary claims, so tests can build tokens Mint never would.
func signHS256(t testing.TB, secret []byte, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func baseClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"sub":   "alice",
		"iat":   testNow.Add(-time.Minute).Unix(),
		"exp":   testNow.Add(time.Hour).Unix(),
		"roles": []string{"Operator"},
	}
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for kk, vv := range c {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func mustMint(t testing.TB, secret []byte, roles []Role, ttl time.Duration, now time.Time) string {
	t.Helper()
	tok, err := Mint(secret, "alice", roles, ttl, now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestHS256(t *testing.T) {
	v, err := NewHS256(testSecret, Options{Now: fixedClock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	good := mustMint(t, testSecret, []Role{Operator, EnvironmentOwnerOf("production")}, time.Hour, testNow)
	parts := strings.Split(good, ".")
	forgedPayload := b64(`{"sub":"alice","exp":` + jwtNum(testNow.Add(time.Hour)) + `,"roles":["Admin"]}`)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rs256, err := jwt.NewWithClaims(jwt.SigningMethodRS256, baseClaims()).SignedString(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, baseClaims()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, baseClaims()).SignedString(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	critHeader := b64(`{"alg":"HS256","typ":"JWT","crit":["exp"]}`)
	crit := critHeader + "." + parts[1] + "." + hmacSig(t, critHeader+"."+parts[1])

	tests := []struct {
		name   string
		token  string
		reason string // "" means accepted
		roles  []Role
		envs   []string
	}{
		{name: "minted token", token: good, roles: []Role{Operator, EnvironmentOwner}, envs: []string{"Production"}},
		{name: "forged payload, old signature", token: parts[0] + "." + forgedPayload + "." + parts[2], reason: ReasonSignature},
		{name: "signature stripped", token: parts[0] + "." + parts[1] + ".", reason: ReasonSignature},
		{name: "wrong secret", token: mustMint(t, otherSecret, []Role{Admin}, time.Hour, testNow), reason: ReasonSignature},
		{name: "expired", token: mustMint(t, testSecret, []Role{Admin}, time.Hour, testNow.Add(-2*time.Hour)), reason: ReasonExpired},
		{name: "expired within leeway", token: signHS256(t, testSecret, with(baseClaims(), "exp", testNow.Add(-20*time.Second).Unix())), roles: []Role{Operator}},
		{name: "expired just beyond leeway", token: signHS256(t, testSecret, with(baseClaims(), "exp", testNow.Add(-31*time.Second).Unix())), reason: ReasonExpired},
		{name: "missing exp", token: signHS256(t, testSecret, with(baseClaims(), "exp", nil)), reason: ReasonNoExpiry},
		{name: "exp not a number", token: signHS256(t, testSecret, with(baseClaims(), "exp", "tomorrow")), reason: ReasonClaims},
		{name: "not yet valid beyond leeway", token: signHS256(t, testSecret, with(baseClaims(), "nbf", testNow.Add(time.Minute).Unix())), reason: ReasonNotYetValid},
		{name: "not yet valid within leeway", token: signHS256(t, testSecret, with(baseClaims(), "nbf", testNow.Add(20*time.Second).Unix())), roles: []Role{Operator}},
		{name: "issued in the future", token: signHS256(t, testSecret, with(baseClaims(), "iat", testNow.Add(time.Hour).Unix())), reason: ReasonIssuedLater},
		{name: "no subject", token: signHS256(t, testSecret, with(baseClaims(), "sub", nil)), reason: ReasonNoSubject},
		{name: "alg none", token: none, reason: ReasonAlgorithm},
		{name: "alg none hand-made", token: b64(`{"alg":"none"}`) + "." + parts[1] + ".", reason: ReasonAlgorithm},
		{name: "alg NONE upper case", token: b64(`{"alg":"NONE"}`) + "." + parts[1] + ".", reason: ReasonAlgorithm},
		{name: "RS256 token to an HS256 verifier", token: rs256, reason: ReasonAlgorithm},
		{name: "HS512 with the right secret", token: hs512, reason: ReasonAlgorithm},
		{name: "critical header extension", token: crit, reason: ReasonMalformed},
		{name: "two segments", token: parts[0] + "." + parts[1], reason: ReasonMalformed},
		{name: "garbage", token: "not-a-token", reason: ReasonMalformed},
		{name: "header not JSON", token: b64("alg") + "." + parts[1] + "." + parts[2], reason: ReasonMalformed},
		{name: "oversized", token: strings.Repeat("a", maxTokenBytes+1), reason: ReasonTooLarge},
		{name: "unknown roles ignored", token: signHS256(t, testSecret, with(baseClaims(), "roles", []any{"Viewer", "SuperUser", "EnvironmentOwner:Moon", "EnvironmentOwner", 7, "admin"})), roles: []Role{Viewer, Admin}},
		{name: "single role string", token: signHS256(t, testSecret, with(baseClaims(), "roles", "Admin")), roles: []Role{Admin}},
		{name: "no role claim", token: signHS256(t, testSecret, with(baseClaims(), "roles", nil)), roles: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), tc.token)
			if tc.reason != "" {
				assertRefused(t, id, err, tc.reason)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if id.Subject != "alice" || !slices.Equal(id.Roles, tc.roles) || !slices.Equal(id.Environments, tc.envs) {
				t.Fatalf("identity = %+v, want alice %v %v", id, tc.roles, tc.envs)
			}
		})
	}
}

func jwtNum(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func hmacSig(t *testing.T, signingInput string) string {
	sig, err := jwt.SigningMethodHS256.Sign(signingInput, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(sig)
}

func assertRefused(t *testing.T, id *Identity, err error, reason string) {
	t.Helper()
	var te *TokenError
	if !errors.As(err, &te) {
		t.Fatalf("Verify = %v, %v; want *TokenError %q", id, err, reason)
	}
	if te.Reason != reason {
		t.Fatalf("reason = %q, want %q", te.Reason, reason)
	}
	if id != nil {
		t.Fatalf("identity %v returned with an error", id)
	}
}

func TestHS256IssuerAndAudience(t *testing.T) {
	v, err := NewHS256(testSecret, Options{Now: fixedClock, Issuer: MintIssuer, Audience: "slipway"})
	if err != nil {
		t.Fatal(err)
	}
	ok := with(with(baseClaims(), "iss", MintIssuer), "aud", []string{"other", "slipway"})
	for _, tc := range []struct {
		name   string
		claims jwt.MapClaims
		reason string
	}{
		{"right issuer and audience", ok, ""},
		{"wrong issuer", with(ok, "iss", "someone-else"), ReasonIssuer},
		{"no issuer", with(ok, "iss", nil), ReasonIssuer},
		{"wrong audience", with(ok, "aud", "other"), ReasonAudience},
		{"no audience", with(ok, "aud", nil), ReasonAudience},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := v.Verify(context.Background(), signHS256(t, testSecret, tc.claims))
			if tc.reason == "" {
				if err != nil || id.Subject != "alice" {
					t.Fatalf("Verify = %v, %v", id, err)
				}
				return
			}
			assertRefused(t, id, err, tc.reason)
		})
	}
}

func TestUnknownRoleLogged(t *testing.T) {
	var buf bytes.Buffer
	v, err := NewHS256(testSecret, Options{Now: fixedClock, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tok := signHS256(t, testSecret, with(baseClaims(), "roles", []string{"Admin", "Root"}))
	id, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(id.Roles, []Role{Admin}) {
		t.Fatalf("roles = %v", id.Roles)
	}
	if !strings.Contains(buf.String(), `unknown role \"Root\"`) || strings.Contains(buf.String(), tok) {
		t.Fatalf("log = %q: want the unknown role named and no token", buf.String())
	}
}

func TestRoleClaimOption(t *testing.T) {
	claims := with(baseClaims(), "roles", nil)
	claims["realm_access"] = map[string]any{"roles": []string{"Admin"}}
	claims["https://slipway.dev/roles"] = []string{"Viewer"}
	for _, tc := range []struct {
		claim string
		want  []Role
	}{
		{"realm_access.roles", []Role{Admin}},
		{"https://slipway.dev/roles", []Role{Viewer}},
		{"roles", nil},
	} {
		v, err := NewHS256(testSecret, Options{Now: fixedClock, RoleClaim: tc.claim})
		if err != nil {
			t.Fatal(err)
		}
		id, err := v.Verify(context.Background(), signHS256(t, testSecret, claims))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(id.Roles, tc.want) {
			t.Errorf("claim %q: roles %v, want %v", tc.claim, id.Roles, tc.want)
		}
	}
}

func TestNewHS256Refuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret []byte
		opts   Options
		want   string
	}{
		{"short secret", []byte("short"), Options{}, "at least 32"},
		{"leeway too large", testSecret, Options{Leeway: 6 * time.Minute}, "maximum 5m0s"},
		{"negative leeway", testSecret, Options{Leeway: -time.Second}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewHS256(tc.secret, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestLeewayOption(t *testing.T) {
	tok := signHS256(t, testSecret, with(baseClaims(), "exp", testNow.Add(-2*time.Minute).Unix()))
	strict, _ := NewHS256(testSecret, Options{Now: fixedClock})
	id, err := strict.Verify(context.Background(), tok)
	assertRefused(t, id, err, ReasonExpired)
	loose, _ := NewHS256(testSecret, Options{Now: fixedClock, Leeway: 3 * time.Minute})
	if _, err := loose.Verify(context.Background(), tok); err != nil {
		t.Fatalf("3 min leeway, expired 2 min ago: %v", err)
	}
}

func TestMintRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secret  []byte
		subject string
		roles   []Role
		ttl     time.Duration
		want    string
	}{
		{"short secret", []byte("x"), "a", nil, time.Hour, "at least 32"},
		{"no subject", testSecret, " ", nil, time.Hour, "subject"},
		{"zero ttl", testSecret, "a", nil, 0, "positive"},
		{"unknown role", testSecret, "a", []Role{"Root"}, time.Hour, `unknown role "Root"`},
		{"owner without environment", testSecret, "a", []Role{EnvironmentOwner}, time.Hour, "needs an environment"},
		{"owner of unknown environment", testSecret, "a", []Role{EnvironmentOwnerOf("qa")}, time.Hour, `unknown environment "qa"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Mint(tc.secret, tc.subject, tc.roles, tc.ttl, testNow)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestMintClaims(t *testing.T) {
	tok := mustMint(t, testSecret, []Role{Admin, EnvironmentOwnerOf("Dev")}, time.Hour, testNow)
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, claims); err != nil {
		t.Fatal(err)
	}
	if claims["iss"] != MintIssuer || claims["sub"] != "alice" {
		t.Fatalf("claims = %v", claims)
	}
	for k, want := range map[string]time.Time{"iat": testNow, "nbf": testNow, "exp": testNow.Add(time.Hour)} {
		got, err := claims.GetExpirationTime()
		if k == "exp" && (err != nil || !got.Time.Equal(want)) {
			t.Fatalf("exp = %v, %v", got, err)
		}
		if v, ok := claims[k].(float64); !ok || int64(v) != want.Unix() {
			t.Fatalf("%s = %v, want %d", k, claims[k], want.Unix())
		}
	}
	if roles, _ := claims["roles"].([]any); len(roles) != 2 || roles[0] != "Admin" || roles[1] != "EnvironmentOwner:Dev" {
		t.Fatalf("roles = %v", claims["roles"])
	}
}
