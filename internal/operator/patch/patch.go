// Package patch writes an object back only when the reconcile changed it: metadata and spec with
// one merge patch, status with one merge patch on the status subresource. A reconcile that changed
// nothing sends nothing to the API server.
package patch

import (
	"context"
	"fmt"
	"reflect"

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
// status subresource. Each is skipped when unchanged, and each carries only its own changed
// fields: no status in the object's patch, no metadata in the status patch (a resourceVersion there
// would make the write conditional on nobody having written since the object's patch, and the
// managed fields the first answer brought would be sent back). obj ends as the server returned it,
// with the status the reconcile computed.
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
	// base is what the status patch is computed from: the object as read, or as the object's
	// patch returned it, with the status as read.
	base := h.before
	if !equality.Semantic.DeepEqual(before, after) {
		if base, err = h.patchObject(ctx, obj); err != nil {
			return err
		}
	}
	if statusChanged {
		if err := h.c.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			return fmt.Errorf("patching status of %s: %w", obj.GetName(), err)
		}
	}
	h.before = obj.DeepCopyObject().(client.Object)
	return nil
}

// patchObject sends obj's metadata and spec changes and leaves obj as the server returned it with
// the status the reconcile computed. It returns the server's copy with the status as read.
func (h *Helper) patchObject(ctx context.Context, obj client.Object) (client.Object, error) {
	sent, err := withStatus(obj, h.before)
	if err != nil {
		return nil, err
	}
	if err := h.c.Patch(ctx, sent, client.MergeFrom(h.before)); err != nil {
		return nil, fmt.Errorf("patching %s: %w", obj.GetName(), err)
	}
	base, err := withStatus(sent, h.before)
	if err != nil {
		return nil, err
	}
	returned, err := withStatus(sent, obj)
	if err != nil {
		return nil, err
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(returned).Elem())
	return base, nil
}

func toMap(obj client.Object) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// withStatus returns a copy of obj with the status field of from (both the same Go type).
func withStatus(obj, from client.Object) (client.Object, error) {
	src, err := toMap(from)
	if err != nil {
		return nil, err
	}
	dst, err := toMap(obj)
	if err != nil {
		return nil, err
	}
	if status, ok := src["status"]; ok {
		dst["status"] = status
	} else {
		delete(dst, "status")
	}
	out := obj.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dst, out); err != nil {
		return nil, err
	}
	return out, nil
}
