package watchview

import (
	"fmt"
	"strings"

	"github.com/mattn/go-runewidth"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Symbols of a cluster's status and of the deployment's end.
var symbols = map[string]string{
	"pending": "·", "installing": "●", "validating": "●", "healthy": "✓", "failed": "✗", "rolledBack": "↺", "skipped": "–",
	"Completed": "✓", "Failed": "✗", "RolledBack": "↺", "Cancelled": "■",
}

// Progress bar cells: a finished cluster, one being worked on, one not begun.
const (
	barDone    = "█"
	barActive  = "▒"
	barPending = "░"
)

// cells measures and clips text the same way whatever the locale (runewidth's default condition
// reads the environment and widens ambiguous characters in East Asian locales).
var cells = &runewidth.Condition{EastAsianWidth: false}

// Render is the tty frame of a watch at a terminal width: a header (operator, version,
// strategy, status, stage, elapsed time; the deployment's id; what it waits for), then each
// stage's progress bar with a row per cluster under it (status, Helm revision, elapsed time,
// why it waits or what failed), and once the deployment ended a last line with how. No line is
// wider than width.
func Render(st *State, width int) []string {
	return render(st, width, nil, -1)
}

// RenderHeight is Render in at most height lines (a terminal's, so that redrawing in place
// reaches every line): when the whole table is taller, the stages that are done or not begun
// shrink to their progress bar, and then the stages left show their first rows and how many
// more there are. height < 1 is no limit.
func RenderHeight(st *State, width, height int) []string {
	lines := Render(st, width)
	if height < 1 || len(lines) <= height || st.Deployment == nil {
		return lines
	}
	d := st.Deployment
	busy := func(stage int) bool {
		for _, c := range d.Clusters {
			if c.Stage == stage && c.Status != "pending" && !clusterDone(c.Status) {
				return true
			}
		}
		return stage == d.Stage
	}
	lines = render(st, width, busy, -1)
	if len(lines) <= height {
		return lines
	}
	shown, expanded := 0, 0
	for _, c := range d.Clusters {
		if busy(c.Stage) {
			shown++
		}
	}
	for _, stage := range stages(d) {
		if busy(stage) {
			expanded++
		}
	}
	// Each expanded stage that is cut gains a "… more" line: leave room for them.
	rows := max(shown-(len(lines)-height)-expanded, 1)
	lines = render(st, width, busy, rows)
	return lines[:min(len(lines), height)]
}

// render draws the frame; expand (nil: every stage) says which stages show their clusters, and
// rows (-1: all) how many cluster rows the frame shows at most.
func render(st *State, w int, expand func(stage int) bool, rows int) []string {
	var out []string
	add := func(s string) { out = append(out, clip(s, w)) }
	d := st.Deployment
	if d == nil {
		add(fmt.Sprintf("deployment %s: reading it…", st.ID))
		if st.Stream != "" {
			add("⚠ " + st.Stream)
		}
		return out
	}
	head := fmt.Sprintf("%s %s · %s · %s", d.Operator, d.Version, d.Strategy, statusText(d))
	if ss := stages(d); len(ss) > 1 && !Terminal(d.Status) && d.Stage < len(ss) {
		head += fmt.Sprintf(" · stage %d of %d", d.Stage+1, len(ss))
	}
	add(head + " · " + Elapsed(st.elapsed()))
	add(fmt.Sprintf("deployment %s · requested by %s", d.ID, d.RequestedBy))
	if msg := st.waitingMessage(); msg != "" {
		add("waiting: " + msg)
	}
	if st.Stream != "" {
		add("⚠ " + st.Stream)
	}
	add("")
	cols := columnsOf(st)
	for _, stage := range stages(d) {
		add(stageLine(d, stage, w))
		if expand != nil && !expand(stage) {
			continue
		}
		n, more := 0, 0
		for i := range d.Clusters {
			c := &d.Clusters[i]
			if c.Stage != stage {
				continue
			}
			if rows >= 0 && n >= rows {
				more++
				continue
			}
			add(cols.row(st, c))
			n++
		}
		if more > 0 {
			add(fmt.Sprintf("  … %d more cluster%s", more, plural(more)))
		}
		rows = max(rows-n, min(rows, 0))
	}
	if Terminal(d.Status) {
		add("")
		add(endLine(st))
	} else if st.Interrupted {
		add("")
		add("stopped watching: the deployment goes on")
		add("follow it again: slipway deployment watch " + d.ID)
	}
	return out
}

// endLine says how the deployment ended: "✓ Completed after 2m31s", with the reason.
func endLine(st *State) string {
	d := st.Deployment
	s := fmt.Sprintf("%s %s after %s", symbols[d.Status], d.Status, Elapsed(st.elapsed()))
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// stageLine is a stage's header: its number, a progress bar of its clusters (finished, being
// worked on, not begun), how many are healthy and how many ended otherwise.
func stageLine(d *api.Deployment, stage, w int) string {
	var total, done, active int
	count := map[string]int{}
	for _, c := range d.Clusters {
		if c.Stage != stage {
			continue
		}
		total++
		switch {
		case clusterDone(c.Status):
			done++
		case c.Status != "pending":
			active++
		}
		count[c.Status]++
	}
	summary := fmt.Sprintf("%d/%d healthy", count["healthy"], total)
	for _, k := range [][2]string{{"failed", "failed"}, {"rolledBack", "rolled back"}, {"skipped", "skipped"}} {
		if n := count[k[0]]; n > 0 {
			summary += fmt.Sprintf(", %d %s", n, k[1])
		}
	}
	n := min(max(w-40, 10), 30)
	nd := done * n / total
	na := min((done+active)*n/total-nd, n-nd)
	if active > 0 && na == 0 && nd < n {
		na = 1
	}
	bar := strings.Repeat(barDone, nd) + strings.Repeat(barActive, na) + strings.Repeat(barPending, n-nd-na)
	return fmt.Sprintf("stage %d  %s  %s", stage+1, bar, summary)
}

// columns are the widths of a frame's cluster cells, so that the rows of every stage align.
type columns struct{ name, env, status, rev, elapsed int }

func columnsOf(st *State) columns {
	var c columns
	for i := range st.Deployment.Clusters {
		cl := &st.Deployment.Clusters[i]
		c.name = max(c.name, cells.StringWidth(cl.Name))
		c.env = max(c.env, cells.StringWidth(cl.Environment))
		c.status = max(c.status, cells.StringWidth(clusterStatus(cl)))
		c.rev = max(c.rev, cells.StringWidth(revision(cl)))
		c.elapsed = max(c.elapsed, cells.StringWidth(clusterElapsedCell(st, cl)))
	}
	return c
}

func clusterElapsedCell(st *State, c *api.DeploymentCluster) string {
	if d, ok := st.clusterElapsed(c); ok {
		return Elapsed(d)
	}
	return "-"
}

// row is a cluster's line: symbol, name, environment, status, revision, elapsed time, note.
func (cols columns) row(st *State, c *api.DeploymentCluster) string {
	sym := symbols[c.Status]
	if sym == "" {
		sym = "?"
	}
	s := fmt.Sprintf("  %s %s  %s  %s  %s  %s", sym, pad(c.Name, cols.name), pad(c.Environment, cols.env),
		pad(clusterStatus(c), cols.status), pad(revision(c), cols.rev), padLeft(clusterElapsedCell(st, c), cols.elapsed))
	if note := st.clusterNote(c); note != "" {
		return s + "  " + note
	}
	return strings.TrimRight(s, " ")
}

func pad(s string, w int) string     { return s + strings.Repeat(" ", max(w-cells.StringWidth(s), 0)) }
func padLeft(s string, w int) string { return strings.Repeat(" ", max(w-cells.StringWidth(s), 0)) + s }

// clip cuts s to w columns, ending it with "…" when cut; w < 1 leaves it whole.
func clip(s string, w int) string {
	if w < 1 || cells.StringWidth(s) <= w {
		return s
	}
	return cells.Truncate(s, w, "…")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
