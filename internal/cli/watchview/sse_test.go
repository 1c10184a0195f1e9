package watchview

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadFrames(t *testing.T) {
	stream := "retry: 3000\n\n" +
		": heartbeat\n\n" +
		"id: 7\nevent: status\ndata: {\"id\":7}\n\n" +
		"id: 8\r\nevent: cluster.installing\r\ndata: {\"id\":8,\r\ndata:\"cluster\":\"dev-1\"}\r\n\r\n" +
		"data:no space after the colon\n\n" +
		"event: ignored\nid: 9\n\n" + // no data: not dispatched
		"unknown: field\nevent: end\ndata: {\"status\":\"Completed\"}\n\n" +
		"id: 10\nevent: cut\ndata: cut short" // no blank line: dropped at the end
	var got []Frame
	err := ReadFrames(iotest.OneByteReader(strings.NewReader(stream)), func(f Frame) error {
		got = append(got, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Frame{
		{ID: "7", Event: "status", Data: []byte(`{"id":7}`)},
		{ID: "8", Event: "cluster.installing", Data: []byte("{\"id\":8,\n\"cluster\":\"dev-1\"}")},
		{Event: "message", Data: []byte("no space after the colon")},
		{Event: "end", Data: []byte(`{"status":"Completed"}`)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("frames:\n got %q\nwant %q", got, want)
	}
}

func TestReadFramesStops(t *testing.T) {
	stream := "id: 1\nevent: a\ndata: {}\n\nid: 2\nevent: end\ndata: {}\n\nid: 3\nevent: b\ndata: {}\n\n"
	n := 0
	err := ReadFrames(strings.NewReader(stream), func(f Frame) error {
		n++
		if f.Event == "end" {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) || n != 2 {
		t.Errorf("ReadFrames returned %v after %d frames, want errStop after 2", err, n)
	}
	boom := errors.New("boom")
	if err := ReadFrames(iotest.ErrReader(boom), func(Frame) error { return nil }); !errors.Is(err, boom) {
		t.Errorf("a failing reader: %v, want %v", err, boom)
	}
}

func TestJSONLine(t *testing.T) {
	line, end := jsonLine(&Frame{ID: "4", Event: "status", Data: []byte("{\"id\": 4,\n \"type\": \"status\"}")})
	if string(line) != `{"id":4,"type":"status"}` || end != nil {
		t.Errorf("an event: %s %v", line, end)
	}
	line, end = jsonLine(&Frame{Event: "end", Data: []byte(`{"deploymentId":"d1","status":"RolledBack","reason":"install failed"}`)})
	if string(line) != `{"type":"end","deploymentId":"d1","status":"RolledBack","reason":"install failed"}` || end == nil || end.Status != "RolledBack" {
		t.Errorf("the end: %s %+v", line, end)
	}
	if line, end := jsonLine(&Frame{Event: "status", Data: []byte("not json")}); line != nil || end != nil {
		t.Errorf("a frame that is not JSON: %s %v", line, end)
	}
}

func TestParseMode(t *testing.T) {
	for _, s := range Modes {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseMode("fancy"); err == nil || !strings.Contains(err.Error(), `not "fancy"`) {
		t.Errorf("ParseMode(fancy): %v", err)
	}
}
