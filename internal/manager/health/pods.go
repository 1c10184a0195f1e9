package health

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// metricsGroupVersion is the resource metrics API (metrics-server).
const metricsGroupVersion = "metrics.k8s.io/v1beta1"

// checkPods lists the release's pods and judges them.
func (c *Checker) checkPods(ctx context.Context, cl *clients, cluster string, t Target) api.PodsStatus {
	st := api.PodsStatus{Health: api.Healthy, Resources: api.VerdictNotChecked, Messages: []string{}}
	list, err := cl.kube.CoreV1().Pods(t.Namespace).List(ctx, metav1.ListOptions{LabelSelector: t.podSelector()})
	if err != nil {
		st.Health = api.Degraded
		st.Messages = append(st.Messages, notChecked("listing the controller pods: "+err.Error()))
		return st
	}
	now := c.cfg.Now()
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		pods = append(pods, p)
	}
	st.Total = len(pods)
	if st.Total == 0 {
		st.Health = api.Unhealthy
		st.Messages = append(st.Messages, fmt.Sprintf("no controller pods (selector %s in namespace %s)", t.podSelector(), t.Namespace))
		return st
	}
	seen := map[string]bool{}
	for _, p := range pods {
		if podReady(&p) {
			st.Ready++
		} else {
			// Why, in the same message: the check's summary (Problems, a rollback's reason) shows
			// each part's first message only.
			st.Messages = append(st.Messages, fmt.Sprintf("pod %s is not Running and Ready (phase %s): %s",
				p.Name, p.Status.Phase, whyNotReady(ctx, cl, &p)))
		}
		crash := false
		for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				crash = true // said by whyNotReady: a container in back-off is never ready
			}
			key := cluster + "/" + string(p.UID) + "/" + cs.Name
			seen[key] = true
			n := c.recentRestarts(key, p.CreationTimestamp.Time, int(cs.RestartCount), now)
			st.MaxRecentRestarts = max(st.MaxRecentRestarts, n)
			if n >= c.cfg.MaxRestarts {
				st.Messages = append(st.Messages, fmt.Sprintf("pod %s: container %s restarted %d times within %s",
					p.Name, cs.Name, n, c.cfg.RestartWindow))
			}
		}
		if crash {
			st.CrashLooping++
		}
	}
	c.forgetRestarts(cluster, seen, now)

	switch {
	case st.Ready == 0 || st.CrashLooping > 0 || st.MaxRecentRestarts >= c.cfg.MaxRestarts:
		st.Health = api.Unhealthy
	case st.Ready < st.Total:
		st.Health = api.Degraded
	}

	usage, why := podMetrics(ctx, cl, t)
	if usage == nil {
		st.Messages = append(st.Messages, notChecked("resource usage: "+why))
		return st
	}
	st.Resources = api.VerdictPassed
	for _, over := range overLimits(pods, usage) {
		st.OverLimit++
		st.Messages = append(st.Messages, over)
	}
	if st.OverLimit > 0 {
		st.Resources = api.VerdictFailed
		st.Health = worst(st.Health, api.Degraded)
	}
	return st
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// restartHistory is what the checker saw of one container's restart count.
type restartHistory struct {
	samples  []restartSample // oldest first
	lastSeen time.Time
}

type restartSample struct {
	at    time.Time
	count int
}

// recentRestarts records count for the container key and returns how many restarts it made
// within the window ending now: count minus the count seen last at or before the window's
// start, or, when the checker has no sample that old, minus its oldest sample. A pod created
// within the window starts from 0 at its creation; the restarts of an older pod seen for the
// first time are not attributed to the window (CrashLoopBackOff still catches a crashing one).
func (c *Checker) recentRestarts(key string, created time.Time, count int, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.restarts[key]
	if h == nil {
		h = &restartHistory{}
		if !created.IsZero() && now.Sub(created) <= c.cfg.RestartWindow {
			h.samples = append(h.samples, restartSample{at: created, count: 0})
		}
		c.restarts[key] = h
	}
	h.samples = append(h.samples, restartSample{at: now, count: count})
	h.lastSeen = now
	start := now.Add(-c.cfg.RestartWindow)
	base := 0 // index of the baseline sample
	for i, s := range h.samples {
		if !s.at.After(start) {
			base = i
		}
	}
	h.samples = h.samples[base:] // older samples are no longer needed
	return max(0, count-h.samples[0].count)
}

// forgetRestarts drops the histories of cluster's containers not seen now for two windows.
func (c *Checker) forgetRestarts(cluster string, seen map[string]bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prefix := cluster + "/"
	for k, h := range c.restarts {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix && !seen[k] && now.Sub(h.lastSeen) > 2*c.cfg.RestartWindow {
			delete(c.restarts, k)
		}
	}
}

// podMetricsList is the part of metrics.k8s.io/v1beta1 PodMetricsList the check reads.
type podMetricsList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Containers []struct {
			Name  string              `json:"name"`
			Usage corev1.ResourceList `json:"usage"`
		} `json:"containers"`
	} `json:"items"`
}

// podMetrics reads the release's pod metrics; nil and why when metrics.k8s.io is not served or
// does not answer.
func podMetrics(ctx context.Context, cl *clients, t Target) (*podMetricsList, string) {
	if _, err := cl.kube.Discovery().ServerResourcesForGroupVersion(metricsGroupVersion); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "metrics unavailable (metrics.k8s.io is not served)"
		}
		return nil, "metrics unavailable: " + err.Error()
	}
	raw, err := cl.kube.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", t.Namespace, "pods").
		Param("labelSelector", t.podSelector()).DoRaw(ctx)
	if err != nil {
		return nil, "metrics unavailable: " + err.Error()
	}
	var l podMetricsList
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, "metrics unavailable: unreadable answer: " + err.Error()
	}
	return &l, ""
}

// overLimits names each container whose usage exceeds a limit of its spec.
func overLimits(pods []corev1.Pod, m *podMetricsList) []string {
	limits := map[string]corev1.ResourceList{}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			limits[p.Name+"/"+c.Name] = c.Resources.Limits
		}
	}
	var out []string
	for _, it := range m.Items {
		for _, c := range it.Containers {
			lim, ok := limits[it.Metadata.Name+"/"+c.Name]
			if !ok {
				continue
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				l, hasLimit := lim[r]
				u, hasUsage := c.Usage[r]
				if hasLimit && hasUsage && !l.IsZero() && u.Cmp(l) > 0 {
					out = append(out, fmt.Sprintf("pod %s: container %s uses %s %s over its limit %s",
						it.Metadata.Name, c.Name, quantity(u), r, quantity(l)))
				}
			}
		}
	}
	return out
}

func quantity(q resource.Quantity) string { return q.String() }
