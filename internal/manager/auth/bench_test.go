package auth

import (
	"context"
	"testing"
	"time"
)

func BenchmarkVerifyHS256(b *testing.B) {
	v, err := NewHS256(testSecret, Options{Now: fixedClock})
	if err != nil {
		b.Fatal(err)
	}
	tok := mustMint(b, testSecret, []Role{Operator, EnvironmentOwnerOf("Dev")}, time.Hour, testNow)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyOIDC(b *testing.B) {
	ti := newTestIssuer(b)
	for _, k := range []signingKey{newRSAKey(b, "rsa"), newECKey(b, "ec")} {
		b.Run(k.method.Alg(), func(b *testing.B) {
			ti.publish(b, k)
			v := newOIDCVerifier(b, ti)
			tok := sign(b, k, ti.claims("alice", "Operator"))
			if _, err := v.Verify(context.Background(), tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
