package catalyst

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// inventoryEntry is one deployed object, as recorded on the environment namespace.
type inventoryEntry struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (e inventoryEntry) String() string { return e.Kind + "/" + e.Name }

// maxInventory bounds what is recorded and checked: the annotation stays far below the
// API's 256 KiB limit on annotations.
const maxInventory = 1000

func encodeInventory(entries []inventoryEntry) (string, error) {
	if len(entries) > maxInventory {
		entries = entries[:maxInventory]
	}
	b, err := json.Marshal(entries)
	return string(b), err
}

func decodeInventory(v string) ([]inventoryEntry, error) {
	if v == "" {
		return nil, nil
	}
	var entries []inventoryEntry
	if err := json.Unmarshal([]byte(v), &entries); err != nil {
		return nil, fmt.Errorf("the %s annotation is not valid: %w", AnnotationInventory, err)
	}
	return entries, nil
}

// alwaysCurrent are kinds kstatus reports Current as soon as they exist: they are not read back.
var alwaysCurrent = map[string]bool{
	"ConfigMap": true, "Secret": true, "ServiceAccount": true, "Role": true, "RoleBinding": true,
	"NetworkPolicy": true, "Ingress": true, "ResourceQuota": true, "LimitRange": true,
	"HorizontalPodAutoscaler": true,
}

// readiness reads the deployed objects and asks kstatus whether they are Current. Deployments
// come from the cache (they are watched) unless fresh; other kinds from the API server. missing
// reports an object that no longer exists, which calls for a redeploy.
func (r *EnvironmentReconciler) readiness(ctx context.Context, inventory []inventoryEntry, fresh bool) (out *outcome, missing bool, err error) {
	sorted := append([]inventoryEntry(nil), inventory...)
	// Workloads first, so the message names what is slow to become available.
	sort.SliceStable(sorted, func(i, j int) bool { return workloadRank(sorted[i].Kind) < workloadRank(sorted[j].Kind) })
	checked := 0
	var deployer client.Reader // the deployer's view of the namespace, made on first use
	for _, e := range sorted {
		if alwaysCurrent[e.Kind] {
			continue
		}
		u, err := r.readDeployed(ctx, e, fresh, &deployer)
		if apierrors.IsNotFound(err) {
			return &outcome{reason: catalystv1alpha1.DeployingReason, message: fmt.Sprintf("%s was deleted; deploying again", e)}, true, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading %s: %w", e, err)
		}
		res, err := status.Compute(u)
		if err != nil {
			return nil, false, fmt.Errorf("computing the status of %s: %w", e, err)
		}
		checked++
		if res.Status == status.CurrentStatus {
			continue
		}
		why := ""
		if workloadRank(e.Kind) == 0 {
			as, err := r.asDeployer(e.Namespace, &deployer)
			if err != nil {
				return nil, false, err
			}
			if why, err = r.diagnose(ctx, as, u); err != nil {
				return nil, false, err
			}
		}
		return notCurrent(e, res, why), false, nil
	}
	return &outcome{ok: true, reason: catalystv1alpha1.SucceededReason,
		message: fmt.Sprintf("%d deployed objects, %d of them checked, are Current", len(inventory), checked)}, false, nil
}

// notCurrent is the outcome of an object kstatus does not call Current, with why its pods are not
// coming when known: Failed (a Deployment past its progress deadline) stops the environment,
// anything else is still deploying.
func notCurrent(e inventoryEntry, res *status.Result, why string) *outcome {
	msg := strings.TrimSpace(res.Message)
	if msg == "" {
		msg = string(res.Status)
	}
	if why != "" {
		msg += "; " + why
	}
	if res.Status == status.FailedStatus {
		return &outcome{reason: catalystv1alpha1.DeploymentFailedReason,
			message: fmt.Sprintf("%s failed: %s; fix the application (or the Project's quota and container defaults) and push a new commit", e, msg)}
	}
	return &outcome{reason: catalystv1alpha1.DeployingReason, message: fmt.Sprintf("Waiting for %s: %s", e, msg)}
}

func workloadRank(kind string) int {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		return 0
	case "Job", "Pod", "ReplicaSet":
		return 1
	}
	return 2
}

// readDeployed reads one deployed object as unstructured; objects other than Deployments through
// *deployer, which it makes when nil.
func (r *EnvironmentReconciler) readDeployed(ctx context.Context, e inventoryEntry, fresh bool, deployer *client.Reader) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(e.APIVersion)
	if err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: e.Namespace, Name: e.Name}
	if gv.Group == appsv1.GroupName && e.Kind == "Deployment" && !fresh {
		d := &appsv1.Deployment{}
		err := r.Get(ctx, key, d)
		if err == nil {
			d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
			if err != nil {
				return nil, err
			}
			return &unstructured.Unstructured{Object: m}, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		// The cache may not have seen it yet: ask the API server.
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gv.WithKind(e.Kind))
	if gv.Group == appsv1.GroupName && e.Kind == "Deployment" {
		return u, r.APIReader.Get(ctx, key, u)
	}
	// Other kinds are read as the environment's deployer, which applied them: the operator
	// itself may not read what a deployment may hold.
	as, err := r.asDeployer(e.Namespace, deployer)
	if err != nil {
		return nil, err
	}
	return u, as.Get(ctx, key, u)
}

// asDeployer returns the environment deployer's view of namespace ns, *deployer, made on first
// use.
func (r *EnvironmentReconciler) asDeployer(ns string, deployer *client.Reader) (client.Reader, error) {
	if *deployer == nil {
		d, err := r.Deployer.Reader(ns, r.deployer(ns))
		if err != nil {
			return nil, err
		}
		*deployer = d
	}
	return *deployer, nil
}

// kstatusOf is kstatus's verdict on a typed object, "" when it cannot tell.
func kstatusOf(o client.Object) status.Status {
	d, ok := o.(*appsv1.Deployment)
	if !ok {
		return ""
	}
	d = d.DeepCopy()
	d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return ""
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	if err != nil {
		return ""
	}
	return res.Status
}
