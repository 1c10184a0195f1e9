package devenv

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A chart version published after start: make dev publishes SampleLaterVersion of the sample
// operator's chart LaterVersionDelay after the environment is ready, and the manager, whose
// refresh loop reads every operator's chart source every DevRefreshInterval in make dev, finds it
// without the operator being registered again; the status view shows the operator's row gain it.
const (
	// SampleLaterVersion is the version published after start.
	SampleLaterVersion = "0.3.0"
	// DefaultLaterVersionDelay is how long after the environment is ready it is published.
	DefaultLaterVersionDelay = time.Minute
	// DevRefreshInterval is the manager's --operator-refresh-interval in make dev (10m by default).
	DevRefreshInterval = 30 * time.Second
)

// laterVersion publishes SampleLaterVersion at a time, in the background, until stopped.
type laterVersion struct {
	at     time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	published bool
	err       error
}

// scheduleLaterVersion publishes SampleLaterVersion of the chart in chartDir to the registry
// after Options.LaterVersionDelay (DefaultLaterVersionDelay when zero; never when negative).
func (e *Env) scheduleLaterVersion(chartDir string) {
	delay := e.opts.LaterVersionDelay
	if delay < 0 {
		return
	}
	if delay == 0 {
		delay = DefaultLaterVersionDelay
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &laterVersion{at: time.Now().Add(delay), cancel: cancel, done: make(chan struct{})}
	e.later = l
	go func() {
		defer close(l.done)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		_, err := publishSampleOperator(ctx, e.opts.RegistryAddr, chartDir, []string{SampleLaterVersion})
		l.mu.Lock()
		l.published, l.err = err == nil, err
		l.mu.Unlock()
	}()
}

// stop ends the publication if it has not happened yet, and waits for it.
func (l *laterVersion) stop() {
	if l == nil {
		return
	}
	l.cancel()
	<-l.done
}

// row is the status table's row of the later version (KIND, NAMESPACE, NAME, STATUS, MESSAGE).
func (l *laterVersion) row() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := SampleOperator + ":" + SampleLaterVersion
	at := l.at.Format(time.TimeOnly)
	switch {
	case l.err != nil:
		return fmt.Sprintf("registry/Chart\t\t%s\t<error>\t%s", name, shorten(l.err.Error()))
	case l.published:
		return fmt.Sprintf("registry/Chart\t\t%s\tPublished\tat %s; the manager reads chart sources every %s", name, at, DevRefreshInterval)
	default:
		return fmt.Sprintf("registry/Chart\t\t%s\tScheduled\tto be published at %s", name, at)
	}
}
