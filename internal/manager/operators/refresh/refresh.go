// Package refresh keeps every registered operator's chart versions current: a loop in
// `manager serve` re-reads each operator's chart source every interval (jittered, a bounded
// number at once, conditionally where the source allows), and the API refreshes one on demand
// (POST /api/v1/operators/{name}/refresh) or moves it to another source (PATCH). A new version's
// CRDs go into the schema history through the function registration uses (Config.StoreVersions);
// a version gone from the source, or left out by the version filter, is marked removed, never
// deleted. One replica at a time refreshes a given operator: each refresh holds the lease
// "operator-refresh/<operator id>" in the store.
package refresh

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Defaults of Config's zero values.
const (
	DefaultInterval    = 10 * time.Minute
	DefaultConcurrency = 4
	DefaultLease       = 2 * time.Minute
	DefaultJitter      = 0.1
	// DefaultWait is how long an on-demand refresh waits for another one of the same operator.
	DefaultWait = 20 * time.Second
)

// StoreVersionsFunc stores newly found chart versions of an operator (newest first, as
// operators.Inspection lists them) with the CRDs each ships, in tx.
type StoreVersionsFunc func(ctx context.Context, tx store.Tx, operatorID string, found []operators.VersionCRDs, now time.Time) error

// Charts is what a refresh reads chart sources with (*operators.Charts).
type Charts interface {
	Poll(ctx context.Context, ref operators.ChartRef, st operators.PollState) (*operators.Polled, error)
	InspectVersion(ctx context.Context, ref operators.ChartRef, v operators.Version) (operators.VersionCRDs, error)
}

// Config configures a Refresher.
type Config struct {
	Store  store.Store
	Charts Charts
	// StoreVersions is registration's way of storing versions and their CRDs (required).
	StoreVersions StoreVersionsFunc
	// Credentials reads an operator's chart source credentials (package sourceauth); nil:
	// every source is read anonymously.
	Credentials func(ctx context.Context, op *store.Operator) (operators.Credentials, error)
	Logger      *slog.Logger
	// ReplicaID names this replica as the holder of refresh leases.
	ReplicaID string
	// Interval is how often each operator is refreshed; each next run is jittered by ±Jitter of it.
	Interval time.Duration
	Jitter   float64
	// Concurrency bounds the operators one replica refreshes at once.
	Concurrency int
	// Lease is how long a refresh holds its operator's lease before renewing it (every third).
	Lease time.Duration
	Now   func() time.Time
}

// Refresher refreshes operators' chart versions, on its loop (Start) and on demand.
type Refresher struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Refresher; Start runs its loop.
func New(cfg Config) (*Refresher, error) {
	if cfg.Store == nil || cfg.Charts == nil || cfg.StoreVersions == nil {
		return nil, errors.New("refresh: Store, Charts and StoreVersions are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Jitter <= 0 || cfg.Jitter >= 1 {
		cfg.Jitter = DefaultJitter
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = "replica"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Refresher{cfg: cfg, log: log}, nil
}

// Start runs the loop until ctx ends or Stop: every tick (a quarter of the interval, between
// 50 ms and 30 s) it refreshes the operators that are due.
func (r *Refresher) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return errors.New("refresh: already started")
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(min(max(r.cfg.Interval/4, 50*time.Millisecond), 30*time.Second))
		defer t.Stop()
		for {
			r.Round(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	r.log.InfoContext(ctx, "refresh: Refreshing operators' chart versions", "interval", r.cfg.Interval.String(),
		"concurrency", r.cfg.Concurrency, "replica", r.cfg.ReplicaID)
	return nil
}

// Stop ends the loop and waits for the refreshes in flight (their context is cancelled).
func (r *Refresher) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// roundLimit bounds the operators one round reads as due; the rest wait for the next round.
const roundLimit = 1000

// Round refreshes the operators due now, Concurrency at a time, skipping those another replica
// is refreshing, and returns how many it refreshed.
func (r *Refresher) Round(ctx context.Context) int {
	due, err := r.cfg.Store.OperatorRefreshDue(ctx, &store.OperatorRefreshDueParams{Now: r.now(), Limit: roundLimit})
	if err != nil {
		if ctx.Err() == nil {
			r.log.ErrorContext(ctx, "refresh: Listing the operators due failed", "err", err)
		}
		return 0
	}
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, op := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return n
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if r.refreshDue(ctx, op) {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

func (r *Refresher) now() time.Time { return r.cfg.Now().UTC() }

// next is when an operator refreshed at now is refreshed again: the interval, jittered.
func (r *Refresher) next(now time.Time) time.Time {
	j := (rand.Float64()*2 - 1) * r.cfg.Jitter
	return now.Add(time.Duration(float64(r.cfg.Interval) * (1 + j)))
}
