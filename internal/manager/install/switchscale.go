package install

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// workloadKinds are the blue workloads a switch scales to 0 and back.
var workloadKinds = []struct {
	kind string
	gvr  schema.GroupVersionResource
}{
	{"Deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
	{"StatefulSet", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}},
}

// objectRef names one workload.
type objectRef struct {
	kind, namespace, name string
	gvr                   schema.GroupVersionResource
}

// blueWorkloads lists the Deployments and StatefulSets of blue's release in blue's namespace.
func blueWorkloads(ctx context.Context, s *session, blue Side) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for _, k := range workloadKinds {
		list, err := s.dynamic.Resource(k.gvr).Namespace(blue.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing the %ss of namespace %s: %w", k.kind, blue.Namespace, err)
		}
		for _, u := range list.Items {
			if owns(blue, &u) {
				u.SetKind(k.kind)
				out = append(out, u)
			}
		}
	}
	return out, nil
}

func gvrOf(kind string) schema.GroupVersionResource {
	for _, k := range workloadKinds {
		if k.kind == kind {
			return k.gvr
		}
	}
	return schema.GroupVersionResource{}
}

// replicas is the workload's spec.replicas (1 when unset, as the API defaults it).
func replicas(u *unstructured.Unstructured) int64 {
	n, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return n
}

// scaleDown are the patches scaling blue's workloads to 0, keeping their replicas in
// ReplicasBeforeSwitchAnnotation (an annotation already there is kept: it holds the original).
func scaleDown(ctx context.Context, s *session, blue Side) ([]change, error) {
	workloads, err := blueWorkloads(ctx, s, blue)
	if err != nil {
		return nil, err
	}
	var out []change
	for _, u := range workloads {
		n := replicas(&u)
		kept, had := u.GetAnnotations()[ReplicasBeforeSwitchAnnotation]
		if had && n == 0 {
			continue
		}
		if !had {
			kept = strconv.FormatInt(n, 10)
		}
		c := change{gvr: gvrOf(u.GetKind()), namespace: u.GetNamespace(), name: u.GetName(), patch: map[string]any{
			"metadata": metaPatch(&u, ReplicasBeforeSwitchAnnotation, kept),
			"spec":     map[string]any{"replicas": 0},
		}}
		if n != 0 {
			c.pods = 1
		}
		out = append(out, c)
	}
	return out, nil
}

// scaleBack scales blue's workloads that a switch scaled to 0 back to their replicas before it,
// removing the annotation, and returns all of blue's workloads (to wait for).
func scaleBack(ctx context.Context, s *session, blue Side, res *SwitchResult) ([]objectRef, error) {
	workloads, err := blueWorkloads(ctx, s, blue)
	if err != nil {
		return nil, err
	}
	p := &switchPlan{}
	refs := make([]objectRef, 0, len(workloads))
	for _, u := range workloads {
		refs = append(refs, objectRef{kind: u.GetKind(), namespace: u.GetNamespace(), name: u.GetName(), gvr: gvrOf(u.GetKind())})
		kept, had := u.GetAnnotations()[ReplicasBeforeSwitchAnnotation]
		if !had {
			continue
		}
		n, err := strconv.ParseInt(kept, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s %s/%s: annotation %s is %q, not a replica count: set its replicas by hand and remove the annotation",
				u.GetKind(), u.GetNamespace(), u.GetName(), ReplicasBeforeSwitchAnnotation, kept)
		}
		c := change{gvr: gvrOf(u.GetKind()), namespace: u.GetNamespace(), name: u.GetName(), patch: map[string]any{
			"metadata": metaPatch(&u, ReplicasBeforeSwitchAnnotation, nil),
			"spec":     map[string]any{"replicas": n},
		}}
		if replicas(&u) != n {
			c.pods = 1
		}
		p.changes = append(p.changes, c)
	}
	return refs, p.apply(ctx, s, res)
}

// waitReady waits until every workload is Current by kstatus (as Install's wait sees it), at most
// until ctx ends; then it is a *NotReadyError naming each workload that is not ready and why.
func waitReady(ctx context.Context, s *session, blue Side, refs []objectRef, timeout time.Duration) error {
	var last []string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = last[:0]
		for _, r := range refs {
			u, err := s.dynamic.Resource(r.gvr).Namespace(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			st, err := status.Compute(u)
			if err != nil {
				return false, fmt.Errorf("reading the status of %s %s/%s: %w", r.kind, r.namespace, r.name, err)
			}
			if st.Status != status.CurrentStatus {
				last = append(last, fmt.Sprintf("%s %s/%s: %s", r.kind, r.namespace, r.name, st.Message))
			}
		}
		return len(last) == 0, nil
	})
	if err == nil || ctx.Err() == nil {
		return err
	}
	nr := &NotReadyError{Release: blue.Release, Namespace: blue.Namespace, Revision: lastRevision(s, blue), Timeout: timeout,
		Err: fmt.Errorf("blue's workloads not ready after switching back: %s: %w", strings.Join(last, "; "), err)}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var manifest strings.Builder
	for _, r := range refs {
		fmt.Fprintf(&manifest, "---\napiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\n", r.gvr.GroupVersion(), r.kind, r.name, r.namespace)
	}
	if nr.Resources, _ = diagnose(dctx, s, blue.Namespace, manifest.String()); len(nr.Resources) == 0 {
		return nr.Err
	}
	return nr
}
