package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/clusters"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// hookReceiver is a webhook receiver that records each verified payload by delivery id.
type hookReceiver struct {
	mu  sync.Mutex
	got map[string]notifications.Payload
	bad []string
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p notifications.Payload
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := notifications.Verify([]byte(notifySecret), r.Header, body, time.Now(), 0); err != nil || json.Unmarshal(body, &p) != nil {
		rc.bad = append(rc.bad, string(body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.got[r.Header.Get(notifications.HeaderDelivery)] = p
}

// kinds are the kinds received, in the order the events happened.
func (rc *hookReceiver) kinds() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ps := make([]notifications.Payload, 0, len(rc.got))
	for _, p := range rc.got {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b notifications.Payload) int { return a.Time.Compare(b.Time) })
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Kind
	}
	return out
}

const notifySecret = "engine-test-hmac-secret-0123456789"

// TestNotifications_FromTheEngine: with a notifications service, the engine stores a
// notification in the transaction of each change people are told about, and a webhook receiver
// gets them all: both Completed deployments, the operator turning Unhealthy once (not at each of
// its failed checks), the automatic rollback, the operator Healthy again, a deployment Failed in
// planning, and one waiting for a Production approval (with the approval in it).
func TestNotifications_FromTheEngine(t *testing.T) {
	srv := single(t)
	line, err := clusters.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := clusters.ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	var svc *notifications.Service
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: srv},
		{Name: "prod-1", Environment: store.EnvironmentProduction, Server: srv}}, func(c *Config) {
		svc, err = notifications.New(notifications.Config{Store: c.Store, Sealer: keys, Logger: slog.New(slog.DiscardHandler),
			Poll: 50 * time.Millisecond, RetryFirst: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		c.Notifications = svc
	})
	rc := &hookReceiver{got: map[string]notifications.Payload{}}
	hs := httptest.NewServer(rc)
	t.Cleanup(hs.Close)
	ctx := context.Background()
	if _, err := svc.CreateChannel(ctx, &api.ChannelRequest{Name: "ops", Kind: notifications.KindWebhook,
		Webhook: &api.WebhookSettings{URL: hs.URL + "/hook", Secret: notifySecret},
		Routes:  []api.ChannelRoute{{}}}, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)

	first := h.goodThenBad("ntf", "dev-1", restarting)
	d := h.submit(`{"operator": "ntf", "version": "1.0.1", "clusters": ["dev-1"], "strategy": "Direct", "directConfig": {"skipHealthChecks": true}}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	h.wait(d.ID, "rolled back", func(d *store.Deployment) bool { return d.Status == store.DeploymentRolledBack })
	h.wait(first.ID, "healthy again", func(*store.Deployment) bool {
		recs, err := h.store.OperatorHealthList(ctx, &store.OperatorHealthListParams{OperatorName: "ntf"})
		return err == nil && len(recs) == 1 && recs[0].DeploymentID == first.ID && recs[0].Health == "Healthy"
	})

	kubeconfig, proxy := proxied(t, srv)
	if _, err := h.clusters.Register(ctx, clusters.RegisterParams{Name: "dev-gone", Environment: store.EnvironmentDev, Kubeconfig: kubeconfig}); err != nil {
		t.Fatal(err)
	}
	proxy.Close()
	if _, err := h.clusters.Check(ctx, "dev-gone"); err != nil {
		t.Fatal(err)
	}
	failed := h.waitFailed(h.submit(`{"operator": "ntf", "version": "1.0.0", "clusters": ["dev-gone"], "strategy": "Direct"}`).ID)
	h.operator("ntfprod", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	waiting := h.waitStatus(h.submit(`{"operator": "ntfprod", "version": "1.0.0", "clusters": ["prod-1"], "strategy": "Direct"}`).ID, store.DeploymentWaitingApproval)

	want := []string{"deployment.completed", "deployment.completed", "operator.unhealthy", "deployment.rolledBack",
		"operator.recovered", "deployment.failed", "deployment.waitingApproval"}
	deadline := time.Now().Add(time.Minute)
	for !slices.Equal(rc.kinds(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("received %v, want %v", rc.kinds(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("deliveries that do not verify: %v", rc.bad)
	}
	for _, p := range rc.got {
		switch p.Kind {
		case "deployment.failed":
			if p.Deployment.ID != failed.ID || p.Deployment.Reason != failed.Reason || p.Deployment.PreviousStatus != "Planning" {
				t.Errorf("deployment.failed: %+v, the deployment: %s %q", p.Deployment, failed.ID, failed.Reason)
			}
		case "deployment.waitingApproval":
			if p.Deployment.ID != waiting.ID || len(p.Approvals) == 0 || p.Approvals[0].RequiredRole == "" ||
				!slices.Equal(p.Environments, []string{"Production"}) {
				t.Errorf("deployment.waitingApproval: %+v", p)
			}
		case "operator.unhealthy":
			if p.Operator.Cluster != "dev-1" || p.Operator.DeploymentID != d.ID || p.Operator.Problems == "" || p.Operator.Environment != "Dev" {
				t.Errorf("operator.unhealthy: %+v", p.Operator)
			}
		}
	}
}
