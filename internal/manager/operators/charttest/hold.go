package charttest

import (
	"net/http"
	"sync"
	"testing"
)

// Gate holds a Repository's index.yaml requests (HoldIndex) until the test lets them through,
// counting them, so a test can see how many readers of the repository are in flight at once
// without timing them.
type Gate struct {
	release chan struct{}
	open    chan struct{}
	once    sync.Once

	mu                         sync.Mutex
	held, max, arrived, passed int
}

// maxReleases bounds the releases given ahead of the requests they let through.
const maxReleases = 1 << 16

// HoldIndex makes every index.yaml request from now on wait, before it is answered, until the
// gate lets it through (Release, Open) or its client gives up. The gate opens when the test ends.
func (r *Repository) HoldIndex(t testing.TB) *Gate {
	t.Helper()
	g := &Gate{release: make(chan struct{}, maxReleases), open: make(chan struct{})}
	t.Cleanup(g.Open)
	r.gate.Store(g)
	return g
}

// Held is the number of requests waiting at the gate now.
func (g *Gate) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// MaxHeld is the most requests that waited at the gate at once.
func (g *Gate) MaxHeld() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// Arrived is the number of requests that reached the gate.
func (g *Gate) Arrived() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.arrived
}

// Passed is the number of requests the gate let through.
func (g *Gate) Passed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.passed
}

// Release lets n requests through: those waiting first, then those that arrive later.
func (g *Gate) Release(n int) {
	for range n {
		g.release <- struct{}{}
	}
}

// Open lets every request through, now and later.
func (g *Gate) Open() { g.once.Do(func() { close(g.open) }) }

// wait holds req until the gate lets it through or its client gives up.
func (g *Gate) wait(req *http.Request) {
	g.mu.Lock()
	g.held++
	g.arrived++
	g.max = max(g.max, g.held)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.held--
		g.passed++
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
	case <-g.open:
	case <-req.Context().Done():
	}
}
