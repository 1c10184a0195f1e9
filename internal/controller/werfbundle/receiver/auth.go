package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// SignatureHeader carries an HMAC-SHA256 of the request body under the shared secret, as
// "sha256=<hex>", for senders that can sign but not set an Authorization header.
const SignatureHeader = "X-Slipway-Signature"

const signaturePrefix = "sha256="

// Sign returns the SignatureHeader value for body under secret.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// authenticator checks requests against the shared secret. It holds the secret's digest for
// header comparisons so they take the same time whatever the length of the presented value.
type authenticator struct {
	secret    []byte
	secretSum [sha256.Size]byte
}

func newAuthenticator(secret []byte) authenticator {
	s := append([]byte(nil), secret...)
	return authenticator{secret: s, secretSum: sha256.Sum256(s)}
}

// authorization reports whether an Authorization header value carries the secret, either as
// "Bearer <secret>" (distribution's endpoint headers) or verbatim (Harbor's auth header).
func (a authenticator) authorization(v string) bool {
	if len(a.secret) == 0 || v == "" {
		return false
	}
	ok := a.equal(v)
	if scheme, token, found := strings.Cut(v, " "); found && strings.EqualFold(scheme, "Bearer") {
		ok = a.equal(strings.TrimSpace(token)) || ok
	}
	return ok
}

func (a authenticator) equal(v string) bool {
	sum := sha256.Sum256([]byte(v))
	return subtle.ConstantTimeCompare(sum[:], a.secretSum[:]) == 1
}

// signature reports whether a SignatureHeader value is the HMAC of body under the secret.
func (a authenticator) signature(v string, body []byte) bool {
	if len(a.secret) == 0 || len(v) <= len(signaturePrefix) || !strings.EqualFold(v[:len(signaturePrefix)], signaturePrefix) {
		return false
	}
	got, err := hex.DecodeString(strings.TrimSpace(v[len(signaturePrefix):]))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, a.secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
