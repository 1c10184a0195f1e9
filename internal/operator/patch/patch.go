// Package patch writes an object back only when the reconcile changed it: metadata and spec with
// one merge patch, status with one merge patch on the status subresource. A reconcile that changed
// nothing sends nothing to the API server.
package patch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helper remembers an object as it was read.
type Helper struct {
	c      client.Client
	before client.Object
}

// NewHelper snapshots obj; call Patch with the same object after changing it.
func NewHelper(obj client.Object, c client.Client) *Helper {
	return &Helper{c: c, before: obj.DeepCopyObject().(client.Object)}
}

// Patch sends the changes made to obj since NewHelper: the object (metadata, spec) first, then the
// status subresource. Each is skipped when unchanged.
func (h *Helper) Patch(ctx context.Context, obj client.Object) error {
	before, err := toMap(h.before)
	if err != nil {
		return err
	}
	after, err := toMap(obj)
	if err != nil {
		return err
	}
	statusChanged := !equality.Semantic.DeepEqual(before["status"], after["status"])
	delete(before, "status")
	delete(after, "status")
	if !equality.Semantic.DeepEqual(before, after) {
		// Patch returns the server's copy into obj; keep the status we computed.
		status := obj.DeepCopyObject().(client.Object)
		if err := h.c.Patch(ctx, obj, client.MergeFrom(h.before)); err != nil {
			return fmt.Errorf("patching %s: %w", obj.GetName(), err)
		}
		if statusChanged {
			if err := restoreStatus(obj, status); err != nil {
				return err
			}
		}
	}
	if statusChanged {
		if err := h.c.Status().Patch(ctx, obj, client.MergeFrom(h.before)); err != nil {
			return fmt.Errorf("patching status of %s: %w", obj.GetName(), err)
		}
	}
	h.before = obj.DeepCopyObject().(client.Object)
	return nil
}

func toMap(obj client.Object) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// restoreStatus copies the status field of from into to (both the same Go type).
func restoreStatus(to, from client.Object) error {
	src, err := toMap(from)
	if err != nil {
		return err
	}
	dst, err := toMap(to)
	if err != nil {
		return err
	}
	dst["status"] = src["status"]
	return runtime.DefaultUnstructuredConverter.FromUnstructured(dst, to)
}
