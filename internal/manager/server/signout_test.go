package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// replica serves a second API over b's database (a store of its own on the same SQLite file or
// PostgreSQL database) with b's secret: another replica of the manager.
func (b *bundle) replica() *bundle {
	t := b.t
	t.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if b.engine == "postgres" {
		st, err = pgstore.Open(ctx, b.pgURL)
	} else {
		st, err = sqlitestore.Open(ctx, b.dbPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv, ts := serveOver(t, st, b.secret)
	return &bundle{t: t, engine: b.engine, url: ts.URL, client: ts.Client(), srv: srv, store: st, secret: b.secret,
		logs: &testenv.SyncBuffer{}, bodies: &testenv.SyncBuffer{}}
}

// session exchanges a fresh sign-in ticket of subject for a session token.
func (b *bundle) session(subject string, roles ...auth.Role) string {
	b.t.Helper()
	var s api.SessionResponse
	r := b.do("POST", "/api/v1/session", "", api.SessionRequest{Ticket: b.ticket(subject, time.Minute, time.Now(), roles...)})
	expect(b.t, "exchange for "+subject, r, http.StatusOK)
	r.json(b.t, &s)
	return s.Token
}

// claimsOf reads a token's claims without checking it.
func claimsOf(t *testing.T, tok string) jwt.MapClaims {
	t.Helper()
	c := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// works fails unless every replica accepts tok (GET /whoami as subject).
func works(t *testing.T, what, tok, subject string, replicas ...*bundle) {
	t.Helper()
	for i, b := range replicas {
		var who api.Whoami
		r := b.do("GET", "/api/v1/whoami", tok, nil)
		expect(t, what, r, http.StatusOK)
		if r.json(t, &who); who.Subject != subject {
			t.Fatalf("%s on replica %d: %s", what, i, r.body)
		}
	}
}

// signedOut fails unless every replica refuses tok as signed out, on a read and on a change.
func signedOut(t *testing.T, what, tok string, replicas ...*bundle) {
	t.Helper()
	for _, b := range replicas {
		refused(t, what, b.do("GET", "/api/v1/whoami", tok, nil), "this session was signed out")
		refused(t, what+" (a change)", b.do("POST", "/api/v1/operators/x/refresh", tok, nil), "this session was signed out")
	}
}

// TestSessionSignOut: DELETE /session revokes the token it is called with: it is refused from
// then on by this replica and by a second server over the same database, while the same user's
// other session, another user's and a token from `manager token` keep working; the manager's own
// tokens, and foreign ones with a jti, are revoked by issuer and id; a token without a jti is 409
// and keeps working; every sign-out is audited (session.delete) with the token's id, never the
// token; records of expired tokens are purged.
func TestSessionSignOut(t *testing.T) {
	forEngine(t, testSessionSignOut)
}

func testSessionSignOut(t *testing.T, engine string) {
	b := setup(t, engine, withSessions)
	r := b.replica()
	dana, danaOther, erin := b.session("dana", auth.Operator), b.session("dana", auth.Operator), b.session("erin", auth.Viewer)
	frank := b.token("frank", auth.Viewer)
	works(t, "a session token", dana, "dana", b, r)

	expect(t, "sign out", b.do("DELETE", "/api/v1/session", dana, nil), http.StatusNoContent)
	signedOut(t, "the signed-out session", dana, b, r)
	refused(t, "signing out twice", b.do("DELETE", "/api/v1/session", dana, nil), "this session was signed out")
	works(t, "dana's other session", danaOther, "dana", b, r)
	works(t, "another user's session", erin, "erin", b, r)
	works(t, "a manager token", frank, "frank", b, r)

	// On the other replica, a token of `manager token`: refused by both.
	expect(t, "sign out on the replica", r.do("DELETE", "/api/v1/session", frank, nil), http.StatusNoContent)
	signedOut(t, "the signed-out manager token", frank, b, r)
	works(t, "another user's session after two sign-outs", erin, "erin", b, r)

	// Any caller the manager accepts signs out, with or without a role.
	nobody := b.token("nobody")
	expect(t, "a token without a role reads nothing", b.do("GET", "/api/v1/whoami", nobody, nil), http.StatusForbidden)
	expect(t, "sign out without a role", b.do("DELETE", "/api/v1/session", nobody, nil), http.StatusNoContent)
	signedOut(t, "the signed-out token without a role", nobody, b, r)

	testSignOutWithoutID(t, b)
	testSignOutForeign(t, b, r)
	expect(t, "sign out without a token", b.do("DELETE", "/api/v1/session", "", nil), http.StatusUnauthorized)

	danaID, _ := claimsOf(t, dana)["jti"].(string)
	for _, st := range []store.Store{b.store, r.store} {
		if revoked, err := st.TokenRevoked(context.Background(), auth.MintIssuer, danaID); err != nil || !revoked {
			t.Fatalf("dana's session in the store: %v, %v", revoked, err)
		}
	}
	testSignOutAudit(t, b, danaID, dana)
	testSignOutPurge(t, b, erin)
}

// testSignOutWithoutID: tokens without a jti (minted by an older manager; foreign) cannot be
// revoked: 409 saying so, and they keep working.
func testSignOutWithoutID(t *testing.T, b *bundle) {
	now := time.Now()
	legacy := signWith(t, b.secret, jwt.MapClaims{"iss": auth.MintIssuer, "sub": "gina", "roles": []string{"Viewer"},
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	foreign := signWith(t, b.secret, jwt.MapClaims{"iss": "https://id.example.com", "sub": "hugo", "roles": []string{"Viewer"},
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	until := time.Unix(now.Add(time.Hour).Unix(), 0).UTC().Format(time.RFC3339)
	for tok, want := range map[string]string{
		legacy:  "this token has no id (jti): it was minted before the manager could revoke tokens, so it stays valid until " + until,
		foreign: "this token, issued by https://id.example.com, has no id (jti), so the manager cannot revoke it: it stays valid until " + until,
	} {
		res := b.do("DELETE", "/api/v1/session", tok, nil)
		expect(t, "sign out without a jti", res, http.StatusConflict)
		if e := res.apiError(t); e.Code != api.CodeConflict || !strings.Contains(e.Message, want) || e.Details["reason"] != "notRevocable" {
			t.Fatalf("sign out without a jti: %s, want %q", res.body, want)
		}
	}
	works(t, "a legacy token after its refused sign-out", legacy, "gina", b)
	works(t, "a foreign token after its refused sign-out", foreign, "hugo", b)
}

// testSignOutForeign: a token of another issuer with a jti is revoked by issuer and id: the same
// id from a third issuer is another token.
func testSignOutForeign(t *testing.T, b, r *bundle) {
	now := time.Now()
	idToken := func(iss, sub string) string {
		return signWith(t, b.secret, jwt.MapClaims{"iss": iss, "sub": sub, "jti": "idp-1", "roles": []string{"Operator"},
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	}
	ivy, jack := idToken("https://id.example.com", "ivy"), idToken("https://other.example.com", "jack")
	expect(t, "sign out of an ID token", r.do("DELETE", "/api/v1/session", ivy, nil), http.StatusNoContent)
	signedOut(t, "the signed-out ID token", ivy, b, r)
	works(t, "another issuer's token with the same jti", jack, "jack", b, r)
}

// testSignOutAudit: session.delete records, the session's id tying it to its session.create.
func testSignOutAudit(t *testing.T, b *bundle, danaID, dana string) {
	var list api.AuditList
	b.do("GET", "/api/v1/audit?action=session.delete&limit=100", b.admin(), nil).json(t, &list)
	got := map[string]int{}
	for _, e := range list.Items {
		got[e.Actor+"/"+e.Result]++
		if e.TargetKind != "session" || e.TargetName != e.Actor || e.Details["expiresAt"] == nil {
			t.Errorf("audit record %+v", e)
		}
		if e.Actor == "dana" && e.Details["token"] != danaID {
			t.Errorf("dana's sign-out names token %v, want %s", e.Details["token"], danaID)
		}
	}
	want := map[string]int{"dana/success": 1, "frank/success": 1, "nobody/success": 1, "ivy/success": 1, "gina/failed": 1, "hugo/failed": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("audit %s: %d, want %d (%v)", k, got[k], n, got)
		}
	}
	if len(list.Items) != len(want) {
		t.Errorf("session.delete records: %v, want %v", got, want)
	}
	b.do("GET", "/api/v1/audit?action=session.create&limit=100", b.admin(), nil).json(t, &list)
	created := 0
	for _, e := range list.Items {
		if e.Details["session"] == danaID {
			created++
		}
	}
	if created != 1 {
		t.Errorf("session.create records naming dana's session %s: %d, want 1", danaID, created)
	}
	if strings.Contains(b.logs.String(), dana[strings.LastIndex(dana, ".")+1:]) {
		t.Error("a session token is in the log")
	}
}

// testSignOutPurge: a sign-out purges the records of tokens expired for longer than the leeway.
func testSignOutPurge(t *testing.T, b *bundle, tok string) {
	ctx := context.Background()
	old := &store.TokenRevokeParams{Issuer: auth.MintIssuer, JTI: "expired-long-ago", Subject: "old",
		ExpiresAt: time.Now().Add(-revocationLeeway - time.Minute), Now: time.Now().Add(-time.Hour)}
	recent := &store.TokenRevokeParams{Issuer: auth.MintIssuer, JTI: "expired-just-now", Subject: "old",
		ExpiresAt: time.Now().Add(-time.Second), Now: time.Now().Add(-time.Hour)}
	for _, p := range []*store.TokenRevokeParams{old, recent} {
		if _, err := b.store.TokenRevoke(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, "sign out", b.do("DELETE", "/api/v1/session", tok, nil), http.StatusNoContent)
	for p, want := range map[*store.TokenRevokeParams]bool{old: false, recent: true} {
		if revoked, err := b.store.TokenRevoked(ctx, p.Issuer, p.JTI); err != nil || revoked != want {
			t.Errorf("%s after a sign-out: revoked %v (%v), want %v", p.JTI, revoked, err, want)
		}
	}
}

// TestSessionSignOutEndsStreams: an event stream opened with a session token ends within a
// heartbeat of the sign-out, another user's stream goes on, and reconnecting is refused.
func TestSessionSignOutEndsStreams(t *testing.T) {
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine, withSessions, withConfig(Config{EventPoll: 50 * time.Millisecond, EventHeartbeat: 200 * time.Millisecond}))
		b.addCluster("dev-1", store.EnvironmentDev)
		d := b.submitDirect("widgets")
		path := b.url + "/api/v1/deployments/" + d.ID + "/events"
		dana, erin := b.session("dana", auth.Viewer), b.session("erin", auth.Viewer)
		danas, erins := openStream(t, b.client, path, dana), openStream(t, b.client, path, erin)
		if first, _ := danas.next(nil); first.event != "created" {
			t.Fatalf("first event %+v", first)
		}
		signedOutAt := time.Now()
		expect(t, "sign out", b.do("DELETE", "/api/v1/session", dana, nil), http.StatusNoContent)
		for {
			blk, err := danas.block()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil || (blk.event != "" && blk.event != "created") {
				t.Fatalf("the signed-out stream: %+v, %v", blk, err)
			}
		}
		if took := time.Since(signedOutAt); took > 5*time.Second {
			t.Errorf("the signed-out stream ended %s after the sign-out", took)
		}
		if !logged(b, "Event stream ends: its token was signed out") {
			t.Error("the stream's end is not logged")
		}
		refused(t, "reconnecting", b.do("GET", path[len(b.url):], dana, nil, "Accept", "text/event-stream"), "this session was signed out")
		// erin's stream is still open: an event written now reaches it.
		ev := b.addEvent(d.ID, "status", "", "Planning")
		for {
			blk, got := erins.next(nil)
			if blk.event == "end" {
				t.Fatal("erin's stream ended")
			}
			if got.ID == ev.ID {
				break
			}
		}
	})
}

// TestSessionSignOut_RefusedAtOnce: a signed-out session presented by many requests at once is
// refused in each with that request's own id. The refusal is one value the server shares; each
// answer is a copy of it with its id (writing the id into the shared value mixed up requests' ids
// and, at the same moment, stopped the manager on a concurrent map write).
func TestSessionSignOut_RefusedAtOnce(t *testing.T) {
	b := setup(t, "sqlite", withSessions)
	dana := b.session("dana", auth.Operator)
	expect(t, "sign out", b.do("DELETE", "/api/v1/session", dana, nil), http.StatusNoContent)
	var wg sync.WaitGroup
	errs := make(chan error, 16*25)
	for w := range 16 {
		wg.Go(func() {
			for i := range 25 {
				id := fmt.Sprintf("refusal-%02d-%02d", w, i)
				if got, err := refusalID(b, dana, id); err != nil || got != id {
					errs <- fmt.Errorf("request %s: answered with request id %q (%v)", id, got, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// refusalID sends GET /whoami with tok and request id id, and returns the requestId of the 401's
// details.
func refusalID(b *bundle, tok, id string) (string, error) {
	req, err := http.NewRequest("GET", b.url+"/api/v1/whoami", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Request-Id", id)
	resp, err := b.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var e api.Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(e.Message, "this session was signed out") {
		return "", fmt.Errorf("status %d, %q", resp.StatusCode, e.Message)
	}
	got, _ := e.Details["requestId"].(string)
	return got, nil
}
