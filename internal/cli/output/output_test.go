package output

import (
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/cli/iostreams"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func TestTableTTYAlignedWithHeaders(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	p := NewPrinter(ios, now)
	tb := p.Table("name", "environment", "created")
	tb.Row("dev-1", "Dev", p.Time(now.Add(-3*time.Minute)))
	tb.Row("production-eu", "Production", p.Time(now.Add(-49*time.Hour)))
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	want := "NAME           ENVIRONMENT  CREATED\n" +
		"dev-1          Dev          3m ago\n" +
		"production-eu  Production   2d ago\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestTablePipedTSV(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	p := NewPrinter(ios, now)
	tb := p.Table("name", "created", "note")
	tb.Row("dev-1", p.Time(now.Add(-3*time.Minute)), "two\twords\nand a line")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	want := "dev-1\t2026-11-26T11:57:00Z\ttwo words and a line\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestTableClipsToWidth(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetWidth(12)
	tb := NewPrinter(ios, now).Table("a", "b")
	tb.Row("x", strings.Repeat("y", 30))
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if n := len([]rune(l)); n > 12 {
			t.Errorf("line %q is %d wide", l, n)
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(out.String()), "…") {
		t.Errorf("a cut line ends in an ellipsis: %q", out)
	}
}

func TestRelative(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "just now", 45 * time.Second: "45s ago", 3 * time.Minute: "3m ago", 2 * time.Hour: "2h ago",
		5 * 24 * time.Hour: "5d ago", -3 * time.Minute: "in 3m", 400 * 24 * time.Hour: "2025-10-22",
	} {
		if got := Relative(now.Add(-d), now); got != want {
			t.Errorf("Relative(now-%v) = %q, want %q", d, got, want)
		}
	}
}

func TestPrintFormats(t *testing.T) {
	v := struct {
		Name string `json:"name"`
		At   string `json:"at,omitempty"`
	}{Name: "a<b"}
	for f, want := range map[Format]string{FormatJSON: "{\n  \"name\": \"a<b\"\n}\n", FormatYAML: "name: a<b\n"} {
		ios, _, out, _ := iostreams.Test()
		if err := Print(ios, f, now, v, nil); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("%s: got %q, want %q", f, out, want)
		}
	}
	if _, err := ParseFormat("xml"); err == nil || !strings.Contains(err.Error(), "table, json or yaml") {
		t.Errorf("ParseFormat(xml) = %v", err)
	}
}

func TestDetailSkipsEmpty(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	if err := NewPrinter(ios, now).Detail([2]string{"Name", "dev-1"}, [2]string{"Reason", ""}, [2]string{"Environment", "Dev"}); err != nil {
		t.Fatal(err)
	}
	want := "Name:        dev-1\nEnvironment: Dev\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
