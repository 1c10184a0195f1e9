package health

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/slipway-dev/slipway/internal/words"
)

// whyNotReady says why a pod is not Ready, from what a kubelet reports: each container that is
// not ready — waiting (CrashLoopBackOff, ImagePullBackOff, CreateContainerConfigError: its
// reason), running but failing its readiness probe (the kubelet's latest probe event, which the
// pod's status does not hold), or terminated — with its restarts and its last exit (code and the
// last line of its termination message, which FallbackToLogsOnError fills with the log's tail);
// else the pod's failing condition (unschedulable, say).
func whyNotReady(ctx context.Context, cl *clients, p *corev1.Pod) string {
	var out []string
	probeFailing := false
	for i, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
		if cs.Ready || (cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0) {
			continue // ready, or an init container that completed
		}
		kind := "container"
		if i < len(p.Status.InitContainerStatuses) {
			kind = "init container"
		}
		s := containerState(kind, cs)
		if cs.State.Running != nil && kind == "container" {
			probeFailing = true
		}
		if cs.RestartCount > 0 {
			s += ", restarted " + words.Count(int(cs.RestartCount), "time")
		}
		if t := cs.LastTerminationState.Terminated; t != nil && cs.State.Terminated == nil {
			s += fmt.Sprintf(", last exit code %d", t.ExitCode)
			if m := lastLine(t.Message); m != "" {
				s += ": " + truncate(m, 160)
			}
		}
		out = append(out, s)
	}
	if probeFailing {
		if e := lastProbeFailure(ctx, cl, p); e != "" {
			out = append(out, "kubelet: "+e)
		}
	}
	if len(out) == 0 {
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
				out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s: %s %s", c.Type, c.Status, c.Reason, truncate(c.Message, 160))))
				break
			}
		}
	}
	if len(out) == 0 {
		return "no container status yet"
	}
	return strings.Join(out, "; ")
}

// containerState says what a container that is not ready is doing.
func containerState(kind string, cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Waiting != nil:
		s := fmt.Sprintf("%s %s in %s", kind, cs.Name, cs.State.Waiting.Reason)
		if m := cs.State.Waiting.Message; m != "" && cs.State.Waiting.Reason != "CrashLoopBackOff" {
			s += " (" + truncate(m, 120) + ")"
		}
		return s
	case cs.State.Running != nil && kind == "init container":
		return fmt.Sprintf("%s %s running", kind, cs.Name)
	case cs.State.Running != nil:
		return fmt.Sprintf("%s %s running, not ready", kind, cs.Name)
	case cs.State.Terminated != nil:
		// A container that just exited: the kubelet says CrashLoopBackOff only once it has
		// decided to back off, seconds later.
		t := cs.State.Terminated
		s := fmt.Sprintf("%s %s terminated (%s, exit code %d)", kind, cs.Name, t.Reason, t.ExitCode)
		if m := lastLine(t.Message); m != "" {
			s += ": " + truncate(m, 160)
		}
		return s
	}
	return fmt.Sprintf("%s %s not started", kind, cs.Name)
}

// lastProbeFailure is the message of the kubelet's newest "Unhealthy" event of the pod (a probe
// that failed and how: "Readiness probe failed: HTTP probe failed with statuscode: 500"); "" when
// there is none or the events cannot be read.
func lastProbeFailure(ctx context.Context, cl *clients, p *corev1.Pod) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	sel := fields.Set{"involvedObject.name": p.Name, "involvedObject.uid": string(p.UID), "reason": "Unhealthy"}.AsSelector().String()
	list, err := cl.kube.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return ""
	}
	var newest *corev1.Event
	for i := range list.Items {
		if e := &list.Items[i]; newest == nil || eventTime(e).After(eventTime(newest)) {
			newest = e
		}
	}
	if newest == nil {
		return ""
	}
	return truncate(strings.TrimSpace(newest.Message), 200)
}

// eventTime is when an event last happened: the newest of its times that is set.
func eventTime(e *corev1.Event) time.Time {
	t := e.LastTimestamp.Time
	if e.Series != nil && e.Series.LastObservedTime.After(t) {
		t = e.Series.LastObservedTime.Time
	}
	if e.EventTime.After(t) {
		t = e.EventTime.Time
	}
	return t
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
