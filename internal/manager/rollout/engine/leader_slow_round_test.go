package engine

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/notify"
	"github.com/slipway-dev/slipway/internal/manager/notify/smtptest"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// blackHole is an API server address that accepts connections and never answers: a health
// check against it hangs until its timeout. It counts the connections accepted and closed.
type blackHole struct {
	addr             string
	accepted, closed atomic.Int64
}

func newBlackHole(t *testing.T) *blackHole {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{addr: l.Addr().String()}
	var conns sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.accepted.Add(1)
			conns.Go(func() {
				_, _ = io.Copy(io.Discard, c) // until the client gives up and closes
				_ = c.Close()
				b.closed.Add(1)
			})
		}
	}()
	return b
}

// hangingClusters sends one replica's requests to cluster slow to its black hole, and counts
// the connections asked for it (one per health check).
type hangingClusters struct {
	Clusters
	slow   string
	hole   *blackHole
	checks atomic.Int64
}

func (c *hangingClusters) RESTConfig(ctx context.Context, name string) (*rest.Config, error) {
	cfg, err := c.Clusters.RESTConfig(ctx, name)
	if err != nil || name != c.slow {
		return cfg, err
	}
	c.checks.Add(1)
	cfg.Host = "https://" + c.hole.addr
	return cfg, nil
}

// TestLeader_SlowRoundKeepsLeaseAndMail runs two replicas whose health checks of a live release
// hang until their timeout (6 s, a round far longer than the 2.4 s lease): the leader keeps the
// lease through every round (the other replica never checks anything), and a pending approval
// created while a round is in flight is mailed (real SMTP server) before any of that round's
// checks has ended.
func TestLeader_SlowRoundKeepsLeaseAndMail(t *testing.T) {
	smtp := smtptest.Start(t, smtptest.Options{})
	h := newHarness(t, []target{{Name: "slow-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		// A renewal has a third of the lease (800 ms) on the one SQLite writer both replicas share.
		c.Lease = 2400 * time.Millisecond
		c.HealthInterval = 200 * time.Millisecond
		c.FailureThreshold = 1000
		c.Checker = health.NewChecker(health.Config{CheckTimeout: 6 * time.Second, Logger: c.Logger})
	})
	ctx := context.Background()
	op := h.operator("slowop", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	if _, err := h.store.DeploymentCreate(ctx, &store.Deployment{
		OperatorID: op.ID, Version: "1.0.0", Strategy: "Direct", Status: store.DeploymentCompleted, RequestedBy: "alice",
		CreatedAt: time.Now(), Clusters: []*store.DeploymentCluster{{ClusterName: "slow-1", Environment: store.EnvironmentDev,
			Status: store.ClusterHealthy, HelmRevision: 1, Namespace: "op-slowop", Release: "slowop"}},
	}); err != nil {
		t.Fatal(err)
	}

	// replica starts an engine named id with its own black hole and notifier.
	replica := func(id string) *hangingClusters {
		hc := &hangingClusters{Clusters: h.clusters, slow: "slow-1", hole: newBlackHole(t)}
		cfg := h.cfg
		cfg.ReplicaID = id
		cfg.Clusters = hc
		var eng *Engine
		n, err := notify.New(notify.Config{
			Sender:     &notify.Mailer{Addr: smtp.Addr, From: "slipway@example.com", Username: smtptest.User, Password: smtptest.Password, TLS: &tls.Config{RootCAs: smtptest.CertPool(t)}},
			BaseURL:    "https://slipway.example.com",
			Recipients: map[string][]string{"*": {"owners@example.com"}},
			Log:        slog.New(slog.DiscardHandler),
			OnResult:   func(r notify.Result) { eng.MailResult(r) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Stop)
		cfg.Notifier = n
		if eng, err = New(cfg); err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Stop)
		return hc
	}
	a := replica("replica-a")
	waitFor(t, "replica-a's first health check", func() bool { return a.hole.accepted.Load() > 0 })
	b := replica("replica-b")

	// A round is in flight (its checks hang): an approval is due for mail now.
	waitFor(t, "a round in flight", func() bool { return a.hole.accepted.Load() > a.hole.closed.Load() })
	closedBefore := a.hole.closed.Load()
	pending := h.pendingApproval()
	m := smtp.Await(t, "approval mail", func(m smtptest.Message) bool { return m.Header.Get("X-Slipway-Approval-Id") == pending.ID })
	if closed := a.hole.closed.Load(); closed != closedBefore {
		t.Errorf("the mail came after %d of the round's connections had ended: it waited for the round", closed-closedBefore)
	}
	t.Logf("mail %q arrived while the round was in flight", m.Header.Get("Subject"))

	// Three more rounds of the leader: the other replica never checks (the lease never lapsed).
	rounds := a.checks.Load()
	waitFor(t, "three more rounds", func() bool { return a.checks.Load() >= rounds+3 })
	if n := b.checks.Load(); n != 0 {
		t.Errorf("replica-b ran %d health checks while replica-a led: two health loops ran", n)
	}
	t.Logf("replica-a ran %d checks of 6 s under a 2.4 s lease, replica-b %d", a.checks.Load(), b.checks.Load())
	mailed := 0
	for _, ev := range h.events(pending.DeploymentID) {
		var d struct{ Replica string }
		_ = json.Unmarshal(ev.Details, &d)
		if ev.Type == "approval.mailed" {
			mailed++
			if d.Replica != "replica-a" {
				t.Errorf("approval mailed by %q, want the leader replica-a", d.Replica)
			}
		}
	}
	if mailed != 1 {
		t.Errorf("%d approval.mailed events, want 1", mailed)
	}
}

// pendingApproval stores a deployment of another operator waiting for a pending approval (not
// due: no replica steps it) and returns the approval.
func (h *harness) pendingApproval() *store.Approval {
	h.t.Helper()
	ctx := context.Background()
	other := h.operator("mailop-"+uuid.NewString()[:8], charttest.OperatorChart(chartName, "2.0.0", charttest.Compatible))
	d, err := h.store.DeploymentCreate(ctx, &store.Deployment{
		OperatorID: other.ID, Version: "2.0.0", Strategy: "Direct", Status: store.DeploymentWaitingApproval, RequestedBy: "alice",
		CreatedAt: time.Now(), Clusters: []*store.DeploymentCluster{{ClusterName: "slow-1", Environment: store.EnvironmentDev}},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	a, err := h.store.ApprovalCreate(ctx, &store.Approval{
		DeploymentID: d.ID, Kind: "versionUpgrade", RequiredRole: "Admin", Required: 1, RequestedBy: "alice",
		Status: store.ApprovalPending, ExpiresAt: time.Now().Add(time.Hour), CreatedAt: time.Now(),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// waitFor polls cond every 20 ms for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
