package server

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/ratelimit"
)

// withSessions gives the server the bundle's HS256 secret for sign-in links, and a session limit
// the tests do not reach (TestSessionRateLimit checks the limit).
func withSessions(o *setupOpts) {
	withDeps(func(b *bundle, d *Deps) { d.SessionSecret = b.secret })(o)
	o.rules = map[string]ratelimit.Rule{sessionRoute: {Events: 1000, Per: time.Minute}}
}

func (b *bundle) ticket(subject string, ttl time.Duration, at time.Time, roles ...auth.Role) string {
	b.t.Helper()
	tok, err := MintLoginTicket(b.secret, subject, roles, ttl, at)
	if err != nil {
		b.t.Fatal(err)
	}
	return tok
}

// refused fails unless r is a 401 whose message says want.
func refused(t *testing.T, what string, r response, want string) {
	t.Helper()
	expect(t, what, r, http.StatusUnauthorized)
	if e := r.apiError(t); e.Code != api.CodeUnauthenticated || !strings.Contains(e.Message, want) {
		t.Fatalf("%s: %s, want a message with %q", what, r.body, want)
	}
}

// TestSessionExchange: a sign-in ticket is exchanged once for a working session token; a second
// use, an expired, a forged or a tampered ticket are refused; a ticket is never an access token
// and an access token never a ticket; of two exchanges at once exactly one wins; every exchange
// is audited under the ticket's subject.
func TestSessionExchange(t *testing.T) {
	forEngine(t, testSessionExchange)
}

func testSessionExchange(t *testing.T, engine string) {
	b := setup(t, engine, withSessions)
	now := time.Now()
	tk := b.ticket("dana", 15*time.Minute, now, auth.Operator, auth.EnvironmentOwnerOf("Staging"))
	r := b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: tk})
	expect(t, "exchange", r, http.StatusOK)
	var s api.SessionResponse
	r.json(t, &s)
	if s.Subject != "dana" || strings.Join(s.Roles, ",") != "Operator,EnvironmentOwner:Staging" || s.Token == "" ||
		s.ExpiresAt.Before(now.Add(DefaultSessionTTL-time.Minute)) || s.ExpiresAt.After(now.Add(DefaultSessionTTL+time.Minute)) {
		t.Fatalf("session: %+v", s)
	}
	var who api.Whoami
	b.do("GET", "/api/v1/whoami", s.Token, nil).json(t, &who)
	if who.Subject != "dana" || strings.Join(who.Roles, ",") != "Operator,EnvironmentOwner" || strings.Join(who.Environments, ",") != "Staging" {
		t.Fatalf("whoami with the session token: %+v", who)
	}
	expect(t, "the session token works", b.do("GET", "/api/v1/deployments", s.Token, nil), http.StatusOK)

	refused(t, "second use", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: tk}), "was used already")
	refused(t, "expired", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: b.ticket("dana", 15*time.Minute, now.Add(-time.Hour), auth.Admin)}), "expired at")
	other, err := MintLoginTicket([]byte("another-manager-secret-0123456789abcdef"), "dana", []auth.Role{auth.Admin}, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	refused(t, "forged", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: other}), "signature does not match")
	refused(t, "tampered", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: tamper(t, b.ticket("dana", time.Minute, now, auth.Viewer))}), "not valid")
	refused(t, "garbage", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: "not.a.ticket"}), "not valid")
	expectInvalid(t, "no ticket", b.do("POST", "/api/v1/session", "", `{}`), "ticket")
	expectInvalid(t, "unknown field", b.do("POST", "/api/v1/session", "", `{"ticket": "x", "token": "y"}`), "token")

	// An access token is not a ticket, even one signed with the secret and claiming to be one.
	refused(t, "access token as ticket", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: b.admin()}), "not valid")
	disguised := signWith(t, b.secret, jwt.MapClaims{"sub": "mallory", "roles": []string{"Admin"}, "exp": now.Add(time.Hour).Unix(),
		"iat": now.Unix(), "iss": auth.MintIssuer, "aud": ticketAudience, ticketUseClaim: ticketUse, "jti": "j1"})
	refused(t, "secret-signed ticket", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: disguised}), "signature does not match")
	// A ticket is not an access token: neither a real one nor one signed with the secret.
	fresh := b.ticket("dana", time.Minute, now, auth.Admin)
	for name, tok := range map[string]string{"ticket": fresh, "secret-signed ticket": disguised} {
		refused(t, name+" as Bearer", b.do("GET", "/api/v1/whoami", tok, nil), "a sign-in ticket is not an access token")
	}
	expect(t, "the ticket refused as Bearer is still unused", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: fresh}), http.StatusOK)

	testConcurrentExchange(t, b)

	var audit api.AuditList
	b.do("GET", "/api/v1/audit?action=session.create&limit=100", b.admin(), nil).json(t, &audit)
	count := map[string]int{}
	for _, e := range audit.Items {
		count[e.Actor+"/"+e.Result]++
		if e.Details["ticket"] == nil || e.TargetKind != "session" {
			t.Errorf("audit record without the ticket's id: %+v", e)
		}
	}
	// dana: the first exchange and the one after the Bearer attempts; the concurrent pair's winner
	// (carol); refused: dana's second use and expired link, carol's lost race.
	for key, n := range map[string]int{"dana/success": 2, "carol/success": 1, "dana/denied": 2, "carol/denied": 1} {
		if count[key] != n {
			t.Errorf("audit %s: %d, want %d (%v)", key, count[key], n, count)
		}
	}
	if len(audit.Items) != 6 {
		t.Errorf("audit records: %d, want 6 (forged tickets are not audited): %v", len(audit.Items), count)
	}
	if strings.Contains(b.logs.String(), tk) || strings.Contains(b.logs.String(), s.Token) {
		t.Error("a ticket or a session token is in the log")
	}
}

// testConcurrentExchange posts one ticket twice at once: exactly one exchange wins.
func testConcurrentExchange(t *testing.T, b *bundle) {
	tk := b.ticket("carol", time.Minute, time.Now(), auth.Viewer)
	var wg sync.WaitGroup
	results := make([]response, 2)
	start := make(chan struct{})
	for i := range results {
		wg.Go(func() {
			<-start
			results[i] = b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: tk})
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, r := range results {
		switch r.status {
		case http.StatusOK:
			won++
		case http.StatusUnauthorized:
			refused(t, "the race's loser", r, "was used already")
		default:
			t.Fatalf("concurrent exchange: %d %s", r.status, r.body)
		}
	}
	if won != 1 {
		t.Fatalf("%d of 2 concurrent exchanges won, want exactly 1", won)
	}
}

func signWith(t *testing.T, key []byte, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tamper changes the ticket's payload (another subject) and keeps its signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, claims); err != nil {
		t.Fatal(err)
	}
	claims["sub"] = "mallory"
	forged := signWith(t, []byte("whatever-key-0123456789abcdef0123"), claims)
	return strings.Join([]string{parts[0], strings.Split(forged, ".")[1], parts[2]}, ".")
}

// TestSessionOffAndConfig: without an HS256 secret the UI is told there is no session exchange
// and POST /session says why; with OIDC for the UI, the UI's config names the issuer, client id
// and scopes; both are public.
func TestSessionOffAndConfig(t *testing.T) {
	b := setup(t, "sqlite")
	var c api.UIConfigResponse
	r := b.do("GET", "/api/v1/ui/config", "", nil)
	if r.json(t, &c); r.status != http.StatusOK || c.SessionExchange || c.OIDC != nil {
		t.Fatalf("ui/config without a secret or OIDC: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: b.ticket("dana", time.Minute, time.Now(), auth.Admin)})
	expect(t, "exchange without a secret", r, http.StatusNotFound)
	if e := r.apiError(t); !strings.Contains(e.Message, "no HS256 secret") {
		t.Fatalf("exchange without a secret: %s", r.body)
	}

	o := setup(t, "sqlite", withSessions, withConfig(Config{UI: UIConfig{OIDCIssuer: "https://id.example.com/realms/ops", OIDCClientID: "slipway-ui"}}))
	r = o.do("GET", "/api/v1/ui/config", "", nil)
	if r.json(t, &c); !c.SessionExchange || c.OIDC == nil || c.OIDC.Issuer != "https://id.example.com/realms/ops" ||
		c.OIDC.ClientID != "slipway-ui" || strings.Join(c.OIDC.Scopes, " ") != "openid profile email" {
		t.Fatalf("ui/config with OIDC: %s", r.body)
	}
	expect(t, "whoami needs a token", o.do("GET", "/api/v1/whoami", "", nil), http.StatusUnauthorized)
}

// TestSessionRateLimit: exchanges are limited per client address, good tickets or not.
func TestSessionRateLimit(t *testing.T) {
	b := setup(t, "sqlite", withDeps(func(b *bundle, d *Deps) { d.SessionSecret = b.secret }),
		withRules(map[string]ratelimit.Rule{sessionRoute: {Events: 2, Per: time.Hour}}))
	for range 2 {
		refused(t, "bad ticket", b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: "x.y.z"}), "not valid")
	}
	r := b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: b.ticket("dana", time.Minute, time.Now(), auth.Admin)})
	expect(t, "over the limit", r, http.StatusTooManyRequests)
	if e := r.apiError(t); e.Code != api.CodeRateLimited || r.header.Get("Retry-After") == "" || !strings.Contains(e.Message, "127.0.0.1") {
		t.Fatalf("over the limit: %s %v", r.body, r.header)
	}
}

func TestMintLoginTicketRefuses(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	now := time.Now()
	for name, mint := range map[string]func() (string, error){
		"short secret": func() (string, error) {
			return MintLoginTicket([]byte("short"), "a", []auth.Role{auth.Admin}, time.Minute, now)
		},
		"no subject": func() (string, error) { return MintLoginTicket(secret, " ", []auth.Role{auth.Admin}, time.Minute, now) },
		"no role":    func() (string, error) { return MintLoginTicket(secret, "a", nil, time.Minute, now) },
		"bad role":   func() (string, error) { return MintLoginTicket(secret, "a", []auth.Role{"Root"}, time.Minute, now) },
		"zero ttl":   func() (string, error) { return MintLoginTicket(secret, "a", []auth.Role{auth.Admin}, 0, now) },
		"long ttl": func() (string, error) {
			return MintLoginTicket(secret, "a", []auth.Role{auth.Admin}, MaxTicketTTL+time.Second, now)
		},
	} {
		if tok, err := mint(); err == nil {
			t.Errorf("%s: minted %q", name, tok)
		}
	}
}
