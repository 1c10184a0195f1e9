package server

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/manager/auth"
)

// BenchmarkAuthenticatedGet is GET /api/v1/whoami (authentication and nothing else: the answer
// is the token's identity) through the real server over TLS on each engine: with-id is a token
// of the manager's (a jti: the revocation check reads the store once, by primary key), no-id a
// token minted before ids (no read). The difference is what checking for a sign-out costs.
func BenchmarkAuthenticatedGet(b *testing.B) {
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			url, client, withID, _ := fleetBenchServer(b, engine)
			now := time.Now()
			noID, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": auth.MintIssuer, "sub": "bench",
				"roles": []string{"Viewer"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}).SignedString([]byte(benchSecret))
			if err != nil {
				b.Fatal(err)
			}
			for name, tok := range map[string]string{"with-id": withID, "no-id": noID} {
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						req, err := http.NewRequest("GET", url+"/api/v1/whoami", nil)
						if err != nil {
							b.Fatal(err)
						}
						req.Header.Set("Authorization", "Bearer "+tok)
						resp, err := client.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							b.Fatalf("whoami: %d", resp.StatusCode)
						}
					}
				})
			}
		})
	}
}
