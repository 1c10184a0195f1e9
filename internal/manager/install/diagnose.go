package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// NotReadyError is an install, upgrade or rollback whose workloads did not become ready within
// its timeout. Its message names each resource and why, fit for a deployment's status.
type NotReadyError struct {
	Release   string
	Namespace string
	Revision  int
	Timeout   time.Duration
	Resources []NotReady
	// Err is Helm's error, for logs.
	Err error
}

// NotReady is one workload that is not ready and why.
type NotReady struct {
	Kind, Namespace, Name string
	// Reason is short and machine-readable: the first pod problem found (Unschedulable,
	// CrashLoopBackOff, ImagePullBackOff, ErrImagePull, Error, NotReady, ...), else
	// the workload's ("ProgressDeadlineExceeded", "ReplicasUnavailable").
	Reason  string
	Message string
}

func (e *NotReadyError) Error() string {
	parts := make([]string, len(e.Resources))
	for i, r := range e.Resources {
		parts[i] = fmt.Sprintf("%s %s/%s: %s", r.Kind, r.Namespace, r.Name, r.Message)
	}
	return fmt.Sprintf("release %s (namespace %s, revision %d) not ready (timeout %s): %s",
		e.Release, e.Namespace, e.Revision, e.Timeout.Round(time.Millisecond), strings.Join(parts, "; "))
}

func (e *NotReadyError) Unwrap() error { return e.Err }

// maxPodsReported bounds the pods described per workload.
const maxPodsReported = 3

// diagnose returns the workloads of manifest (a release's, hooks included) that are not ready:
// Deployments, StatefulSets and DaemonSets not available, Jobs not complete, with their pods'
// problems. Objects without a namespace are in namespace.
func diagnose(ctx context.Context, s *session, namespace, manifest string) ([]NotReady, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(manifest)), 4096)
	var out []NotReady
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return out, err
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = namespace
		}
		apps := s.clientset.AppsV1()
		var (
			nr       *NotReady
			selector *metav1.LabelSelector
			err      error
		)
		switch u.GroupVersionKind().GroupKind().String() {
		case "Deployment.apps":
			var d *appsv1.Deployment
			if d, err = apps.Deployments(ns).Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				nr, selector = deploymentReady(d), d.Spec.Selector
			}
		case "StatefulSet.apps":
			var st *appsv1.StatefulSet
			if st, err = apps.StatefulSets(ns).Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				nr, selector = replicasReady(st.Status.ReadyReplicas, ptrOr(st.Spec.Replicas, 1), st.Status.UpdatedReplicas), st.Spec.Selector
			}
		case "DaemonSet.apps":
			var ds *appsv1.DaemonSet
			if ds, err = apps.DaemonSets(ns).Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				nr, selector = replicasReady(ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, ds.Status.UpdatedNumberScheduled), ds.Spec.Selector
			}
		case "Job.batch":
			var j *batchv1.Job
			if j, err = s.clientset.BatchV1().Jobs(ns).Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				nr, selector = jobDone(j), j.Spec.Selector
			}
		default:
			continue
		}
		if err != nil {
			out = append(out, NotReady{Kind: u.GetKind(), Namespace: ns, Name: u.GetName(), Reason: "Missing", Message: err.Error()})
			continue
		}
		if nr == nil {
			continue
		}
		nr.Kind, nr.Namespace, nr.Name = u.GetKind(), ns, u.GetName()
		if reason, msg := podProblems(ctx, s, ns, selector); msg != "" {
			nr.Reason = reason
			nr.Message += "; " + msg
		}
		out = append(out, *nr)
	}
	return out, nil
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// deploymentReady is nil for an available, fully rolled out Deployment.
func deploymentReady(d *appsv1.Deployment) *NotReady {
	want := ptrOr(d.Spec.Replicas, 1)
	st := d.Status
	if st.ObservedGeneration >= d.Generation && st.UpdatedReplicas >= want && st.AvailableReplicas >= want && st.Replicas == st.UpdatedReplicas {
		return nil
	}
	nr := &NotReady{Reason: "ReplicasUnavailable",
		Message: fmt.Sprintf("%d/%d replicas available, %d updated", st.AvailableReplicas, want, st.UpdatedReplicas)}
	for _, c := range st.Conditions {
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded",
			c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			nr.Reason = c.Reason
			nr.Message += " (" + c.Message + ")"
		}
	}
	return nr
}

// jobDone is nil for a complete Job (a hook the release waited for).
func jobDone(j *batchv1.Job) *NotReady {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return nil
		case batchv1.JobFailed:
			return &NotReady{Reason: nonEmpty(c.Reason, "Failed"), Message: join("failed", c.Reason, c.Message)}
		}
	}
	return &NotReady{Reason: "NotComplete", Message: fmt.Sprintf("not complete: %d active, %d failed", j.Status.Active, j.Status.Failed)}
}

func replicasReady(ready, want, updated int32) *NotReady {
	if ready >= want && updated >= want {
		return nil
	}
	return &NotReady{Reason: "ReplicasUnavailable", Message: fmt.Sprintf("%d/%d replicas ready, %d updated", ready, want, updated)}
}

// podProblems describes the first pods of selector that are not ready: the first reason found
// and a message naming each pod.
func podProblems(ctx context.Context, s *session, namespace string, selector *metav1.LabelSelector) (string, string) {
	if selector == nil {
		return "", ""
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return "", ""
	}
	pods, err := s.clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", "listing pods: " + err.Error()
	}
	if len(pods.Items) == 0 {
		return "NoPods", "no pods"
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	var first string
	var msgs []string
	for i := range pods.Items {
		reason, msg := podProblem(&pods.Items[i])
		if reason == "" {
			continue
		}
		if first == "" {
			first = reason
		}
		if len(msgs) < maxPodsReported {
			msgs = append(msgs, fmt.Sprintf("pod %s: %s", pods.Items[i].Name, msg))
		}
	}
	return first, strings.Join(msgs, "; ")
}

// podProblem is why pod is not ready ("" when it is): the scheduler's verdict, a container
// waiting (CrashLoopBackOff, ImagePullBackOff) or terminated, or a failed pod.
func podProblem(pod *corev1.Pod) (reason, message string) {
	if pod.DeletionTimestamp != nil {
		return "", ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return nonEmpty(c.Reason, "Unschedulable"), join(nonEmpty(c.Reason, "Unschedulable"), c.Message)
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing" && cs.State.Waiting.Reason != "ContainerCreating":
			return cs.State.Waiting.Reason, join(fmt.Sprintf("container %s %s", cs.Name, cs.State.Waiting.Reason),
				restarts(cs), cs.State.Waiting.Message, lastTermination(cs))
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			t := cs.State.Terminated
			return nonEmpty(t.Reason, "Error"), join(fmt.Sprintf("container %s terminated (%s, exit code %d)", cs.Name, nonEmpty(t.Reason, "Error"), t.ExitCode),
				restarts(cs), lastLine(t.Message))
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		return nonEmpty(pod.Status.Reason, "Failed"), join("pod failed", pod.Status.Reason, pod.Status.Message)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
			return "NotReady", join("not ready", c.Reason, c.Message)
		}
	}
	if pod.Status.Phase == corev1.PodPending {
		return "Pending", "pending"
	}
	return "", ""
}

func restarts(cs corev1.ContainerStatus) string {
	if cs.RestartCount == 0 {
		return ""
	}
	return fmt.Sprintf("%d restarts", cs.RestartCount)
}

func lastTermination(cs corev1.ContainerStatus) string {
	t := cs.LastTerminationState.Terminated
	if t == nil {
		return ""
	}
	return join(fmt.Sprintf("last exit code %d", t.ExitCode), t.Reason, lastLine(t.Message))
}

// lastLine is a termination message's last non-empty line, at most 200 bytes: with
// terminationMessagePolicy FallbackToLogsOnError the kubelet puts up to 80 lines of the log
// there, and the last one is where a program says why it stopped.
func lastLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	return l
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// join joins the non-empty parts with ": ".
func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}
