package clusters

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// CheckResult is one cluster's health check.
type CheckResult struct {
	Cluster           string
	Health            store.Health
	Reason            string // why Unhealthy; empty when Healthy
	KubernetesVersion string // empty when unknown
	Duration          time.Duration
	// Err is a failure to record the result (the store); the check itself never errs.
	Err error
}

// Round is one pass of the health loop over every cluster.
type Round struct {
	Started  time.Time
	Duration time.Duration
	Results  []CheckResult
	// Err is a failure to list the clusters.
	Err error
}

// Check runs a fresh health check of one cluster now, stores the result and returns the cluster
// as stored. An Unhealthy cluster is not an error; store.ErrNotFound is.
func (m *Manager) Check(ctx context.Context, name string) (*store.Cluster, error) {
	if _, err := m.store.ClusterGetByName(ctx, name); err != nil {
		return nil, err
	}
	res, c := m.checkAndStore(ctx, name)
	if res.Err != nil {
		return nil, res.Err
	}
	return c, nil
}

// checkAndStore checks a cluster and records the result. A check cut short because the caller
// gave up (the loop stopping, a request cancelled) says nothing about the cluster: it is not
// recorded, and the result carries the caller's error.
func (m *Manager) checkAndStore(ctx context.Context, name string) (CheckResult, *store.Cluster) {
	start := time.Now()
	res := m.check(ctx, name)
	res.Duration = time.Since(start)
	if err := ctx.Err(); err != nil {
		return CheckResult{Cluster: name, Health: store.HealthUnknown, Duration: res.Duration, Err: err}, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	c, err := m.recordHealth(ctx, &store.ClusterUpdateHealthParams{
		Name: name, Health: res.Health, Reason: res.Reason, KubernetesVersion: res.KubernetesVersion, CheckedAt: m.now(),
	})
	if err != nil {
		res.Err = fmt.Errorf("recording the health of cluster %q: %w", name, err)
	}
	return res, c
}

// check is GET /version and a list of one namespace, as the manager's ServiceAccount, within
// CheckTimeout (renewing the token first when due).
func (m *Manager) check(ctx context.Context, name string) CheckResult {
	res := CheckResult{Cluster: name, Health: store.HealthUnhealthy}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.CheckTimeout+3*m.cfg.ConnectTimeout)
	defer cancel()
	cc, err := m.access(ctx, name)
	if err != nil {
		res.Reason = reasonOf(err, m.cfg.CheckTimeout)
		return res
	}
	callCtx, cancelCall := context.WithTimeout(ctx, m.cfg.CheckTimeout)
	defer cancelCall()
	v, err := serverVersion(callCtx, cc.clientset)
	if err != nil {
		res.Reason = classify("", "read the server version", err, m.cfg.CheckTimeout).Message
		return res
	}
	res.KubernetesVersion = v
	if _, err := cc.clientset.CoreV1().Namespaces().List(callCtx, metav1.ListOptions{Limit: 1}); err != nil {
		res.Reason = classify("", "list namespaces", err, m.cfg.CheckTimeout).Message
		return res
	}
	res.Health = store.HealthHealthy
	return res
}

// reasonOf says, without a secret, why a cluster's credentials could not be had.
func reasonOf(err error, timeout time.Duration) string {
	var ce *CredentialsError
	if errors.As(err, &ce) {
		return ce.Error()
	}
	if e, ok := invalid.As(err); ok {
		return "the manager's ServiceAccount token could not be renewed: " + e.Message
	}
	return "the manager's credentials for the cluster could not be had: " + classify("", "get credentials", err, timeout).Message
}

// RunRound checks every registered cluster, HealthConcurrency at a time, and records each result.
func (m *Manager) RunRound(ctx context.Context) Round {
	r := Round{Started: time.Now()}
	all, err := m.allClusters(ctx)
	if err != nil {
		r.Err, r.Duration = err, time.Since(r.Started)
		return r
	}
	r.Results = make([]CheckResult, len(all))
	sem := make(chan struct{}, m.cfg.HealthConcurrency)
	var wg sync.WaitGroup
	for i, c := range all {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			r.Results[i] = CheckResult{Cluster: c.Name, Health: store.HealthUnknown, Err: ctx.Err()}
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r.Results[i], _ = m.checkAndStore(ctx, c.Name)
		})
	}
	wg.Wait()
	m.prune(all)
	r.Duration = time.Since(r.Started)
	return r
}

// prune drops cached clients of clusters no longer registered (removed by another replica).
func (m *Manager) prune(all []*store.Cluster) {
	keep := make(map[string]bool, len(all))
	for _, c := range all {
		keep[c.Name] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.clients {
		if !keep[name] {
			delete(m.clients, name)
		}
	}
}

type loopState struct {
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	started chan struct{}
}

// Start runs the health loop in the background until Stop or ctx ends: a round at once, then one
// every HealthInterval. Starting a running loop is an error.
func (m *Manager) Start(ctx context.Context) error {
	l := &m.loop
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return errors.New("clusters: the health loop is already running")
	}
	parent, cancel := context.WithCancel(ctx)
	l.cancel, l.done, l.started = cancel, make(chan struct{}), make(chan struct{})
	done, started := l.done, l.started
	go func() {
		defer close(done)
		close(started)
		m.log.InfoContext(parent, "clusters: Health loop started", "interval", m.cfg.HealthInterval, "concurrency", m.cfg.HealthConcurrency)
		t := time.NewTicker(m.cfg.HealthInterval)
		defer t.Stop()
		for {
			r := m.RunRound(parent)
			m.logRound(parent, r)
			if m.cfg.OnRound != nil {
				m.cfg.OnRound(r)
			}
			select {
			case <-parent.Done():
				m.log.InfoContext(context.WithoutCancel(parent), "clusters: Health loop stopped")
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Started is closed once the loop's goroutine runs (nil before Start).
func (m *Manager) Started() <-chan struct{} {
	m.loop.mu.Lock()
	defer m.loop.mu.Unlock()
	return m.loop.started
}

// Stop ends the health loop and waits for the round in flight to end. Safe without Start.
func (m *Manager) Stop() {
	l := &m.loop
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.cancel = nil
	l.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (m *Manager) logRound(ctx context.Context, r Round) {
	if r.Err != nil {
		if ctx.Err() == nil {
			m.log.ErrorContext(ctx, "clusters: Health round could not list clusters", "err", r.Err)
		}
		return
	}
	unhealthy := 0
	for _, res := range r.Results {
		if res.Err != nil && ctx.Err() == nil {
			m.log.ErrorContext(ctx, "clusters: Could not record a health check", "cluster", res.Cluster, "err", res.Err)
		}
		if res.Health == store.HealthUnhealthy {
			unhealthy++
			m.log.WarnContext(ctx, "clusters: Cluster unhealthy", "cluster", res.Cluster, "reason", res.Reason)
		}
	}
	m.log.DebugContext(ctx, "clusters: Health round", "clusters", len(r.Results), "unhealthy", unhealthy, "duration", r.Duration)
}
