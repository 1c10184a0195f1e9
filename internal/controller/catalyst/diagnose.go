package catalyst

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Why a workload's pods are not coming: the cluster says it in the workload's conditions (a
// Deployment carries its ReplicaSet's FailedCreate as a ReplicaFailure condition: the quota, Pod
// Security or another admission refused the pod) and in the pods' statuses (images that cannot be
// pulled, containers that crash, pods nobody can schedule). diagnose collects it for the
// DeploymentReady message.

// maxPodsDiagnosed bounds the pods read for one workload.
const maxPodsDiagnosed = 20

// waitingProblems are the container waiting reasons that mean the container will not start by
// itself; ContainerCreating and PodInitializing are progress.
var waitingProblems = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true,
	"RunContainerError": true, "PreStartHookError": true, "PostStartHookError": true,
}

// workloadProblem is what a workload's own conditions say against its pods being created, ""
// when nothing: a ReplicaFailure condition (Deployments and ReplicaSets) or a FailedCreate one.
func workloadProblem(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := m["type"].(string)
		st, _ := m["status"].(string)
		if st != string(corev1.ConditionTrue) || (typ != "ReplicaFailure" && typ != "FailedCreate") {
			continue
		}
		reason, _ := m["reason"].(string)
		msg, _ := m["message"].(string)
		if reason == "" {
			reason = typ
		}
		return fmt.Sprintf("pods cannot be created (%s): %s", reason, strings.TrimSpace(msg))
	}
	return ""
}

// podProblems is what the pods' statuses say against them becoming ready, "" when nothing: per
// distinct problem the first pod and container it was seen on, how many pods share it.
func podProblems(pods []corev1.Pod) string {
	type problem struct {
		text  string
		count int
	}
	var order []string
	seen := map[string]*problem{}
	add := func(key, text string) {
		if p, ok := seen[key]; ok {
			p.count++
			return
		}
		seen[key] = &problem{text: text, count: 1}
		order = append(order, key)
	}
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				add("unschedulable", fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, strings.TrimSpace(c.Message)))
			}
		}
		statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, cs := range statuses {
			w := cs.State.Waiting
			if w == nil || !waitingProblems[w.Reason] {
				continue
			}
			text := fmt.Sprintf("pod %s container %s: %s", p.Name, cs.Name, w.Reason)
			if msg := strings.TrimSpace(w.Message); msg != "" {
				text += ": " + msg
			}
			if t := cs.LastTerminationState.Terminated; t != nil && w.Reason == "CrashLoopBackOff" {
				text += fmt.Sprintf(" (restarted %d times, last exit code %d", cs.RestartCount, t.ExitCode)
				if t.Reason != "" {
					text += ", " + t.Reason
				}
				text += ")"
			}
			add(w.Reason+"/"+cs.Name, text)
		}
	}
	if len(order) == 0 {
		return ""
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		p := seen[k]
		if p.count > 1 {
			parts = append(parts, fmt.Sprintf("%s (and %d more pods)", p.text, p.count-1))
		} else {
			parts = append(parts, p.text)
		}
	}
	return strings.Join(parts, "; ")
}

// failedCreateEvent is the newest FailedCreate warning about a workload, "" without one:
// StatefulSets and DaemonSets create their pods themselves and say why they could not only in
// events.
func failedCreateEvent(events []corev1.Event) string {
	var newest *corev1.Event
	for i := range events {
		e := &events[i]
		if e.Type != corev1.EventTypeWarning || e.Reason != "FailedCreate" {
			continue
		}
		if newest == nil || eventTime(e).After(eventTime(newest)) {
			newest = e
		}
	}
	if newest == nil {
		return ""
	}
	return fmt.Sprintf("pods cannot be created (FailedCreate): %s", strings.TrimSpace(newest.Message))
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// diagnose says why the workload's pods are not coming, "" when the cluster does not say. Pods
// and events are read from the API server (they are not cached) through deployer, the
// environment's own ServiceAccount, which may read them in its namespace (the operator holds no
// pods or events rule there), only for workloads not yet available. A ClusterRole a Project
// names that does not let its deployer list them leaves that part unsaid.
func (r *EnvironmentReconciler) diagnose(ctx context.Context, deployer client.Reader, u *unstructured.Unstructured) (string, error) {
	var parts []string
	if p := workloadProblem(u); p != "" {
		parts = append(parts, p)
	} else if u.GetKind() == "StatefulSet" || u.GetKind() == "DaemonSet" {
		var events corev1.EventList
		if err := deployer.List(ctx, &events, client.InNamespace(u.GetNamespace()), client.MatchingFields{
			"involvedObject.kind": u.GetKind(), "involvedObject.name": u.GetName(), "reason": "FailedCreate",
		}); err != nil && !apierrors.IsForbidden(err) {
			return "", fmt.Errorf("listing the events of %s/%s: %w", u.GetKind(), u.GetName(), err)
		}
		if p := failedCreateEvent(events.Items); p != "" {
			parts = append(parts, p)
		}
	}
	sel, found, err := unstructured.NestedMap(u.Object, "spec", "selector")
	if err != nil || !found {
		return strings.Join(parts, "; "), nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sel, &ls); err != nil {
		return strings.Join(parts, "; "), nil
	}
	selector, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || selector.Empty() {
		return strings.Join(parts, "; "), nil
	}
	var pods corev1.PodList
	err = deployer.List(ctx, &pods, client.InNamespace(u.GetNamespace()),
		client.MatchingLabelsSelector{Selector: selector}, client.Limit(maxPodsDiagnosed))
	switch {
	case apierrors.IsForbidden(err):
		return strings.Join(parts, "; "), nil
	case err != nil:
		return "", fmt.Errorf("listing the pods of %s/%s: %w", u.GetKind(), u.GetName(), err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	if p := podProblems(pods.Items); p != "" {
		parts = append(parts, p)
	}
	return strings.Join(parts, "; "), nil
}
