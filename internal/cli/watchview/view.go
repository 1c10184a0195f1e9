package watchview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// view runs the tty and plain modes: events mark the deployment stale, and every Redraw it is
// read again when stale (Refetch apart at least) or when Poll passed, then drawn. A deployment
// that had ended before the watch began is drawn once, after its events were read.
func (w *watcher) view(ctx context.Context, items <-chan item) (*api.Deployment, error) {
	live := !w.st.Terminal()
	if w.o.Mode == ModeTTY && live {
		w.scr = &screen{w: w.o.Out}
		defer w.scr.close()
	}
	if live {
		w.show()
	}
	tick := time.NewTicker(w.o.Redraw)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			w.st.Interrupted = errors.Is(ctx.Err(), context.Canceled)
			w.final()
			return w.st.Deployment, ctx.Err()
		case it, ok := <-items:
			if !ok {
				items = nil // closed only once ctx ended: the case above follows
				continue
			}
			end, err := w.take(it)
			if err != nil {
				w.final()
				return w.st.Deployment, err
			}
			if end != nil {
				w.finish(ctx, end)
				return w.st.Deployment, nil
			}
		case <-tick.C:
			if err := w.refresh(ctx); err != nil {
				w.final()
				return w.st.Deployment, err
			}
			if live {
				w.show()
			}
		}
	}
}

// take applies one item of the stream; end is the end event's news.
func (w *watcher) take(it item) (*api.StreamEnd, error) {
	switch {
	case it.Err != nil:
		return nil, it.Err
	case it.Frame == nil:
		w.note(it.Note)
		return nil, nil
	case it.Frame.Event == "end":
		var e api.StreamEnd
		_ = json.Unmarshal(it.Frame.Data, &e)
		return &e, nil
	}
	var ev api.DeploymentEvent
	if err := json.Unmarshal(it.Frame.Data, &ev); err == nil {
		w.st.Apply(ev)
		w.stale = true
	}
	return nil, nil
}

// refresh reads the deployment again when it is due. A read that fails for a while is noted
// (and tried again on the next tick); a permanent failure is returned.
func (w *watcher) refresh(ctx context.Context) error {
	since := w.o.Now().Sub(w.lastRead)
	if due := (w.stale && since >= w.o.Refetch) || since >= w.o.Poll; !due {
		return nil
	}
	d, err := w.get(ctx)
	switch {
	case err == nil:
		w.st.Deployment, w.stale = d, false
		if strings.HasPrefix(w.st.Stream, readFailed) {
			w.note("")
		}
	case ctx.Err() != nil:
		return nil // the loop sees ctx
	case Permanent(err):
		return err
	default:
		w.note(readFailed + err.Error())
	}
	return nil
}

// readFailed starts the note of a failed read of the deployment.
const readFailed = "reading the deployment failed: "

// finish reads the deployment as it ended (the end event's status if that read fails) and
// draws it.
func (w *watcher) finish(ctx context.Context, end *api.StreamEnd) {
	if d, err := w.get(ctx); err == nil {
		w.st.Deployment = d
	} else if end.Status != "" {
		w.st.Deployment.Status, w.st.Deployment.Reason = end.Status, end.Reason
	}
	w.st.Stream = ""
	w.final()
}

// show draws the state now: a tty frame that fits the terminal, or plain mode's new lines.
func (w *watcher) show() {
	w.st.Now = w.o.Now()
	if w.scr != nil {
		w.scr.draw(RenderHeight(w.st, frameWidth(w.o.Width()), w.o.Height()-1))
		return
	}
	w.plainLines()
}

// final draws the last frame: the whole table, in place of the live frame on a terminal.
func (w *watcher) final() {
	w.st.Now = w.o.Now()
	if w.o.Mode != ModeTTY {
		w.plainLines()
		return
	}
	lines := Render(w.st, frameWidth(w.o.Width()))
	if w.scr != nil {
		w.scr.draw(lines)
		return
	}
	_, _ = io.WriteString(w.o.Out, strings.Join(lines, "\n")+"\n")
}

func (w *watcher) plainLines() {
	for _, l := range w.plain.Lines(w.st) {
		fmt.Fprintln(w.o.Out, l)
	}
}

// frameWidth leaves the terminal's last column empty: a line that fills it leaves the cursor
// waiting to wrap, where erasing to the end of the line would take its last character.
func frameWidth(w int) int { return max(w-1, 20) }

// Terminal controls of the tty mode.
const (
	hideCursor = "\x1b[?25l"
	showCursor = "\x1b[?25h"
	eraseLine  = "\x1b[K"   // to the end of the line
	eraseBelow = "\x1b[J"   // to the end of the screen
	cursorUp   = "\x1b[%dA" // n lines
)

// screen redraws a frame in place on the normal screen (no alternate screen, so the last frame
// stays in the scrollback): it moves the cursor up over the last frame and overwrites it, line
// by line, erasing what is left of each line and, when the new frame is shorter, what is below.
// The cursor is hidden from the first frame until close.
type screen struct {
	w      io.Writer
	last   []string
	hidden bool
}

func (s *screen) draw(lines []string) {
	if s.hidden && slices.Equal(lines, s.last) {
		return
	}
	var b strings.Builder
	if !s.hidden {
		b.WriteString(hideCursor)
		s.hidden = true
	}
	if n := len(s.last); n > 0 {
		fmt.Fprintf(&b, "\r"+cursorUp, n)
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString(eraseLine + "\n")
	}
	if len(lines) < len(s.last) {
		b.WriteString(eraseBelow)
	}
	s.last = slices.Clone(lines)
	_, _ = io.WriteString(s.w, b.String())
}

// close shows the cursor again.
func (s *screen) close() {
	if s.hidden {
		_, _ = io.WriteString(s.w, showCursor)
	}
}
