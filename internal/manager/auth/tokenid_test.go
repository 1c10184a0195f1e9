package auth

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestMintTokenID: every minted token carries its own id (jti), which MintToken returns with
// the expiry, and a verified identity names its token (issuer, id, expiry) for revocation.
func TestMintTokenID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		m, err := MintToken(testSecret, "alice", []Role{Viewer}, time.Hour, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.ID) != 22 || seen[m.ID] {
			t.Fatalf("id %q: want 22 characters, never seen before", m.ID)
		}
		seen[m.ID] = true
		claims := jwt.MapClaims{}
		if _, _, err := jwt.NewParser().ParseUnverified(m.Token, claims); err != nil {
			t.Fatal(err)
		}
		if claims["jti"] != m.ID || !m.ExpiresAt.Equal(testNow.Add(time.Hour).Truncate(time.Second)) {
			t.Fatalf("claims %v, minted %+v", claims, m)
		}
	}
	v, err := NewHS256(testSecret, Options{Now: fixedClock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	m, err := MintToken(testSecret, "alice", []Role{Admin}, time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(context.Background(), m.Token)
	if err != nil {
		t.Fatal(err)
	}
	if id.Token != (TokenInfo{Issuer: MintIssuer, ID: m.ID, ExpiresAt: m.ExpiresAt}) {
		t.Fatalf("token of the identity: %+v, minted %+v", id.Token, m)
	}
	plain, err := Mint(testSecret, "bob", []Role{Admin}, time.Minute, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := v.Verify(context.Background(), plain); err != nil || id.Token.ID == "" || id.Token.ID == m.ID {
		t.Fatalf("Mint's token: %+v, %v: want an id of its own", id, err)
	}
}

// TestTokenWithoutID: tokens minted before ids existed (no jti) stay valid, with no id; a jti
// that is not a string is no id either.
func TestTokenWithoutID(t *testing.T) {
	v, err := NewHS256(testSecret, Options{Now: fixedClock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	legacy := signHS256(t, testSecret, with(baseClaims(), "iss", MintIssuer))
	numeric := signHS256(t, testSecret, with(baseClaims(), "jti", 42))
	for name, tok := range map[string]string{"legacy": legacy, "numeric jti": numeric} {
		id, err := v.Verify(context.Background(), tok)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if id.Token.ID != "" || !id.Token.ExpiresAt.Equal(testNow.Add(time.Hour).Truncate(time.Second)) {
			t.Fatalf("%s: token %+v", name, id.Token)
		}
	}
}

// TestOIDCTokenID: an OIDC token's issuer and jti reach the identity.
func TestOIDCTokenID(t *testing.T) {
	ti := newTestIssuer(t)
	k := newRSAKey(t, "rsa-1")
	ti.publish(t, k)
	v := newOIDCVerifier(t, ti)
	id, err := v.Verify(context.Background(), sign(t, k, with(ti.claims("dora", "Operator"), "jti", "idp-42")))
	if err != nil {
		t.Fatal(err)
	}
	if id.Token.Issuer != ti.srv.URL || id.Token.ID != "idp-42" || !id.Token.ExpiresAt.Equal(testNow.Add(time.Hour).Truncate(time.Second)) {
		t.Fatalf("token %+v", id.Token)
	}
	id, err = v.Verify(context.Background(), sign(t, k, ti.claims("dora", "Operator")))
	if err != nil || id.Token.ID != "" || id.Token.Issuer != ti.srv.URL {
		t.Fatalf("an ID token without jti: %+v, %v", id, err)
	}
}
