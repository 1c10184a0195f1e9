package notifications

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a webhook delivery.
const (
	// HeaderDelivery is the delivery's stable id: the same on every attempt (receivers
	// deduplicate by it); also the body's deliveryId.
	HeaderDelivery = "X-Slipway-Delivery"
	// HeaderEvent is the event kind (deployment.failed, …).
	HeaderEvent = "X-Slipway-Event"
	// HeaderAttempt counts the attempts, from 1.
	HeaderAttempt = "X-Slipway-Attempt"
	// HeaderTimestamp is when this attempt was signed, in Unix seconds.
	HeaderTimestamp = "X-Slipway-Timestamp"
	// HeaderSignature is "v1=" and the hex HMAC-SHA256, under the channel's secret, of
	// "<timestamp>.<body>".
	HeaderSignature = "X-Slipway-Signature"
)

// DefaultTolerance is how old a signed timestamp Verify accepts (and how far in the future).
const DefaultTolerance = 5 * time.Minute

// signaturePrefix names the scheme's version in HeaderSignature.
const signaturePrefix = "v1="

// Sign returns the signature header value of body signed at t with secret:
// "v1=" + hex(HMAC-SHA256(secret, "<unix seconds>." + body)).
func Sign(secret []byte, t time.Time, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, strconv.FormatInt(t.Unix(), 10), body))
}

func mac(secret []byte, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return m.Sum(nil)
}

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("no " + HeaderSignature + " or " + HeaderTimestamp + " header")
	ErrBadSignature = errors.New("the signature does not match the body and timestamp")
	ErrStale        = errors.New("the timestamp is too old or in the future (a replay?)")
)

// Verify checks a webhook delivery as a receiver should: the signature header is the HMAC of
// "<timestamp>.<body>" under secret (compared in constant time), and the timestamp is within
// tolerance of now (0: DefaultTolerance), so a captured delivery cannot be replayed later.
// Receivers deduplicate retries by HeaderDelivery.
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	ts, sig := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if ts == "" || sig == "" {
		return ErrNoSignature
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%s %q is not Unix seconds", HeaderTimestamp, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	got, err := hex.DecodeString(strings.TrimPrefix(sig, signaturePrefix))
	if err != nil || !strings.HasPrefix(sig, signaturePrefix) {
		return ErrBadSignature
	}
	if !hmac.Equal(got, mac(secret, ts, body)) {
		return ErrBadSignature
	}
	return nil
}
