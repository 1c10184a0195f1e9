package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/rollout/request"
	"github.com/slipway-dev/slipway/internal/manager/rollout/strategy"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// Engine runs deployments. New builds one (Submit and the other requests work without Start);
// Start runs its loops until Stop.
type Engine struct {
	cfg Config
	log *slog.Logger

	wake   chan struct{}
	charts chartCache
	// installs holds a slot per Helm call in flight (Config.MaxParallelInstalls).
	installs chan struct{}

	mu      sync.Mutex
	working map[string]bool // deployments this replica is stepping
	cancel  context.CancelFunc
	done    chan struct{}
	wg      sync.WaitGroup
}

// New returns an engine for cfg.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Engine{
		cfg: cfg, log: cfg.Logger.With("replica", cfg.ReplicaID),
		wake: make(chan struct{}, 1), working: map[string]bool{},
		installs: make(chan struct{}, cfg.MaxParallelInstalls),
	}, nil
}

// ReplicaID is the name this replica claims deployments under.
func (e *Engine) ReplicaID() string { return e.cfg.ReplicaID }

// Wake makes the loop look for due deployments now (a deployment was created or asked
// something on this replica); other replicas find it on their next poll.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Start runs the engine's loops in the background until Stop or ctx ends.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		return errors.New("engine: already started")
	}
	if e.cfg.Clusters == nil || e.cfg.Charts == nil {
		return errors.New("engine: Start needs Clusters and Charts")
	}
	ctx, e.cancel = context.WithCancel(ctx)
	e.done = make(chan struct{})
	go func() {
		defer close(e.done)
		var loops sync.WaitGroup
		loops.Go(func() { e.runLoop(ctx) })
		if e.cfg.HealthLoop || e.cfg.Notifier != nil {
			loops.Go(func() { e.leaderLoop(ctx) })
		}
		loops.Wait()
		e.wg.Wait()
	}()
	return nil
}

// Stop ends the loops and waits for the steps in flight to return (their context is cancelled:
// an install in flight stops, and its deployment resumes on another replica once the claim lapses).
func (e *Engine) Stop() {
	e.mu.Lock()
	cancel, done := e.cancel, e.done
	e.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// slot waits for a free Helm call slot; the returned function frees it.
func (e *Engine) slot(ctx context.Context) (func(), error) {
	select {
	case e.installs <- struct{}{}:
		return func() { <-e.installs }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// event appends a step to the deployment's history, with the replica that made it in its
// details; a failure is logged, not returned: the history must never stop a deployment. Under a
// dry run (DryRun puts an eventSink in the context) the event is collected: it stores nothing.
func (e *Engine) event(ctx context.Context, id, typ, cluster, msg string, details map[string]any) {
	ev := e.newEvent(id, typ, cluster, msg, details)
	if sink, ok := ctx.Value(eventSinkKey{}).(*eventSink); ok {
		sink.add(ev)
		return
	}
	if _, err := e.cfg.Store.DeploymentEventInsert(context.WithoutCancel(ctx), ev); err != nil {
		e.log.WarnContext(e.idLogContext(ctx, id), "engine: Recording an event failed", "type", typ, "error", err)
	}
}

// newEvent is a step of the deployment's history as event records it, for a caller that stores
// it in a transaction of its own (updateRecording).
func (e *Engine) newEvent(id, typ, cluster, msg string, details map[string]any) *store.DeploymentEvent {
	ev := &store.DeploymentEvent{DeploymentID: id, At: e.now(), Type: typ, Cluster: cluster, Message: msg}
	all := map[string]any{"replica": e.cfg.ReplicaID} // which replica did the step: a takeover shows
	for k, v := range details {
		all[k] = v
	}
	if b, err := json.Marshal(all); err == nil {
		ev.Details = b
	}
	return ev
}

// statusEvent is the "status" event of the deployment's move from from to to.
func (e *Engine) statusEvent(id string, from, to store.DeploymentStatus, reason string) *store.DeploymentEvent {
	return e.newEvent(id, "status", "", fmt.Sprintf("%s → %s: %s", from, to, reason), map[string]any{"from": from, "to": to})
}

// knownTargets is every registered cluster as a request target.
func (e *Engine) knownTargets(ctx context.Context) ([]request.Target, error) {
	var out []request.Target
	after := ""
	for {
		page, err := e.cfg.Store.ClusterList(ctx, &store.ClusterListParams{After: after, Limit: 500})
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			out = append(out, request.Target{Name: c.Name, Environment: string(c.Environment)})
		}
		if len(page) < 500 {
			return out, nil
		}
		after = page[len(page)-1].Name
	}
}

// location is a Helm release: where an operator runs on a cluster.
type location struct{ Namespace, Release string }

// liveSet is where an operator's releases are live, by cluster.
type liveSet map[string]*store.LiveRelease

func (e *Engine) liveReleases(ctx context.Context, op *store.Operator) (liveSet, error) {
	rows, err := e.cfg.Store.LiveReleaseList(ctx, &store.LiveReleaseListParams{OperatorName: op.Name})
	if err != nil {
		return nil, err
	}
	out := liveSet{}
	for _, r := range rows {
		out[r.ClusterName] = r
	}
	return out, nil
}

// at is the release a deployment to cluster upgrades: the live one, or for a first install the
// operator's name in its namespace.
func (l liveSet) at(cluster string, op *store.Operator) location {
	if r := l[cluster]; r != nil && r.Namespace != "" && r.Release != "" {
		return location{r.Namespace, r.Release}
	}
	return location{op.Namespace, op.Name}
}

// greenSuffix names BlueGreen's second release: blue and green alternate between the
// operator's name and its name with this suffix, so their cluster-scoped objects never collide.
const greenSuffix = "-green"

// greenOf is where BlueGreen installs the new version when blue is live at blue: the plan's
// green namespace, and the release name blue does not use.
func greenOf(blue location, op *store.Operator, plan *strategy.Plan) location {
	rel := op.Name + greenSuffix
	if blue.Release == rel {
		rel = op.Name
	}
	ns := plan.GreenNamespace
	if ns == blue.Namespace || ns == "" {
		ns = plan.BlueNamespace
		if ns == blue.Namespace {
			ns = blue.Namespace + greenSuffix
		}
	}
	return location{ns, rel}
}

// PlanOptions are the engine's settings that shape every plan (strategy.PlanOf), but the
// operator's namespace: the API plans a stored deployment with them, as the engine does.
func (e *Engine) PlanOptions() strategy.Options {
	return strategy.Options{SwitchMonitor: e.cfg.SwitchMonitor, HoldScale: e.cfg.TestHoldScale}
}

// planOptions are PlanOptions for a deployment of op.
func (e *Engine) planOptions(op *store.Operator) *strategy.Options {
	o := e.PlanOptions()
	o.OperatorNamespace = op.Namespace
	return &o
}
