package joblog

import (
	"bytes"
	"unicode/utf8"
)

// tailBuffer is an io.Writer that keeps the end of what is written to it: at least the last max+1
// bytes, in a buffer that never grows beyond 2×(max+1), so a stream of any size is read in bounded
// memory. String returns the end as Tail does.
type tailBuffer struct {
	max   int
	buf   []byte
	total int64 // bytes written
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// keep is how much of the end is always held: max bytes, plus the byte before them, which tells
// whether they start at a line start.
func (t *tailBuffer) keep() int { return t.max + 1 }

// Write implements io.Writer; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	keep := t.keep()
	if len(p) >= keep {
		t.buf = append(t.buf[:0], p[len(p)-keep:]...)
		return n, nil
	}
	if len(t.buf)+len(p) > 2*keep {
		// Drop the front: what is held, and p, make the last keep bytes.
		drop := len(t.buf) + len(p) - keep
		t.buf = t.buf[:copy(t.buf, t.buf[drop:])]
	}
	if need := len(t.buf) + len(p); need > cap(t.buf) {
		grown := make([]byte, len(t.buf), min(2*keep, max(need, 2*cap(t.buf))))
		copy(grown, t.buf)
		t.buf = grown
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns everything written when it is at most max bytes. Otherwise CutNote and the end of
// the stream, max bytes in all: from the first line start within them, or, when the last line
// alone does not fit, the end of that line (from a character boundary). A max too small to hold
// the note gets the last max bytes alone.
func (t *tailBuffer) String() string {
	if t.total <= int64(t.max) {
		return string(t.buf)
	}
	note := CutNote
	if t.max <= len(note) {
		note = ""
	}
	budget := t.max - len(note)
	end := t.buf[len(t.buf)-budget:]
	if t.buf[len(t.buf)-budget-1] != '\n' {
		// end starts inside a line: drop that line's rest, unless it is the last line.
		if i := bytes.IndexByte(end, '\n'); i >= 0 && i < len(end)-1 {
			end = end[i+1:]
		} else {
			for len(end) > 0 && !utf8.RuneStart(end[0]) {
				end = end[1:]
			}
		}
	}
	return note + string(end)
}
