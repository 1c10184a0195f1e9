package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var knownReasons = []string{ReasonMalformed, ReasonTooLarge, ReasonAlgorithm, ReasonSignature, ReasonExpired,
	ReasonNoExpiry, ReasonNotYetValid, ReasonIssuedLater, ReasonIssuer, ReasonAudience, ReasonNoSubject,
	ReasonClaims, ReasonKeysMissing}

// FuzzVerify feeds raw strings to an HS256 verifier: it must never panic, never accept a token the
// fuzzer made (the seeds are all signed with other secrets, by other algorithms, or not at all), and
// refuse with ErrNoToken or a *TokenError whose reason is one of the fixed, token-free reasons.
func FuzzVerify(f *testing.F) {
	wrong, err := Mint(otherSecret, "alice", []Role{Admin}, time.Hour, testNow)
	if err != nil {
		f.Fatal(err)
	}
	parts := strings.Split(wrong, ".")
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, baseClaims()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for _, seed := range []string{
		wrong, none, "", ".", "..", "a.b.c", parts[0] + "." + parts[1] + ".",
		parts[0] + "." + parts[1] + "." + parts[2] + "=",
		b64(`{"alg":"HS256"}`) + "." + b64(`{"exp":1e400}`) + ".x",
		b64(`{"alg":"HS256","crit":[]}`) + "." + parts[1] + "." + parts[2],
		b64(`{"alg":["HS256"]}`) + "." + parts[1] + "." + parts[2],
	} {
		f.Add(seed)
	}
	v, err := NewHS256(testSecret, Options{Now: fixedClock, Logger: quiet})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		id, err := v.Verify(context.Background(), raw)
		if err == nil {
			t.Fatalf("accepted %q as %v", raw, id)
		}
		if id != nil {
			t.Fatalf("identity %v returned with error %v", id, err)
		}
		var te *TokenError
		switch {
		case errors.Is(err, ErrNoToken):
		case errors.As(err, &te):
			if !slices.Contains(knownReasons, te.Reason) {
				t.Fatalf("reason %q is not one of the fixed reasons", te.Reason)
			}
		default:
			t.Fatalf("error %T %v is neither ErrNoToken nor *TokenError", err, err)
		}
	})
}
