package watchview

import (
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Plain is the plain mode's memory: it turns successive states into one timestamped line for
// each change of the deployment (status, what it waits for) and of each cluster (status, Helm
// revision, install attempt, why it waits), for logs and CI. A wait's countdown is not a change.
type Plain struct {
	deployment string
	clusters   map[string]string
	ended      bool
}

// NewPlain is a Plain that has printed nothing.
func NewPlain() *Plain { return &Plain{clusters: map[string]string{}} }

// TimeFormat is the plain lines' timestamp.
const TimeFormat = time.RFC3339

// Lines are the lines for what changed since the last call (the first call describes every
// cluster), stamped with st.Now; once the deployment ended, the last line says how.
func (p *Plain) Lines(st *State) []string {
	d := st.Deployment
	if d == nil || p.ended {
		return nil
	}
	stamp := st.Now.Format(TimeFormat)
	var out []string
	if key := p.deploymentKey(d); key != p.deployment {
		p.deployment = key
		s := fmt.Sprintf("%s deployment %s %s %s (%s): %s", stamp, d.ID, d.Operator, d.Version, d.Strategy, statusText(d))
		if n := len(stages(d)); n > 1 && !Terminal(d.Status) && d.Stage < n {
			s += fmt.Sprintf(", stage %d of %d", d.Stage+1, n)
		}
		if msg := st.waitingMessage(); msg != "" {
			s += " — waiting: " + msg
		}
		out = append(out, s)
	}
	for i := range d.Clusters {
		c := &d.Clusters[i]
		key := p.clusterKey(d, c)
		if p.clusters[c.Name] == key {
			continue
		}
		p.clusters[c.Name] = key
		s := fmt.Sprintf("%s %s (%s, stage %d): %s", stamp, c.Name, c.Environment, c.Stage+1, clusterStatus(c))
		if c.HelmRevision > 0 {
			s += fmt.Sprintf(", revision %d", c.HelmRevision)
		}
		if note := st.clusterNote(c); note != "" {
			s += " — " + note
		}
		out = append(out, s)
	}
	if Terminal(d.Status) {
		p.ended = true
		out = append(out, stamp+" "+endLine(st))
	}
	return out
}

// deploymentKey is what a deployment line reports: a timed wait by its reason alone.
func (p *Plain) deploymentKey(d *api.Deployment) string {
	return strings.Join([]string{statusText(d), fmt.Sprint(d.Stage), waitKey(d.Waiting)}, "\x00")
}

// clusterKey is what a cluster line reports: a timed wait quoted in its reason by the wait's
// reason alone.
func (p *Plain) clusterKey(d *api.Deployment, c *api.DeploymentCluster) string {
	waiting := c.Waiting
	if w := d.Waiting; timedWait(w) {
		waiting = strings.Replace(waiting, w.Message, w.Reason, 1)
	}
	msg := ""
	if clusterDone(c.Status) {
		msg = c.Message
	}
	return strings.Join([]string{c.Status, fmt.Sprint(c.HelmRevision, c.InstallAttempts), waiting, msg}, "\x00")
}

func waitKey(w *api.Waiting) string {
	switch {
	case w == nil:
		return ""
	case timedWait(w):
		return w.Reason
	}
	return w.Reason + ": " + w.Message
}
