package notifications_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/notifications"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// BenchmarkEnqueue: one deployment.failed stored in its own transaction and routed to 3 of 4
// channels (the 3 delivery rows written), per engine.
func BenchmarkEnqueue(b *testing.B) {
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			e := newEnv(b, engine)
			s := e.service("r1", nil)
			rc := newReceiver(b, hmacSecret)
			for _, name := range []string{"a", "b", "c"} {
				webhookChannel(b, s, name, rc)
			}
			webhookChannel(b, s, "dev-only", rc, api.ChannelRoute{Environments: []string{"Dev"}})
			d := deployment(store.DeploymentFailed, store.EnvironmentProduction, store.EnvironmentStaging)
			b.ResetTimer()
			for b.Loop() {
				if err := store.WithTx(e.ctx, e.store, func(ctx context.Context, tx store.Tx) error {
					return s.DeploymentStatus(ctx, tx, store.DeploymentDeploying, d)
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDelivery: 200 notifications stored for one webhook channel, then one replica's worker
// delivers them to a receiver on loopback (default settings: 4 in flight per channel); reports
// deliveries per second from the worker's start to the last one recorded delivered.
func BenchmarkDelivery(b *testing.B) {
	const n = 200
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				e := newEnv(b, engine)
				s := e.service("r1", func(c *notifications.Config) {
					c.Poll, c.RetryFirst, c.RetryMax = time.Second, time.Second, time.Second
				})
				rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
				if _, err := s.CreateChannel(e.ctx, &api.ChannelRequest{Name: "ops", Kind: notifications.KindWebhook,
					Webhook: &api.WebhookSettings{URL: rc.URL + "/hook", Secret: hmacSecret}, Routes: []api.ChannelRoute{{}}}, "alice"); err != nil {
					b.Fatal(err)
				}
				for range n {
					if _, err := s.TestChannel(e.ctx, "ops", "alice"); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				start := time.Now()
				if err := s.Start(e.ctx); err != nil {
					b.Fatal(err)
				}
				for {
					ns, err := e.store.NotificationList(e.ctx, &store.NotificationListParams{State: store.NotificationDelivered, Limit: store.MaxLimit})
					if err != nil {
						b.Fatal(err)
					}
					if len(ns) == n {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				b.ReportMetric(n/time.Since(start).Seconds(), "deliveries/s")
				s.Stop()
				rc.Close()
			}
		})
	}
}
