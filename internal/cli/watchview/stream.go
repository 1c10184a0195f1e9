package watchview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Source is the manager as a watch reads it; *client.Client is one.
type Source interface {
	GetDeployment(ctx context.Context, id string) (*api.Deployment, error)
	// EventStream opens the deployment's event stream after the event id lastEventID (0: from
	// the start), as Last-Event-ID.
	EventStream(ctx context.Context, id string, lastEventID int64) (*http.Response, error)
}

// Permanent reports whether an error from the manager will not pass by trying again: an
// answer in 4xx (a bad token, a role that may not, no such deployment) other than 408 and 429.
func Permanent(err error) bool {
	code := client.StatusCode(err)
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// item is what the stream reader hands the watch: an event's frame, news about the stream
// (Note: dropped, reconnected), or the error that ends it.
type item struct {
	Frame *Frame
	Note  string
	Err   error
}

// follower reads a deployment's event stream until its end event, reconnecting after a drop
// from the last event id it read.
type follower struct {
	src   Source
	id    string
	retry time.Duration
	idle  time.Duration
	out   chan<- item
}

// run reads until the end event, a permanent error, or ctx ends; it closes out when it returns.
func (f *follower) run(ctx context.Context) {
	defer close(f.out)
	var last int64
	broken := false
	for ctx.Err() == nil {
		end, err := f.once(ctx, &last, &broken)
		if end || ctx.Err() != nil {
			return
		}
		var notStream *notStreamError
		if Permanent(err) || errors.As(err, &notStream) {
			f.send(ctx, item{Err: err})
			return
		}
		broken = true
		note := fmt.Sprintf("event stream lost (%v); reconnecting in %s", describe(err), f.retry)
		if last > 0 {
			note = fmt.Sprintf("event stream lost (%v); resuming after event %d in %s", describe(err), last, f.retry)
		}
		f.send(ctx, item{Note: note})
		select {
		case <-ctx.Done():
			return
		case <-time.After(f.retry):
		}
	}
}

// once reads one connection of the stream; end reports that the end event was read. A stream
// that closes without it is an io.ErrUnexpectedEOF.
func (f *follower) once(ctx context.Context, last *int64, broken *bool) (end bool, err error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := f.src.EventStream(cctx, f.id, *last)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return false, &notStreamError{contentType: resp.Header.Get("Content-Type")}
	}
	if *broken {
		*broken = false
		f.send(ctx, item{Note: ""})
	}
	body := newIdleReader(resp.Body, f.idle, cancel)
	defer body.stop()
	err = ReadFrames(body, func(fr Frame) error {
		if fr.ID != "" {
			if n, err := strconv.ParseInt(fr.ID, 10, 64); err == nil {
				*last = n
			}
		}
		if !f.send(ctx, item{Frame: &fr}) {
			return ctx.Err()
		}
		if fr.Event == "end" {
			return errStop
		}
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		return true, nil
	case body.timedOut():
		return false, fmt.Errorf("nothing received for %s", f.idle)
	case err == nil:
		return false, io.ErrUnexpectedEOF
	}
	return false, err
}

// notStreamError is an answer to the stream's request that is not an event stream: no use
// asking again.
type notStreamError struct{ contentType string }

func (e *notStreamError) Error() string {
	return fmt.Sprintf("the manager answered the event stream's request with %q, not text/event-stream", e.contentType)
}

// send hands an item to the watch; false when ctx ended first.
func (f *follower) send(ctx context.Context, it item) bool {
	select {
	case f.out <- it:
		return true
	case <-ctx.Done():
		return false
	}
}

// describe is an error for a one-line note: the manager's message, or the transport's.
func describe(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "the connection closed before the end"
	}
	return err.Error()
}

// idleReader cancels a stream that received nothing for a while (the manager sends a heartbeat
// comment when it has nothing to say, so silence is a dead connection).
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
	once  sync.Once
	fired chan struct{}
}

func newIdleReader(r io.Reader, idle time.Duration, cancel context.CancelFunc) *idleReader {
	ir := &idleReader{r: r, idle: idle, fired: make(chan struct{})}
	ir.timer = time.AfterFunc(idle, func() {
		ir.once.Do(func() { close(ir.fired) })
		cancel()
	})
	return ir
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.timer.Reset(ir.idle)
	}
	return n, err
}

func (ir *idleReader) stop() { ir.timer.Stop() }

func (ir *idleReader) timedOut() bool {
	select {
	case <-ir.fired:
		return true
	default:
		return false
	}
}
