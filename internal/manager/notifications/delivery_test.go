package notifications_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/notify/smtptest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/store/pgstore"
	"github.com/slipway-dev/slipway/internal/manager/store/sqlitestore"
	"github.com/slipway-dev/slipway/internal/manager/store/storetest"
)

const hmacSecret = "whsec-0123456789abcdef-slipway"

// A webhook receiver gets each notification once, signed as documented: the body is the stored
// payload byte for byte, its deliveryId the X-Slipway-Delivery header, the signature verifies
// with the channel's secret (by the docs' recipe and by Verify), and a tampered body, another
// secret or an old timestamp do not.
func TestWebhook_SignedAndDeliveredOnce(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", nil)
		rc := newReceiver(t, hmacSecret)
		webhookChannel(t, s, "ops", rc)
		c := storetest.Cluster(e.ctx, t, e.store, &storetest.ClusterOpts{Name: "prod-1", Environment: store.EnvironmentProduction})
		clusterDown(t, e, s, c, "cannot reach the cluster's API server: connection refused")
		if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
			t.Fatal(err)
		}
		e.start(s)
		eventually(t, "both delivered", func() bool {
			return len(e.deliveries(store.NotificationListParams{State: store.NotificationDelivered})) == 2
		})
		got := rc.byDelivery()
		for _, n := range e.deliveries(store.NotificationListParams{}) {
			reqs := got[n.ID]
			if len(reqs) != 1 {
				t.Fatalf("delivery %s (%s) arrived %d times, want once", n.ID, n.Kind, len(reqs))
			}
			r := reqs[0]
			if r.Verified != nil {
				t.Errorf("delivery %s: the documented check fails: %v", n.ID, r.Verified)
			}
			if err := notifications.Verify([]byte(hmacSecret), r.Header, r.Body, time.Now(), 0); err != nil {
				t.Errorf("delivery %s: Verify: %v", n.ID, err)
			}
			var p notifications.Payload
			if err := json.Unmarshal(r.Body, &p); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.Body, n.Payload) || p.DeliveryID != n.ID || r.Header.Get("X-Slipway-Event") != n.Kind ||
				r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Slipway-Attempt") != "1" {
				t.Errorf("delivery %s: headers %v, body %s; stored %s", n.ID, r.Header, r.Body, n.Payload)
			}
			if n.Attempts != 1 || n.DeliveredAt == nil || n.LastError != "" {
				t.Errorf("delivery %s recorded as %+v", n.ID, n)
			}
			for what, err := range map[string]error{
				"a tampered body": notifications.Verify([]byte(hmacSecret), r.Header, append(bytes.Clone(r.Body), ' '), time.Now(), 0),
				"another secret":  notifications.Verify([]byte("another-secret-0123456789"), r.Header, r.Body, time.Now(), 0),
				"a replay later":  notifications.Verify([]byte(hmacSecret), r.Header, r.Body, time.Now().Add(6*time.Minute), 0),
			} {
				if err == nil {
					t.Errorf("delivery %s: %s verifies", n.ID, what)
				}
			}
		}
		var p notifications.Payload
		unreachable := e.deliveries(store.NotificationListParams{Kind: notifications.KindClusterUnreachable})
		if len(unreachable) != 1 || json.Unmarshal(unreachable[0].Payload, &p) != nil {
			t.Fatalf("cluster.unreachable deliveries: %v", unreachable)
		}
		if p.Severity != "error" || p.Cluster == nil || p.Cluster.Name != "prod-1" || p.Cluster.Reason == "" ||
			!slices.Equal(p.Environments, []string{"Production"}) || p.URL != "https://slipway.example.org/api/v1/clusters/prod-1/health" {
			t.Errorf("the cluster.unreachable payload: %+v", p)
		}
	})
}

// A Slack-compatible channel gets Slack's incoming-webhook JSON: a text with the summary and one
// attachment with a color and the details as fields.
func TestSlack_PayloadShape(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", nil)
		rc := newReceiver(t, "")
		if _, err := s.CreateChannel(e.ctx, &api.ChannelRequest{Name: "chat", Kind: notifications.KindSlack,
			Slack: &api.SlackSettings{URL: rc.URL + "/services/T000/B000/XXXXSECRET"}, Routes: []api.ChannelRoute{{}}}, "alice"); err != nil {
			t.Fatal(err)
		}
		c := storetest.Cluster(e.ctx, t, e.store, &storetest.ClusterOpts{Name: "prod-1", Environment: store.EnvironmentProduction})
		clusterDown(t, e, s, c, "401 Unauthorized <again>")
		e.start(s)
		eventually(t, "delivered", func() bool { return len(rc.requests()) == 1 })
		r := rc.requests()[0]
		var msg struct {
			Text        string `json:"text"`
			Attachments []struct {
				Color, Fallback, Footer string
				Ts                      int64
				Fields                  []struct {
					Title, Value string
					Short        bool
				}
			} `json:"attachments"`
		}
		if err := json.Unmarshal(r.Body, &msg); err != nil {
			t.Fatalf("not JSON: %s", r.Body)
		}
		n := e.deliveries(store.NotificationListParams{})[0]
		if msg.Text != ":red_circle: *cluster prod-1 (Production) is Unhealthy: 401 Unauthorized &lt;again&gt;*" || len(msg.Attachments) != 1 {
			t.Fatalf("message: %s", r.Body)
		}
		a := msg.Attachments[0]
		fields := map[string]string{}
		for _, f := range a.Fields {
			fields[f.Title] = f.Value
		}
		if a.Color != "#d0021b" || a.Footer != "slipway · delivery "+n.ID || a.Ts == 0 || !strings.Contains(a.Fallback, "prod-1") ||
			fields["Event"] != "cluster.unreachable" || fields["Environments"] != "Production" || fields["Cluster"] != "prod-1" ||
			fields["Link"] != "https://slipway.example.org/api/v1/clusters/prod-1/health" {
			t.Errorf("attachment: %+v", a)
		}
		if r.Header.Get("X-Slipway-Delivery") != n.ID || r.Header.Get("X-Slipway-Signature") != "" {
			t.Errorf("headers: %v", r.Header)
		}
	})
}

// An smtp channel mails through the manager's mailer (STARTTLS, AUTH PLAIN) to a real SMTP
// server, with the delivery id in a header; without a mailer an smtp channel is refused.
func TestSMTP_ThroughTheMailer(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		mailSrv := smtptest.Start(t, smtptest.Options{})
		mailer := &notify.Mailer{Addr: mailSrv.Addr, From: "Slipway <slipway@example.org>", Username: smtptest.User,
			Password: smtptest.Password, TLS: &tls.Config{RootCAs: smtptest.CertPool(t), MinVersion: tls.VersionTLS12}}
		s := e.service("r1", func(c *notifications.Config) { c.Mailer = mailer })
		req := &api.ChannelRequest{Name: "ops-mail", Kind: notifications.KindSMTP,
			SMTP: &api.SMTPSettings{To: []string{"ops@example.org", "Oncall <oncall@example.org>"}}, Routes: []api.ChannelRoute{{}}}
		if _, err := e.service("r0", nil).CreateChannel(e.ctx, req, "alice"); !isInvalid(err, "smtp") {
			t.Fatalf("an smtp channel without a mailer: %v", err)
		}
		if _, err := s.CreateChannel(e.ctx, req, "alice"); err != nil {
			t.Fatal(err)
		}
		c := storetest.Cluster(e.ctx, t, e.store, &storetest.ClusterOpts{Name: "dev-1", Environment: store.EnvironmentDev})
		clusterDown(t, e, s, c, "connection refused")
		e.start(s)
		m := mailSrv.Receive(t)
		n := e.deliveries(store.NotificationListParams{})[0]
		if !m.TLS || m.User != smtptest.User || !slices.Equal(m.To, []string{"ops@example.org", "oncall@example.org"}) ||
			m.Header.Get("X-Slipway-Delivery") != n.ID || m.Header.Get("X-Slipway-Event") != "cluster.unreachable" ||
			!strings.Contains(m.Header.Get("Subject"), "cluster dev-1 (Dev) is Unhealthy") ||
			!strings.Contains(m.Body, "Reason:        connection refused") || !strings.Contains(m.Body, "Delivery "+n.ID) {
			t.Fatalf("mail: to %v, TLS %v, user %q, headers %v\n%s", m.To, m.TLS, m.User, m.Header, m.Body)
		}
		eventually(t, "recorded delivered", func() bool {
			return len(e.deliveries(store.NotificationListParams{State: store.NotificationDelivered})) == 1
		})
	})
}

// A receiver that fails (503) for a while gets every notification once it recovers, each under
// its one id; the failed attempts are counted, and the last error says what the receiver answered.
func TestFailingReceiver_GetsEveryNotificationOnceRecovered(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", nil)
		rc := newReceiver(t, hmacSecret)
		// The receiver decides each answer when the request arrives and counts its 503s, so
		// "answered 503 three times" is known at the receiver, not read from attempts the store
		// counts when it claims a delivery (a claimed third attempt may still be on its way).
		var mu sync.Mutex
		recovered := false
		refused := map[string]int{}
		rc.answer = func(r received) int {
			mu.Lock()
			defer mu.Unlock()
			if recovered {
				return http.StatusOK
			}
			refused[r.Header.Get("X-Slipway-Delivery")]++
			return http.StatusServiceUnavailable
		}
		webhookChannel(t, s, "ops", rc)
		for range 5 {
			if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
				t.Fatal(err)
			}
		}
		e.start(s)
		eventually(t, "every delivery refused three times", func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, n := range e.deliveries(store.NotificationListParams{}) {
				if refused[n.ID] < 3 || n.State != store.NotificationPending {
					return false
				}
			}
			return len(refused) == 5
		})
		for _, n := range e.deliveries(store.NotificationListParams{}) {
			if !strings.Contains(n.LastError, "503 Service Unavailable: status 503") || strings.Contains(n.LastError, "tok-ops") {
				t.Fatalf("last error %q", n.LastError)
			}
		}
		mu.Lock()
		recovered = true
		mu.Unlock()
		eventually(t, "all delivered", func() bool {
			return len(e.deliveries(store.NotificationListParams{State: store.NotificationDelivered})) == 5
		})
		got := rc.byDelivery()
		for _, n := range e.deliveries(store.NotificationListParams{}) {
			if len(got[n.ID]) != n.Attempts || n.Attempts < 4 {
				t.Errorf("delivery %s: %d attempts recorded, %d requests received", n.ID, n.Attempts, len(got[n.ID]))
			}
		}
		if len(got) != 5 {
			t.Errorf("the receiver saw %d delivery ids, want 5", len(got))
		}
	})
}

// A replica that dies mid-delivery (it claimed the deliveries, counted an attempt and never
// recorded the outcome) holds them up only until its lease lapses; another replica, on another
// store client, then delivers each. While the dead claim lives nobody else may take them.
func TestDeadReplica_AnotherDeliversAfterTheLease(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s1 := e.service("r1", nil)
		rc := newReceiver(t, hmacSecret)
		webhookChannel(t, s1, "ops", rc)
		for range 3 {
			if _, err := s1.TestChannel(e.ctx, "ops", "alice"); err != nil {
				t.Fatal(err)
			}
		}
		ch, err := e.store.NotificationChannelGetByName(e.ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := e.store.NotificationClaim(e.ctx, &store.NotificationClaimParams{Owner: "r1", ChannelID: ch.ID,
			Now: time.Now(), Lease: 2 * time.Second, Limit: 10})
		if err != nil || len(claimed) != 3 {
			t.Fatalf("r1 claims: %d, %v", len(claimed), err)
		}
		if due, err := e.store.NotificationDueChannels(e.ctx, time.Now()); err != nil || len(due) != 0 {
			t.Fatalf("due while r1's claim lives: %v, %v", due, err)
		}
		other := e.secondClient()
		s2 := e.service("r2", func(c *notifications.Config) { c.Store = other })
		e.start(s2)
		eventually(t, "delivered by r2", func() bool {
			return len(e.deliveries(store.NotificationListParams{State: store.NotificationDelivered})) == 3
		})
		got := rc.byDelivery()
		for _, n := range claimed {
			d, err := e.store.NotificationGetByID(e.ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.Attempts != 2 || len(got[n.ID]) != 1 || got[n.ID][0].Header.Get("X-Slipway-Attempt") != "2" {
				t.Errorf("delivery %s: %d attempts, received %d times", n.ID, d.Attempts, len(got[n.ID]))
			}
		}
	})
}

// secondClient opens another store client on the env's database (another replica's).
func (e *env) secondClient() store.Store {
	e.t.Helper()
	var st store.Store
	var err error
	if e.pgURL != "" {
		st, err = pgstore.Open(e.ctx, e.pgURL, pgstore.WithSchemaCheck())
	} else {
		st, err = sqlitestore.Open(e.ctx, e.dbPath, sqlitestore.WithSchemaCheck())
	}
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = st.Close() })
	return st
}

// A receiver that hangs holds at most PerChannel attempts of its own channel: another channel's
// notification is delivered while every attempt to the hanging one is still waiting.
func TestHangingReceiver_DoesNotHoldOthers(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", func(c *notifications.Config) { c.Timeout, c.PerChannel = time.Minute, 2 })
		hung, fast := newReceiver(t, hmacSecret), newReceiver(t, hmacSecret)
		release := make(chan struct{})
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		hung.hang = func(r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		webhookChannel(t, s, "hung", hung)
		webhookChannel(t, s, "fast", fast)
		for range 5 {
			if _, err := s.TestChannel(e.ctx, "hung", "alice"); err != nil {
				t.Fatal(err)
			}
		}
		e.start(s)
		eventually(t, "two attempts hanging", func() bool { return len(hung.requests()) == 2 })
		if _, err := s.TestChannel(e.ctx, "fast", "alice"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the other channel's delivery", func() bool {
			return len(e.deliveries(store.NotificationListParams{ChannelName: "fast", State: store.NotificationDelivered})) == 1
		})
		if n := len(hung.requests()); n != 2 {
			t.Fatalf("%d attempts reached the hanging receiver, want its 2 slots", n)
		}
		if n := len(e.deliveries(store.NotificationListParams{ChannelName: "hung", State: store.NotificationPending})); n != 5 {
			t.Fatalf("%d of the hanging channel's 5 deliveries pending", n)
		}
		once.Do(func() { close(release) })
		eventually(t, "the hanging channel's deliveries once it answers", func() bool {
			return len(e.deliveries(store.NotificationListParams{ChannelName: "hung", State: store.NotificationDelivered})) == 5
		})
	})
}

// An attempt is bounded by the timeout: a receiver that never answers fails it with "no answer
// within", and the delivery is tried again.
func TestHangingReceiver_TimesOut(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", func(c *notifications.Config) { c.Timeout = 300 * time.Millisecond })
		rc := newReceiver(t, hmacSecret)
		rc.hang = func(r *http.Request) { <-r.Context().Done() }
		webhookChannel(t, s, "ops", rc)
		if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
			t.Fatal(err)
		}
		e.start(s)
		eventually(t, "two attempts timed out", func() bool {
			ns := e.deliveries(store.NotificationListParams{})
			return ns[0].Attempts >= 2 && ns[0].ClaimedBy == "" && ns[0].State == store.NotificationPending
		})
		n := e.deliveries(store.NotificationListParams{})[0]
		if n.LastError != "POST "+rc.URL+"/…: no answer within 300ms" {
			t.Fatalf("last error %q", n.LastError)
		}
	})
}

// Giving up: after MaxAttempts attempts, or once the next attempt would come later than
// RetryFor after the notification was stored, a delivery is failed with its last error, and
// the worker does not try it again.
func TestGiveUp(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		rc := newReceiver(t, hmacSecret)
		rc.answer = func(received) int { return http.StatusBadGateway }
		s := e.service("r1", func(c *notifications.Config) { c.MaxAttempts = 3 })
		webhookChannel(t, s, "ops", rc)
		if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
			t.Fatal(err)
		}
		e.start(s)
		eventually(t, "ops failed", func() bool {
			return len(e.deliveries(store.NotificationListParams{ChannelName: "ops", State: store.NotificationFailed})) == 1
		})
		s.Stop()
		byTime := e.service("r2", func(c *notifications.Config) { c.RetryFor = 200 * time.Millisecond })
		webhookChannel(t, byTime, "slow", rc)
		if _, err := byTime.TestChannel(e.ctx, "slow", "alice"); err != nil {
			t.Fatal(err)
		}
		e.start(byTime)
		eventually(t, "slow failed", func() bool {
			return len(e.deliveries(store.NotificationListParams{ChannelName: "slow", State: store.NotificationFailed})) == 1
		})
		time.Sleep(300 * time.Millisecond) // time for a wrong retry
		for _, n := range e.deliveries(store.NotificationListParams{}) {
			if n.State != store.NotificationFailed || n.NextAttemptAt != nil || !strings.Contains(n.LastError, "502 Bad Gateway") ||
				len(rc.byDelivery()[n.ID]) != n.Attempts {
				t.Errorf("delivery %s: %+v; received %d times", n.ChannelName, n, len(rc.byDelivery()[n.ID]))
			}
			if n.ChannelName == "ops" && n.Attempts != 3 {
				t.Errorf("ops gave up after %d attempts, want 3", n.Attempts)
			}
		}
		if !bytes.Contains(e.logs.Bytes(), []byte("notifications: Delivery failed; giving up")) {
			t.Error("giving up is not logged")
		}
	})
}

// Deleting a channel fails its pending deliveries in the same transaction: none is sent, and the
// channel cannot be tested any more.
func TestDeleteChannel_FailsPending(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", nil)
		rc := newReceiver(t, hmacSecret)
		webhookChannel(t, s, "ops", rc)
		if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteChannel(e.ctx, "ops"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteChannel(e.ctx, "ops"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleting twice: %v", err)
		}
		n := e.deliveries(store.NotificationListParams{})[0]
		if n.State != store.NotificationFailed || n.LastError != "the channel was deleted" {
			t.Fatalf("after the deletion: %+v", n)
		}
		if _, err := s.TestChannel(e.ctx, "ops", "alice"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("testing a deleted channel: %v", err)
		}
		e.start(s)
		time.Sleep(100 * time.Millisecond)
		if len(rc.requests()) != 0 {
			t.Fatal("a deleted channel's delivery was sent")
		}
	})
}
