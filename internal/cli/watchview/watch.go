package watchview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Mode is how a watch shows the deployment (--progress).
type Mode string

const (
	// ModeAuto is ModeTTY when standard output is a terminal, else ModePlain.
	ModeAuto Mode = "auto"
	// ModeTTY redraws the table in place.
	ModeTTY Mode = "tty"
	// ModePlain prints a timestamped line per change.
	ModePlain Mode = "plain"
	// ModeJSON prints the raw events, one JSON object a line.
	ModeJSON Mode = "json"
)

// Modes are --progress's values.
var Modes = []string{string(ModeAuto), string(ModeTTY), string(ModePlain), string(ModeJSON)}

// ParseMode checks a --progress value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeAuto, ModeTTY, ModePlain, ModeJSON:
		return m, nil
	}
	return "", fmt.Errorf("--progress must be auto, tty, plain or json, not %q", s)
}

// Options say how to watch. Zero durations take the defaults.
type Options struct {
	// Mode is tty, plain or json (auto resolved by the caller).
	Mode Mode
	// Out gets the view, ErrOut the plain mode's notes about the stream.
	Out, ErrOut io.Writer
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Width and Height are the terminal's size, read for each tty frame (Height nil or 0: no
	// limit on a frame's lines).
	Width, Height func() int
	// Redraw is how often a tty frame is drawn (and plain mode looks for changes): 200 ms.
	Redraw time.Duration
	// Retry is the wait before reconnecting a lost stream: 1 s.
	Retry time.Duration
	// Refetch is the least time between two reads of the deployment when events arrive: 500 ms.
	Refetch time.Duration
	// Poll reads the deployment even without events (approvals given, queue positions): 5 s.
	Poll time.Duration
	// Idle is how long a stream may stay silent before it is taken for dead: 60 s (the manager
	// sends a heartbeat every 15 s).
	Idle time.Duration
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Redraw, 200*time.Millisecond)
	def(&o.Retry, time.Second)
	def(&o.Refetch, 500*time.Millisecond)
	def(&o.Poll, 5*time.Second)
	def(&o.Idle, time.Minute)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Width == nil {
		o.Width = func() int { return 80 }
	}
	if o.Height == nil {
		o.Height = func() int { return 0 }
	}
	if o.ErrOut == nil {
		o.ErrOut = io.Discard
	}
}

// Watch follows deployment id until it ends and returns it as it ended. It reads the deployment
// first (an error there is returned at once: a bad id, token or server), then its event stream
// from the start (so a deployment that has already ended is shown whole and the watch returns
// at once), reconnecting after Retry from the last event id when the stream drops; it reads the
// deployment again as events arrive. When ctx ends first (a timeout, Ctrl-C) it returns the
// deployment as last read with ctx's error; a permanent error of the manager (Permanent) ends
// it with that error.
func Watch(ctx context.Context, src Source, id string, o Options) (*api.Deployment, error) {
	o.defaults()
	w := &watcher{src: src, o: o, st: NewState(id), plain: NewPlain()}
	d, err := w.get(ctx)
	if err != nil {
		return nil, err
	}
	w.st.Deployment = d
	items := make(chan item, 64)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go (&follower{src: src, id: id, retry: o.Retry, idle: o.Idle, out: items}).run(sctx)
	if o.Mode == ModeJSON {
		return w.json(ctx, items)
	}
	return w.view(ctx, items)
}

type watcher struct {
	src   Source
	o     Options
	st    *State
	plain *Plain
	scr   *screen
	// lastRead is when the deployment was read last; stale that events came since.
	lastRead time.Time
	stale    bool
}

// requestTimeout bounds one read of the deployment.
const requestTimeout = 30 * time.Second

func (w *watcher) get(ctx context.Context) (*api.Deployment, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	d, err := w.src.GetDeployment(rctx, w.st.ID)
	w.lastRead = w.o.Now()
	return d, err
}

// json writes each event's JSON on a line of its own, the end event as {"type":"end",
// "deploymentId","status","reason"}.
func (w *watcher) json(ctx context.Context, items <-chan item) (*api.Deployment, error) {
	d := w.st.Deployment
	for {
		it, err := next(ctx, items)
		if err != nil {
			return d, err
		}
		if it.Frame == nil {
			w.note(it.Note)
			continue
		}
		line, end := jsonLine(it.Frame)
		if line != nil {
			if _, err := w.o.Out.Write(append(line, '\n')); err != nil {
				return d, err
			}
		}
		if end != nil {
			d.Status, d.Reason = end.Status, end.Reason
			return d, nil
		}
	}
}

// next is the stream's next item: ctx's error when it ends first, the stream's error when it
// failed for good.
func next(ctx context.Context, items <-chan item) (item, error) {
	select {
	case <-ctx.Done():
		return item{}, ctx.Err()
	case it, ok := <-items:
		switch {
		case !ok: // the reader stops early only when ctx ended
			if err := ctx.Err(); err != nil {
				return item{}, err
			}
			return item{}, io.ErrUnexpectedEOF
		case it.Err != nil:
			return item{}, it.Err
		}
		return it, nil
	}
}

// jsonLine is a frame's NDJSON line (nil for a frame that is not JSON) and, for the end event,
// what it says.
func jsonLine(fr *Frame) ([]byte, *api.StreamEnd) {
	if fr.Event == "end" {
		var e api.StreamEnd
		if err := json.Unmarshal(fr.Data, &e); err != nil {
			return nil, &e
		}
		line, _ := json.Marshal(struct {
			Type string `json:"type"`
			api.StreamEnd
		}{"end", e})
		return line, &e
	}
	var b bytes.Buffer
	if err := json.Compact(&b, fr.Data); err != nil {
		return nil, nil
	}
	return b.Bytes(), nil
}

// note tells about the stream: on standard error in plain and json modes (stamped), in the
// frame in tty mode. An empty note is a stream that flows again.
func (w *watcher) note(note string) {
	w.st.Stream = note
	if w.o.Mode == ModeTTY {
		return
	}
	if note == "" {
		note = "event stream resumed"
	}
	fmt.Fprintf(w.o.ErrOut, "%s %s\n", w.o.Now().Format(TimeFormat), note)
}
