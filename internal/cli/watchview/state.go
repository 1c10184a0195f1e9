// Package watchview follows one deployment of the manager until it ends, for `slipway
// deployment watch` and `slipway deploy --watch`: the deployment's Server-Sent Events stream
// (resumed from the last event id after a drop) plus the deployment itself, read again when
// events arrive. It shows them in one of three modes: tty, a table of the clusters grouped under
// a progress bar per stage, redrawn in place (Render is that frame, a pure function of a State
// and a width); plain, one timestamped line per change (Plain); json, the raw events as NDJSON.
package watchview

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// State is what a frame shows: the deployment as last read, what its events told, the clock,
// and how the event stream fares.
type State struct {
	// ID is the deployment's id (shown before the deployment is read).
	ID string
	// Deployment is the deployment as last read (nil before the first read).
	Deployment *api.Deployment
	// Now is the time the frame is drawn at: elapsed times and the time left of a hold count
	// to it.
	Now time.Time
	// Started is when each cluster's first install began (its first cluster.installing event);
	// Passed when each stage passed (stage.passed, by stage index); LastCluster the time of each
	// cluster's last event.
	Started     map[string]time.Time
	Passed      map[int]time.Time
	LastCluster map[string]time.Time
	// Events is how many events were read, LastEventID the id of the last one.
	Events      int
	LastEventID int64
	// Stream is what went wrong with the event stream, for people ("" while it flows).
	Stream string
	// Interrupted: the watch was stopped (Ctrl-C) before the deployment ended.
	Interrupted bool
}

// NewState is the state of a watch of deployment id before anything was read.
func NewState(id string) *State {
	return &State{ID: id, Started: map[string]time.Time{}, Passed: map[int]time.Time{}, LastCluster: map[string]time.Time{}}
}

// Apply takes what an event tells: when a cluster's first install began and when its last
// step was, when a stage passed.
func (s *State) Apply(e api.DeploymentEvent) {
	s.Events++
	s.LastEventID = max(s.LastEventID, e.ID)
	if e.Cluster != "" {
		s.LastCluster[e.Cluster] = e.Time
		if _, ok := s.Started[e.Cluster]; !ok && e.Type == "cluster.installing" {
			s.Started[e.Cluster] = e.Time
		}
	}
	if e.Type == "stage.passed" {
		var details struct {
			Stage *int `json:"stage"`
		}
		if json.Unmarshal(e.Details, &details) == nil && details.Stage != nil {
			s.Passed[*details.Stage] = e.Time
		}
	}
}

// Terminal reports whether the deployment read last has ended.
func (s *State) Terminal() bool {
	return s.Deployment != nil && Terminal(s.Deployment.Status)
}

// Terminal reports whether a deployment status is final.
func Terminal(status string) bool {
	switch status {
	case "Completed", "Failed", "RolledBack", "Cancelled":
		return true
	}
	return false
}

// clusterDone reports whether a cluster's status is final for this deployment.
func clusterDone(status string) bool {
	switch status {
	case "healthy", "failed", "rolledBack", "skipped":
		return true
	}
	return false
}

// elapsed is how long the deployment has run: from its start (its creation while it has not
// started) to its end or to now.
func (s *State) elapsed() time.Duration {
	d := s.Deployment
	from := d.CreatedAt
	if d.StartedAt != nil {
		from = *d.StartedAt
	}
	to := s.Now
	if d.FinishedAt != nil {
		to = *d.FinishedAt
	}
	return to.Sub(from)
}

// clusterElapsed is how long a cluster has been worked on: from its first install to its final
// status (a healthy cluster's stage passing; the last event of one that failed, was rolled back
// or skipped; else its last update) or to now; ok is false when its install has not begun.
func (s *State) clusterElapsed(c *api.DeploymentCluster) (time.Duration, bool) {
	from, ok := s.Started[c.Name]
	if !ok {
		return 0, false
	}
	to := s.Now
	passed, stagePassed := s.Passed[c.Stage]
	last, hasLast := s.LastCluster[c.Name]
	switch {
	case c.Status == "healthy" && stagePassed:
		to = passed
	case clusterDone(c.Status) && c.Status != "healthy" && hasLast:
		to = last
	case clusterDone(c.Status) && c.UpdatedAt.After(from):
		to = c.UpdatedAt
	case s.Deployment.FinishedAt != nil:
		to = *s.Deployment.FinishedAt
	}
	return max(to.Sub(from), 0), true
}

// timedWait reports whether the deployment waits for a time to pass (a hold or a pause between
// clusters), so that its message's time left is recomputed for each frame.
func timedWait(w *api.Waiting) bool {
	return w != nil && w.Until != nil && (w.Reason == api.WaitEvaluation || w.Reason == api.WaitPause)
}

// waitingMessage is what the deployment waits for, the time left of a hold counted to now.
func (s *State) waitingMessage() string {
	w := s.Deployment.Waiting
	if w == nil {
		return ""
	}
	if !timedWait(w) {
		return w.Message
	}
	return liveLeft(w.Message, w.Until.Sub(s.Now))
}

// clusterWaiting is why a cluster waits; where it quotes the deployment's timed wait, the time
// left is counted to now.
func (s *State) clusterWaiting(c *api.DeploymentCluster) string {
	w := s.Deployment.Waiting
	if c.Waiting == "" || !timedWait(w) || !strings.Contains(c.Waiting, w.Message) {
		return c.Waiting
	}
	return strings.Replace(c.Waiting, w.Message, s.waitingMessage(), 1)
}

// liveLeft replaces the time left in a timed wait's message ("evaluation period, 3 m 10 s
// left") with left.
func liveLeft(msg string, left time.Duration) string {
	head, ok := strings.CutSuffix(msg, " left")
	if !ok {
		return msg
	}
	i := strings.LastIndex(head, ", ")
	if i < 0 {
		return msg
	}
	return head[:i+2] + Left(left) + " left"
}

// Left is a time left as the manager writes it: "3 m 10 s", "1 h 5 m", "40 s".
func Left(d time.Duration) string {
	d = max(d.Round(time.Second), 0)
	h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0 && m > 0:
		return fmt.Sprintf("%d h %d m", h, m)
	case h > 0:
		return fmt.Sprintf("%d h", h)
	case m > 0 && sec > 0:
		return fmt.Sprintf("%d m %d s", m, sec)
	case m > 0:
		return fmt.Sprintf("%d m", m)
	}
	return fmt.Sprintf("%d s", sec)
}

// Elapsed is a duration in a table cell: "8s", "1m12s", "1h02m".
func Elapsed(d time.Duration) string {
	d = max(d.Truncate(time.Second), 0)
	h, m, sec := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// stages are the stage indexes the deployment's clusters are in, in order.
func stages(d *api.Deployment) []int {
	var out []int
	for _, c := range d.Clusters {
		if !slices.Contains(out, c.Stage) {
			out = append(out, c.Stage)
		}
	}
	slices.Sort(out)
	return out
}

// statusText is the deployment's status with what holds it: paused, a cancel or a rollback
// asked for.
func statusText(d *api.Deployment) string {
	var marks []string
	if d.Paused {
		marks = append(marks, "paused")
	}
	if d.CancelRequested && d.Status != "Cancelled" {
		marks = append(marks, "cancelling")
	}
	if d.RollbackRequested && d.Status != "RolledBack" && d.Status != "RollingBack" {
		marks = append(marks, "rollback requested")
	}
	if len(marks) == 0 {
		return d.Status
	}
	return d.Status + " (" + strings.Join(marks, ", ") + ")"
}

// clusterStatus is a cluster's step: its status, with the attempt when an install is retried.
func clusterStatus(c *api.DeploymentCluster) string {
	if c.Status == "installing" && c.InstallAttempts > 1 {
		return fmt.Sprintf("installing (attempt %d)", c.InstallAttempts)
	}
	return c.Status
}

// clusterNote is the last cell of a cluster's row: why it waits, or what went wrong.
func (s *State) clusterNote(c *api.DeploymentCluster) string {
	if w := s.clusterWaiting(c); w != "" {
		if strings.HasPrefix(w, "waiting") {
			return w
		}
		return "waiting: " + w
	}
	switch c.Status {
	case "failed", "rolledBack", "skipped":
		return c.Message
	}
	return ""
}

// revision is a cluster's Helm revision cell.
func revision(c *api.DeploymentCluster) string {
	if c.HelmRevision <= 0 {
		return "-"
	}
	return fmt.Sprintf("rev %d", c.HelmRevision)
}
