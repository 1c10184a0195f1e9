package deploy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// Inventory ConfigMap of a manifest or kustomize release.
const (
	// InventoryPrefix + release is the name of the inventory ConfigMap.
	InventoryPrefix = "catalyst-inventory-"
	// InventoryKeyObjects holds the applied objects, a JSON list of ObjectRef (without namespace).
	InventoryKeyObjects = "objects"
	// InventoryKeyRevision counts the deploys, from 1.
	InventoryKeyRevision = "revision"
	// InventoryKeyType is manifest or kustomize.
	InventoryKeyType = "type"
	// InventoryLabel marks inventory ConfigMaps, with the release as value.
	InventoryLabel = "catalyst.dev/inventory"
)

// InventoryName is the name of the inventory ConfigMap of release.
func InventoryName(release string) string { return InventoryPrefix + release }

// inventory is what a release applied last.
type inventory struct {
	exists   bool
	revision int64
	objects  []ObjectRef
}

// objectKey identifies an object across API versions: group, kind and name.
func objectKey(r ObjectRef) string {
	return r.GroupVersionKind().GroupKind().String() + "/" + r.Name
}

// deployObjects renders a manifest directory or a kustomization and applies it.
func (e *Engine) deployObjects(ctx context.Context, req Request, root *os.Root) (Result, error) {
	dir, _ := cleanRepoPath(req.Path)
	b := newBudget(e.opts.MaxSourceBytes)
	var ms []manifest
	var err error
	if req.Type == catalystv1alpha1.DeploymentTypeKustomize {
		ms, err = e.renderKustomization(ctx, root, dir, b)
	} else {
		ms, err = renderManifests(root, dir, b)
	}
	if err != nil {
		return Result{}, err
	}
	opts := prepareOptions{inject: true, release: req.Release, reserved: InventoryName(req.Release)}
	envContainers, err := prepare(ms, req, e.namespaced, opts)
	if err != nil {
		return Result{}, err
	}
	inv, err := e.readInventory(ctx, req.Namespace, req.Release)
	if err != nil {
		return Result{}, err
	}
	if !inv.exists {
		// A release that was of type helm before: remove it first (its objects may share
		// names). Once the inventory exists, the Helm release is gone.
		present, err := e.helmReleasePresent(ctx, req.Namespace, req.Release)
		if err != nil {
			return Result{}, err
		}
		if present {
			if err := e.uninstallHelm(ctx, req.Namespace, req.Release); err != nil {
				return Result{}, err
			}
		}
	}
	// After the type change above (its objects, which may share names, are gone) and before the
	// first write of this deploy.
	if err := e.admit(ctx, req.Namespace, e.opts.FieldOwner, ms, false); err != nil {
		return Result{}, err
	}
	res, err := e.applyAndPrune(ctx, req, ms, inv)
	res.EnvContainers = envContainers
	return res, err
}

// applyAndPrune applies ms with server-side apply and deletes what the previous revision had and
// this one has not. The inventory lists the union while the apply runs, so an interrupted deploy
// leaks nothing: the next one prunes what it no longer wants.
func (e *Engine) applyAndPrune(ctx context.Context, req Request, ms []manifest, inv inventory) (Result, error) {
	slices.SortStableFunc(ms, func(a, b manifest) int {
		return cmp.Compare(applyOrder(a.obj.GroupVersionKind().GroupKind()), applyOrder(b.obj.GroupVersionKind().GroupKind()))
	})
	refs := make([]ObjectRef, len(ms))
	for i, m := range ms {
		refs[i] = m.ref()
	}
	old := make(map[string]ObjectRef, len(inv.objects))
	for _, r := range inv.objects {
		old[objectKey(r)] = r
	}
	var added bool
	for _, r := range refs {
		if _, ok := old[objectKey(r)]; !ok {
			added = true
		}
		delete(old, objectKey(r))
	}
	if added || !inv.exists {
		union := append(slices.Collect(maps.Values(old)), refs...)
		if err := e.writeInventory(ctx, req, union, inv.revision); err != nil {
			return Result{}, err
		}
	}
	for _, m := range ms {
		err := e.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(m.obj),
			client.FieldOwner(e.opts.FieldOwner), client.ForceOwnership)
		if err != nil {
			if r := refusedWhileApplying(m, err); r != nil {
				return Result{}, r
			}
			return Result{}, applyError("applying", m.ref(), err)
		}
	}
	gone := slices.SortedFunc(maps.Values(old), func(a, b ObjectRef) int {
		return -cmp.Compare(applyOrder(a.GroupVersionKind().GroupKind()), applyOrder(b.GroupVersionKind().GroupKind()))
	})
	for _, r := range gone {
		if err := e.deleteOwned(ctx, req.Namespace, req.Release, r); err != nil {
			return Result{}, err
		}
	}
	revision := inv.revision + 1
	if err := e.writeInventory(ctx, req, refs, revision); err != nil {
		return Result{}, err
	}
	return Result{Revision: strconv.FormatInt(revision, 10), Objects: refs}, nil
}

func (e *Engine) readInventory(ctx context.Context, namespace, release string) (inventory, error) {
	var cm corev1.ConfigMap
	err := e.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: InventoryName(release)}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return inventory{}, nil
	case err != nil:
		return inventory{}, fmt.Errorf("reading the inventory ConfigMap/%s: %w", InventoryName(release), err)
	}
	inv := inventory{exists: true}
	if s := cm.Data[InventoryKeyRevision]; s != "" {
		if inv.revision, err = strconv.ParseInt(s, 10, 64); err != nil {
			return inventory{}, fmt.Errorf("inventory ConfigMap/%s: revision %q: %w", cm.Name, s, err)
		}
	}
	if s := cm.Data[InventoryKeyObjects]; s != "" {
		if err := json.Unmarshal([]byte(s), &inv.objects); err != nil {
			return inventory{}, fmt.Errorf("inventory ConfigMap/%s: objects: %w", cm.Name, err)
		}
	}
	return inv, nil
}

func (e *Engine) writeInventory(ctx context.Context, req Request, refs []ObjectRef, revision int64) error {
	stored := make([]ObjectRef, len(refs))
	for i, r := range refs {
		r.Namespace = ""
		stored[i] = r
	}
	data, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	labels := maps.Clone(req.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[InventoryLabel] = req.Release
	cm := corev1ac.ConfigMap(InventoryName(req.Release), req.Namespace).
		WithLabels(labels).
		WithData(map[string]string{
			InventoryKeyObjects:  string(data),
			InventoryKeyRevision: strconv.FormatInt(revision, 10),
			InventoryKeyType:     string(req.Type),
		})
	if err := e.client.Apply(ctx, cm, client.FieldOwner(e.opts.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing the inventory ConfigMap/%s: %w", InventoryName(req.Release), err)
	}
	return nil
}

// deleteOwned deletes the object r when it still carries the release's annotation (it was not
// taken over by something else since), at the API version the cluster prefers for its kind.
func (e *Engine) deleteOwned(ctx context.Context, namespace, release string, r ObjectRef) error {
	gk := r.GroupVersionKind().GroupKind()
	mapping, err := e.mapper.RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		return nil // the kind is gone from the cluster, and its objects with it
	}
	if err != nil {
		return fmt.Errorf("pruning %s: %w", r, err)
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	err = e.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: r.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("pruning %s: %w", r, err)
	case obj.GetAnnotations()[ReleaseAnnotation] != release, obj.GetDeletionTimestamp() != nil:
		return nil
	}
	err = e.client.Delete(ctx, obj, client.Preconditions{UID: new(obj.GetUID())},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return applyError("deleting", r, err)
	}
	return nil
}

// uninstallInventory deletes the objects listed in the release's inventory, then the inventory.
func (e *Engine) uninstallInventory(ctx context.Context, namespace, release string) error {
	inv, err := e.readInventory(ctx, namespace, release)
	if err != nil || !inv.exists {
		return err
	}
	slices.SortStableFunc(inv.objects, func(a, b ObjectRef) int {
		return -cmp.Compare(applyOrder(a.GroupVersionKind().GroupKind()), applyOrder(b.GroupVersionKind().GroupKind()))
	})
	var errs []error
	for _, r := range inv.objects {
		errs = append(errs, e.deleteOwned(ctx, namespace, release, r))
	}
	if err := errors.Join(errs...); err != nil {
		return err // keep the inventory for the next attempt
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: InventoryName(release)}}
	if err := e.client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the inventory ConfigMap/%s: %w", cm.Name, err)
	}
	return nil
}

// errNotServed: the cluster does not serve a kind (its CRD is not installed).
var errNotServed = errors.New("kind not served")

// namespaced asks the REST mapper about a kind's scope; errNotServed for a kind the cluster
// does not serve.
func (e *Engine) namespaced(gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, fmt.Errorf("%w: %s", errNotServed, gvk)
	}
	if err != nil {
		return false, fmt.Errorf("looking up kind %s: %w", gvk, err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// applyOrder puts the objects others depend on first, like Helm and kustomize do.
func applyOrder(gk schema.GroupKind) int {
	order := []schema.GroupKind{
		{Kind: "LimitRange"}, {Kind: "ResourceQuota"},
		{Group: "networking.k8s.io", Kind: "NetworkPolicy"}, {Group: "policy", Kind: "PodDisruptionBudget"},
		{Kind: "ServiceAccount"}, {Kind: "Secret"}, {Kind: "ConfigMap"},
		{Kind: "PersistentVolumeClaim"},
		{Group: "rbac.authorization.k8s.io", Kind: "Role"}, {Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
		{Kind: "Service"},
		{Kind: "Pod"}, {Kind: "ReplicationController"}, {Group: "apps", Kind: "ReplicaSet"},
		{Group: "apps", Kind: "Deployment"}, {Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
		{Group: "apps", Kind: "StatefulSet"}, {Group: "apps", Kind: "DaemonSet"},
		{Group: "batch", Kind: "Job"}, {Group: "batch", Kind: "CronJob"},
		{Group: "networking.k8s.io", Kind: "Ingress"},
	}
	if i := slices.Index(order, gk); i >= 0 {
		return i
	}
	return len(order)
}
