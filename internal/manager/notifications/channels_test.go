package notifications_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/secrettest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// isInvalid reports whether err is bad input in field.
func isInvalid(err error, field string) bool {
	e, ok := invalid.As(err)
	return ok && e.Field == field
}

// Every bad channel is refused naming its field, and nothing is stored.
func TestCreateChannel_BadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	s := e.service("r1", func(c *notifications.Config) { c.Mailer = &notify.Mailer{} })
	hook := func() *api.WebhookSettings {
		return &api.WebhookSettings{URL: "https://hooks.example.com/x", Secret: hmacSecret}
	}
	all := []api.ChannelRoute{{}}
	for field, req := range map[string]api.ChannelRequest{
		"name":                      {Name: "Ops_1", Kind: "webhook", Webhook: hook(), Routes: all},
		"kind":                      {Name: "ops", Kind: "pager", Routes: all},
		"webhook":                   {Name: "ops", Kind: "webhook", Routes: all},
		"slack":                     {Name: "ops", Kind: "webhook", Webhook: hook(), Slack: &api.SlackSettings{URL: "https://x.example"}, Routes: all},
		"webhook.url":               {Name: "ops", Kind: "webhook", Webhook: &api.WebhookSettings{URL: "ftp://x.example/a", Secret: hmacSecret}, Routes: all},
		"webhook.secret":            {Name: "ops", Kind: "webhook", Webhook: &api.WebhookSettings{URL: "https://x.example/a", Secret: "short"}, Routes: all},
		"smtp.to[1]":                {Name: "ops", Kind: "smtp", SMTP: &api.SMTPSettings{To: []string{"a@example.org", "not an address"}}, Routes: all},
		"smtp.to":                   {Name: "ops", Kind: "smtp", SMTP: &api.SMTPSettings{}, Routes: all},
		"routes":                    {Name: "ops", Kind: "webhook", Webhook: hook()},
		"routes[1].kinds[0]":        {Name: "ops", Kind: "webhook", Webhook: hook(), Routes: []api.ChannelRoute{{}, {Kinds: []string{"deployment.exploded"}}}},
		"routes[0].environments[1]": {Name: "ops", Kind: "webhook", Webhook: hook(), Routes: []api.ChannelRoute{{Environments: []string{"Dev", "prod"}}}},
	} {
		if _, err := s.CreateChannel(e.ctx, &req, "alice"); !isInvalid(err, field) {
			t.Errorf("%s: %v, want a 400 naming %s", field, err, field)
		}
	}
	for _, bad := range []string{"https://hooks.example.com/x#frag", "/relative", "https://", "http://:80/x"} {
		req := api.ChannelRequest{Name: "ops", Kind: "slack", Slack: &api.SlackSettings{URL: bad}, Routes: all}
		_, err := s.CreateChannel(e.ctx, &req, "alice")
		if !isInvalid(err, "slack.url") || strings.Contains(err.Error(), bad) {
			t.Errorf("slack url %q: %v (the message must not quote it)", bad, err)
		}
	}
	if list, err := s.ListChannels(e.ctx, "", 100); err != nil || len(list) != 0 {
		t.Fatalf("channels after the refusals: %v, %v", list, err)
	}
	good := api.ChannelRequest{Name: "ops", Kind: "webhook", Webhook: hook(), Routes: all}
	if _, err := s.CreateChannel(e.ctx, &good, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateChannel(e.ctx, &good, "alice"); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("a second channel ops: %v", err)
	}
}

// A patch replaces what it gives: the secret alone (the receiver then verifies with the new one),
// the routes; it cannot change the kind.
func TestUpdateChannel(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", nil)
		rc := newReceiver(t, hmacSecret)
		webhookChannel(t, s, "ops", rc)
		if _, err := s.UpdateChannel(e.ctx, "ops", &api.ChannelPatch{Slack: &api.SlackSettings{URL: "https://x.example/y"}}); !isInvalid(err, "slack") {
			t.Fatalf("a slack patch on a webhook: %v", err)
		}
		if _, err := s.UpdateChannel(e.ctx, "nope", &api.ChannelPatch{}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("patching an unknown channel: %v", err)
		}
		const rotated = "whsec-rotated-9876543210-slipway"
		ch, err := s.UpdateChannel(e.ctx, "ops", &api.ChannelPatch{Webhook: &api.WebhookSettings{Secret: rotated},
			Routes: []api.ChannelRoute{{Kinds: []string{"cluster.unreachable"}, Environments: []string{"Production"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if ch.Webhook.Endpoint != rc.URL+"/…" || !ch.Webhook.SecretSet || len(ch.Routes) != 1 || ch.Routes[0].Kinds[0] != "cluster.unreachable" {
			t.Fatalf("patched: %+v", ch)
		}
		rc.secret = []byte(rotated)
		if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
			t.Fatal(err)
		}
		e.start(s)
		eventually(t, "delivered", func() bool { return len(rc.requests()) == 1 })
		r := rc.requests()[0]
		if r.Verified != nil || r.Header.Get("X-Slipway-Event") != "test" {
			t.Fatalf("after the rotation: %v, %v (the URL must be the same)", r.Verified, r.Header)
		}
		if notifications.Verify([]byte(hmacSecret), r.Header, r.Body, timeNow(), 0) == nil {
			t.Fatal("the old secret still verifies")
		}
	})
}

// No secret (the URL's token, the HMAC secret, a Slack URL) appears in what the API shows, in a
// payload, in a stored error (a receiver that echoes the request URI), in the logs or in the
// database as text.
func TestSecrets_NeverShown(t *testing.T) {
	forEngine(t, func(t *testing.T, e *env) {
		s := e.service("r1", nil)
		rc := newReceiver(t, hmacSecret)
		rc.answer = func(received) int { return http.StatusInternalServerError }
		const token, slackToken = "tok-q8Zr2LbXw4", "T0001/B0002/slackSecret77"
		created, err := s.CreateChannel(e.ctx, &api.ChannelRequest{Name: "ops", Kind: "webhook",
			Webhook: &api.WebhookSettings{URL: rc.URL + "/hooks?token=" + token, Secret: hmacSecret},
			Routes:  []api.ChannelRoute{{}}}, "alice")
		if err != nil {
			t.Fatal(err)
		}
		slack, err := s.CreateChannel(e.ctx, &api.ChannelRequest{Name: "chat", Kind: "slack",
			Slack: &api.SlackSettings{URL: rc.URL + "/services/" + slackToken}, Routes: []api.ChannelRoute{{}}}, "alice")
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetChannel(e.ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.ListChannels(e.ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TestChannel(e.ctx, "chat", "alice"); err != nil {
			t.Fatal(err)
		}
		e.start(s)
		eventually(t, "failed attempts recorded", func() bool {
			for _, n := range e.deliveries(store.NotificationListParams{}) {
				if n.LastError == "" {
					return false
				}
			}
			return true
		})
		shown, _ := json.Marshal([]any{created, slack, got, list, e.deliveries(store.NotificationListParams{})})
		if !bytes.Contains(shown, []byte("500 Internal Server Error: status 500 for …")) {
			t.Fatalf("the echo is not in the last error: %s", shown)
		}
		forms := [][]byte{[]byte(token), []byte(hmacSecret), []byte(slackToken), []byte("slackSecret77")}
		secrettest.AssertAbsent(t, "API views and deliveries", shown, forms)
		for _, r := range rc.requests() {
			secrettest.AssertAbsent(t, "a delivery's body", r.Body, forms)
		}
		secrettest.AssertAbsent(t, "log", e.logs.Bytes(), forms)
		secrettest.AssertAbsent(t, "database", secrettest.DatabaseBytes(t, e.dbPath, e.pgURL), forms)
	})
}
