// Package output prints what commands answer: a table (aligned with upper-case headers on a
// terminal, tab-separated values without a header when piped, as gh does), JSON, or YAML (from
// the JSON field names, through sigs.k8s.io/yaml). Times in tables are relative on a terminal
// ("3m ago") and RFC 3339 when piped.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/cli/iostreams"
)

// Format is a --output value.
type Format string

const (
	FormatTable Format = "table"
	FormatJSON  Format = "json"
	FormatYAML  Format = "yaml"
)

// Formats are the --output values.
var Formats = []string{string(FormatTable), string(FormatJSON), string(FormatYAML)}

// ParseFormat checks a --output value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatTable, FormatJSON, FormatYAML:
		return f, nil
	}
	return "", fmt.Errorf("--output must be table, json or yaml, not %q", s)
}

// Print writes v in format f to the streams' Out: JSON or YAML of v, or the table that table
// fills (table may print more than one table, or plain text, through its printer).
func Print(ios *iostreams.IOStreams, f Format, now time.Time, v any, table func(t *Printer) error) error {
	switch f {
	case FormatJSON:
		return WriteJSON(ios.Out, v)
	case FormatYAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = ios.Out.Write(data)
		return err
	}
	return table(NewPrinter(ios, now))
}

// WriteJSON writes v as indented JSON with a final newline, HTML characters not escaped.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Printer builds tables for one command's output.
type Printer struct {
	out   io.Writer
	tty   bool
	width int
	now   time.Time
}

// NewPrinter is a printer over the streams' Out, with their terminal-ness and width; now is the
// time relative times count from.
func NewPrinter(ios *iostreams.IOStreams, now time.Time) *Printer {
	return &Printer{out: ios.Out, tty: ios.IsStdoutTTY(), width: ios.TerminalWidth(), now: now}
}

// TTY reports whether output goes to a terminal.
func (p *Printer) TTY() bool { return p.tty }

// Out is where the printer writes (for text around tables).
func (p *Printer) Out() io.Writer { return p.out }

// Time is t for a table: relative on a terminal, RFC 3339 when piped; "" for the zero time.
func (p *Printer) Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if !p.tty {
		return t.UTC().Format(time.RFC3339)
	}
	return Relative(t, p.now)
}

// TimeP is Time of a pointer (nil: "").
func (p *Printer) TimeP(t *time.Time) string {
	if t == nil {
		return ""
	}
	return p.Time(*t)
}

// Relative says how long ago (or from now) t is: "just now", "45s ago", "3m ago", "2h ago",
// "5d ago", "in 3m"; past a year, the date.
func Relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 365*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		return t.Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// Table is rows under headers.
type Table struct {
	p       *Printer
	headers []string
	rows    [][]string
}

// Table starts a table with these headers (printed upper-case, on a terminal only).
func (p *Printer) Table(headers ...string) *Table {
	return &Table{p: p, headers: headers}
}

// Row adds a row; missing cells are empty.
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table: on a terminal, columns aligned two spaces apart under upper-case
// headers, each line cut to the terminal's width; piped, tab-separated cells, no header.
func (t *Table) Render() error {
	if !t.p.tty {
		var b strings.Builder
		for _, r := range t.rows {
			for i := range t.headers {
				if i > 0 {
					b.WriteByte('\t')
				}
				b.WriteString(tsvCell(cell(r, i)))
			}
			b.WriteByte('\n')
		}
		_, err := io.WriteString(t.p.out, b.String())
		return err
	}
	widths := make([]int, len(t.headers))
	all := append([][]string{upper(t.headers)}, t.rows...)
	for _, r := range all {
		for i := range widths {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell(r, i)))
		}
	}
	var b strings.Builder
	for _, r := range all {
		var line strings.Builder
		for i := range widths {
			c := cell(r, i)
			line.WriteString(c)
			if i < len(widths)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteString(clip(strings.TrimRight(line.String(), " "), t.p.width))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(t.p.out, b.String())
	return err
}

func cell(r []string, i int) string {
	if i < len(r) {
		return r[i]
	}
	return ""
}

func upper(h []string) []string {
	out := make([]string, len(h))
	for i, s := range h {
		out[i] = strings.ToUpper(s)
	}
	return out
}

// tsvCell keeps a cell on its line and in its column.
func tsvCell(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
}

// clip cuts s to width runes, ending in "…" when cut (width ≤ 0: no limit).
func clip(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// Detail prints "Key: value" lines with the keys aligned (a single object in table format);
// empty values are left out.
func (p *Printer) Detail(pairs ...[2]string) error {
	w := 0
	for _, kv := range pairs {
		if kv[1] != "" {
			w = max(w, utf8.RuneCountInString(kv[0]))
		}
	}
	var b strings.Builder
	for _, kv := range pairs {
		if kv[1] == "" {
			continue
		}
		fmt.Fprintf(&b, "%s:%s %s\n", kv[0], strings.Repeat(" ", w-utf8.RuneCountInString(kv[0])), kv[1])
	}
	_, err := io.WriteString(p.out, b.String())
	return err
}
