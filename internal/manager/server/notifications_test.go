package server

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// The notification API: an Admin adds, lists, changes, tests and removes channels; bad input is
// a 400 naming the field and stores nothing; a channel is shown without its secrets (the URL's
// token, the HMAC secret), in no answer and no log line; deliveries are listed with their state,
// paged and filtered; every change is audited.
func TestNotificationsAPI(t *testing.T) {
	forEngine(t, testNotificationsAPI)
}

func testNotificationsAPI(t *testing.T, engine string) {
	b := setup(t, engine)
	admin := b.admin()
	const token, secret = "tok-Zk81pQ", "whsec-api-test-0123456789"
	body := `{"name": "ops", "kind": "webhook", "webhook": {"url": "https://hooks.example.com/in?token=` + token +
		`", "secret": "` + secret + `"}, "routes": [{"kinds": ["deployment.failed"], "environments": ["Production"]}]}`
	var ch api.Channel
	r := b.do("POST", "/api/v1/notifications/channels", admin, body)
	expect(t, "create", r, http.StatusCreated)
	r.json(t, &ch)
	if ch.Name != "ops" || ch.Kind != "webhook" || ch.Webhook == nil || ch.Webhook.Endpoint != "https://hooks.example.com/…" ||
		!ch.Webhook.SecretSet || ch.CreatedBy != "alice" || len(ch.Routes) != 1 {
		t.Fatalf("created: %s", r.body)
	}
	expect(t, "the same name", b.do("POST", "/api/v1/notifications/channels", admin, body), http.StatusConflict)
	expectInvalid(t, "an unknown kind of event", b.do("POST", "/api/v1/notifications/channels", admin,
		`{"name": "x", "kind": "slack", "slack": {"url": "https://hooks.slack.com/services/T/B/C"}, "routes": [{"kinds": ["deployment.exploded"]}]}`), "routes[0].kinds[0]")
	expectInvalid(t, "an unknown field", b.do("POST", "/api/v1/notifications/channels", admin,
		`{"name": "x", "kind": "slack", "slack": {"url": "https://hooks.slack.com/x", "token": "y"}, "routes": [{}]}`), "token")
	expectInvalid(t, "smtp without a mail server", b.do("POST", "/api/v1/notifications/channels", admin,
		`{"name": "x", "kind": "smtp", "smtp": {"to": ["ops@example.org"]}, "routes": [{}]}`), "smtp")
	expect(t, "a second channel", b.do("POST", "/api/v1/notifications/channels", admin,
		`{"name": "chat", "kind": "slack", "slack": {"url": "https://hooks.slack.com/services/T1/B2/`+token+`"}, "routes": [{}]}`), http.StatusCreated)

	var page api.ChannelList
	b.do("GET", "/api/v1/notifications/channels?limit=1", admin, nil).json(t, &page)
	var next api.ChannelList
	b.do("GET", "/api/v1/notifications/channels?limit=1&continue="+page.Continue, admin, nil).json(t, &next)
	if len(page.Items) != 1 || page.Items[0].Name != "chat" || len(next.Items) != 1 || next.Items[0].Name != "ops" {
		t.Fatalf("pages: %+v then %+v", page, next)
	}
	expect(t, "get", b.do("GET", "/api/v1/notifications/channels/ops", admin, nil), http.StatusOK)
	expect(t, "get an unknown channel", b.do("GET", "/api/v1/notifications/channels/nope", admin, nil), http.StatusNotFound)

	r = b.do("PATCH", "/api/v1/notifications/channels/ops", admin, `{"routes": [{"kinds": ["operator.unhealthy", "cluster.unreachable"]}]}`)
	expect(t, "patch the routes", r, http.StatusOK)
	r.json(t, &ch)
	if !slices.Equal(ch.Routes[0].Kinds, []string{"operator.unhealthy", "cluster.unreachable"}) || ch.Webhook.Endpoint != "https://hooks.example.com/…" {
		t.Fatalf("patched: %s", r.body)
	}
	expectInvalid(t, "another kind's settings", b.do("PATCH", "/api/v1/notifications/channels/ops", admin, `{"slack": {"url": "https://x.example/y"}}`), "slack")
	expect(t, "patch an unknown channel", b.do("PATCH", "/api/v1/notifications/channels/nope", admin, `{"routes": [{}]}`), http.StatusNotFound)

	var sent api.Notification
	r = b.do("POST", "/api/v1/notifications/channels/ops/test", admin, nil)
	expect(t, "test", r, http.StatusAccepted)
	r.json(t, &sent)
	if sent.Channel != "ops" || sent.Kind != "test" || sent.State != "pending" || !bytes.Contains(sent.Payload, []byte(`"deliveryId":"`+sent.ID+`"`)) {
		t.Fatalf("test delivery: %s", r.body)
	}
	list := func(query string) api.NotificationList {
		t.Helper()
		var l api.NotificationList
		r := b.do("GET", "/api/v1/notifications"+query, b.token("otto", "Operator"), nil)
		expect(t, "list "+query, r, http.StatusOK)
		r.json(t, &l)
		return l
	}
	if l := list("?channel=ops&kind=test&state=pending"); len(l.Items) != 1 || l.Items[0].ID != sent.ID || l.Items[0].Payload != nil {
		t.Fatalf("the test delivery listed: %+v", l)
	}
	if l := list("?state=delivered"); len(l.Items) != 0 {
		t.Fatalf("delivered: %+v", l)
	}
	expectInvalid(t, "a bad state", b.do("GET", "/api/v1/notifications?state=lost", admin, nil), "state")
	expect(t, "get a delivery", b.do("GET", "/api/v1/notifications/"+sent.ID, admin, nil), http.StatusOK)
	expect(t, "get an unknown delivery", b.do("GET", "/api/v1/notifications/6f1c2b9e-0a5d-4e47-9a8e-2f4f0c1d7b31", admin, nil), http.StatusNotFound)

	expect(t, "delete", b.do("DELETE", "/api/v1/notifications/channels/ops", admin, nil), http.StatusNoContent)
	expect(t, "delete again", b.do("DELETE", "/api/v1/notifications/channels/ops", admin, nil), http.StatusNotFound)
	expect(t, "test a deleted channel", b.do("POST", "/api/v1/notifications/channels/ops/test", admin, nil), http.StatusNotFound)
	if l := list("?state=failed"); len(l.Items) != 1 || l.Items[0].LastError != "the channel was deleted" {
		t.Fatalf("after the deletion: %+v", l)
	}

	var audit api.AuditList
	b.do("GET", "/api/v1/audit?targetKind=notificationChannel", admin, nil).json(t, &audit)
	var actions []string
	for _, e := range audit.Items {
		actions = append(actions, e.Action+":"+e.Result)
	}
	for _, want := range []string{"notification.channel.create:success", "notification.channel.create:invalid",
		"notification.channel.update:success", "notification.channel.test:success", "notification.channel.delete:success"} {
		if !slices.Contains(actions, want) {
			t.Errorf("audit lacks %s: %v", want, actions)
		}
	}
	for where, data := range map[string][]byte{"responses": b.bodies.Bytes(), "logs": b.logs.Bytes()} {
		for _, s := range []string{token, secret} {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%q appears in the %s", s, where)
			}
		}
	}
	if strings.Contains(string(b.bodies.Bytes()), "hooks.slack.com/services") {
		t.Error("a Slack URL's path appears in a response")
	}
}
