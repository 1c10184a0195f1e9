package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// errEventRefused is the failure statusEventFault injects.
var errEventRefused = errors.New("injected: the event insert failed")

// statusEventFault is a store whose first insert of each event that tells a status (a status
// event, a last stage's stage.validating) fails, in or out of a transaction: what a database
// that fails between two writes does.
type statusEventFault struct {
	store.Store
	mu     sync.Mutex
	failed map[string]bool
}

func (s *statusEventFault) refuse(ev *store.DeploymentEvent) bool {
	if ev.Type != "status" && ev.Type != "stage.validating" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed[ev.Message] {
		return false
	}
	s.failed[ev.Message] = true
	return true
}

func (s *statusEventFault) DeploymentEventInsert(ctx context.Context, ev *store.DeploymentEvent) (*store.DeploymentEvent, error) {
	if s.refuse(ev) {
		return nil, errEventRefused
	}
	return s.Store.DeploymentEventInsert(ctx, ev)
}

func (s *statusEventFault) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &statusEventFaultTx{Tx: tx, s: s}, nil
}

type statusEventFaultTx struct {
	store.Tx
	s *statusEventFault
}

func (t *statusEventFaultTx) DeploymentEventInsert(ctx context.Context, ev *store.DeploymentEvent) (*store.DeploymentEvent, error) {
	if t.s.refuse(ev) {
		return nil, errEventRefused
	}
	return t.Tx.DeploymentEventInsert(ctx, ev)
}

// TestStatus_CommitsWithItsEvent: a status and the event that tells it are one write. The store
// fails the first insert of every such event; the move it tells fails with it and is retried,
// so the deployment still completes and its history is an unbroken chain of moves, each told
// once, from its first status to Completed (a status without its event is what a reader that
// lists the events once a deployment ended would miss for good).
func TestStatus_CommitsWithItsEvent(t *testing.T) {
	var fault *statusEventFault
	h := newHarness(t, []target{{Name: "dev-1", Environment: store.EnvironmentDev, Server: single(t)}}, func(c *Config) {
		fault = &statusEventFault{Store: c.Store, failed: map[string]bool{}}
		c.Store = fault
	})
	h.operator("atomic", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()

	d := h.submit(`{"operator": "atomic", "version": "1.0.0", "clusters": ["dev-1"], "strategy": "Direct"}`)
	d = h.waitStatus(d.ID, store.DeploymentCompleted)

	moves, told := movesOf(t, h.events(d.ID))
	want := []string{"Planning → Deploying", "Deploying → Validating", "Validating → Completed"}
	if !slices.Equal(moves, want) {
		t.Errorf("the history tells the moves %q, want %q\nevents:\n%s", moves, want, h.eventLog(d.ID))
	}
	fault.mu.Lock()
	refused := len(fault.failed)
	fault.mu.Unlock()
	if refused != told {
		t.Errorf("%d inserts were refused once, %d events tell a move: each one's first try should have failed", refused, told)
	}
}

// movesOf reads the status moves the events tell, in order ("Planning → Deploying"): a status
// event's from and to, a stage.validating the move from Deploying to Validating when the status
// event that follows starts from Validating. told counts the events that tell a move.
func movesOf(t *testing.T, events []*store.DeploymentEvent) (moves []string, told int) {
	t.Helper()
	validating := false
	for _, e := range events {
		switch e.Type {
		case "stage.validating":
			validating, told = true, told+1
		case "status":
			told++
			var det struct{ From, To string }
			if err := json.Unmarshal(e.Details, &det); err != nil {
				t.Fatalf("status event %q details %s: %v", e.Message, e.Details, err)
			}
			if validating && det.From == string(store.DeploymentValidating) {
				moves = append(moves, "Deploying → Validating")
			}
			validating = false
			moves = append(moves, det.From+" → "+det.To)
		}
	}
	return moves, told
}
