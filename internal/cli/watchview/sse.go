package watchview

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Frame is one Server-Sent Events message: the fields of the lines up to a blank line.
type Frame struct {
	// ID is the "id:" field ("" when the message had none; the stream's last id stays).
	ID string
	// Event is the "event:" field ("message" when the message had none).
	Event string
	// Data is the "data:" lines joined with newlines.
	Data []byte
}

// maxLine bounds one line of a stream (an event's JSON with its details).
const maxLine = 4 << 20

// errStop is what a ReadFrames callback returns to stop reading without an error.
var errStop = errors.New("stop reading")

// ReadFrames reads SSE messages from r and calls fn for each, in order, as the HTML standard's
// event stream format says: lines end with LF or CRLF, a line starting with ":" is a comment,
// "field: value" drops one space after the colon, unknown fields (retry among them: the watch
// retries on its own schedule) are ignored, and a message without data is not dispatched. It
// returns nil at the end of r (a message cut short there is dropped), or fn's error.
func ReadFrames(r io.Reader, fn func(Frame) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var cur Frame
	var data bytes.Buffer
	hasData := false
	for sc.Scan() {
		line := bytes.TrimSuffix(sc.Bytes(), []byte("\r"))
		if len(line) == 0 {
			if hasData {
				cur.Data = bytes.Clone(data.Bytes())
				if cur.Event == "" {
					cur.Event = "message"
				}
				if err := fn(cur); err != nil {
					return err
				}
			}
			cur, hasData = Frame{}, false
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			if !bytes.ContainsRune(value, 0) {
				cur.ID = string(value)
			}
		case "event":
			cur.Event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		}
	}
	return sc.Err()
}
