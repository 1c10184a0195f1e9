package notifications

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
)

// attempts counts delivery attempts by channel kind and result: delivered, retried (failed,
// tried again later) and failed (given up).
var attempts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slipway_manager_notification_attempts_total",
	Help: "Notification delivery attempts, by channel kind and result: delivered, retried, failed (given up).",
}, []string{"channel_kind", "result"})

func init() { telemetry.MustRegister(attempts) }

// Start runs the delivery worker in the background until Stop or ctx ends. Starting twice is an
// error.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return errors.New("notifications: the worker is already running")
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.log.InfoContext(ctx, "notifications: Worker started", "replica", s.cfg.ReplicaID, "timeout", s.cfg.Timeout,
			"lease", s.cfg.Lease, "perChannel", s.cfg.PerChannel)
		t := time.NewTicker(s.cfg.Poll)
		defer t.Stop()
		for {
			s.round(ctx)
			select {
			case <-ctx.Done():
				s.wg.Wait()
				return
			case <-t.C:
			case <-s.wake:
			}
		}
	}()
	return nil
}

// Stop ends the worker and waits for the attempts in flight, which are cut short and due again
// at once (another replica, or this one after a restart, sends them). Safe without Start.
func (s *Service) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// Wake makes the worker look for due deliveries now.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// round claims the due deliveries of every channel, up to PerChannel in flight per channel, and
// starts an attempt for each.
func (s *Service) round(ctx context.Context) {
	now := s.now().UTC()
	ids, err := s.store.NotificationDueChannels(ctx, now)
	if err != nil {
		s.logErr(ctx, "listing due notifications", err)
		return
	}
	for _, id := range ids {
		s.mu.Lock()
		free := s.cfg.PerChannel - s.inflight[id]
		s.mu.Unlock()
		if free <= 0 {
			continue
		}
		claimed, err := s.store.NotificationClaim(ctx, &store.NotificationClaimParams{Owner: s.cfg.ReplicaID,
			ChannelID: id, Now: now, Lease: s.cfg.Lease, Limit: free})
		if err != nil {
			s.logErr(ctx, "claiming notifications", err)
			continue
		}
		for _, n := range claimed {
			s.mu.Lock()
			s.inflight[id]++
			s.mu.Unlock()
			s.wg.Go(func() {
				defer func() {
					s.mu.Lock()
					if s.inflight[id]--; s.inflight[id] <= 0 {
						delete(s.inflight, id)
					}
					s.mu.Unlock()
					s.Wake() // a slot is free: claim the channel's next one now, not at the next poll
				}()
				s.deliver(ctx, n)
			})
		}
	}
}

// deliver makes one attempt, bounded by Timeout, and records its outcome.
func (s *Service) deliver(ctx context.Context, n *store.Notification) {
	attemptCtx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	err := s.send(attemptCtx, n)
	cancel()
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	now := s.now().UTC()
	if err == nil {
		if _, err := s.store.NotificationMarkDelivered(rec, n.ID, now); err != nil {
			s.logErr(ctx, "recording a delivery", err)
			return
		}
		attempts.WithLabelValues(n.ChannelKind, "delivered").Inc()
		s.log.InfoContext(ctx, "notifications: Delivered", "delivery", n.ID, "channel", n.ChannelName,
			"kind", n.Kind, "attempts", n.Attempts)
		return
	}
	p := &store.NotificationRetryParams{ID: n.ID, Owner: s.cfg.ReplicaID, LastError: err.Error(), Now: now}
	switch next := now.Add(s.backoff(n.Attempts)); {
	case ctx.Err() != nil:
		// Stopping: the attempt was cut short, not refused; due again at once.
		p.State, p.NextAttemptAt, p.LastError = store.NotificationPending, &now, "interrupted: the replica stopped"
	case isPermanent(err), s.cfg.MaxAttempts > 0 && n.Attempts >= s.cfg.MaxAttempts,
		next.After(n.CreatedAt.Add(s.cfg.RetryFor)):
		p.State = store.NotificationFailed
	default:
		p.State, p.NextAttemptAt = store.NotificationPending, &next
	}
	if _, rerr := s.store.NotificationRetry(rec, p); rerr != nil {
		s.logErr(ctx, "recording a failed attempt", rerr)
		return
	}
	s.logFailure(ctx, n, p)
}

// logFailure logs and counts a failed attempt: retried at warning, given up at error.
func (s *Service) logFailure(ctx context.Context, n *store.Notification, p *store.NotificationRetryParams) {
	ctx = context.WithoutCancel(ctx)
	args := []any{"delivery", n.ID, "channel", n.ChannelName, "kind", n.Kind, "attempts", n.Attempts, "error", p.LastError}
	if p.State == store.NotificationFailed {
		attempts.WithLabelValues(n.ChannelKind, "failed").Inc()
		s.log.ErrorContext(ctx, "notifications: Delivery failed; giving up", args...)
		return
	}
	attempts.WithLabelValues(n.ChannelKind, "retried").Inc()
	s.log.WarnContext(ctx, "notifications: Delivery failed; retrying", append(args, "next", p.NextAttemptAt)...)
}

// backoff is the wait after the n-th failed attempt: RetryFirst doubling up to RetryMax.
func (s *Service) backoff(n int) time.Duration {
	d := s.cfg.RetryFirst
	for i := 1; i < n && d < s.cfg.RetryMax; i++ {
		d *= 2
	}
	return min(d, s.cfg.RetryMax)
}

func (s *Service) logErr(ctx context.Context, what string, err error) {
	if ctx.Err() != nil {
		return
	}
	s.log.ErrorContext(ctx, "notifications: "+what+" failed", "error", err)
}
