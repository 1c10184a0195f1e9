package cachelag

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestWrites_Behind(t *testing.T) {
	obj := func(rv string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: rv}}
	}
	var w Writes
	if w.Behind("Deployment", obj("5")) {
		t.Error("behind with no write recorded")
	}
	w.Record("Deployment", obj("100"))
	for rv, want := range map[string]bool{"99": true, "9": true, "100": false, "101": false, "": false, "x": false} {
		if got := w.Behind("Deployment", obj(rv)); got != want {
			t.Errorf("behind(rv %q) = %v, want %v", rv, got, want)
		}
	}
	if w.Behind("Service", obj("99")) {
		t.Error("a write to the Deployment made the Service behind")
	}
	w.Forget(types.NamespacedName{Namespace: "ns", Name: "web"})
	if w.Behind("Deployment", obj("99")) {
		t.Error("behind after forget")
	}
}

// apiServer answers Get with its Deployment and counts the reads.
type apiServer struct {
	client.Reader
	live  *appsv1.Deployment
	reads int
}

func (a *apiServer) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	a.reads++
	a.live.DeepCopyInto(obj.(*appsv1.Deployment))
	return nil
}

func TestWrites_RefreshReadsOnlyWhenTheCacheIsBehind(t *testing.T) {
	api := &apiServer{live: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "100"}}}
	var w Writes
	w.Record("Deployment", api.live)

	current := api.live.DeepCopy()
	if err := w.Refresh(context.Background(), "Deployment", api, current); err != nil || api.reads != 0 {
		t.Errorf("a current copy: err %v, %d reads, want none", err, api.reads)
	}
	stale := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "99"}}
	if err := w.Refresh(context.Background(), "Deployment", api, stale); err != nil || api.reads != 1 || stale.ResourceVersion != "100" {
		t.Errorf("a stale copy: err %v, %d reads, resourceVersion %s; want it read again", err, api.reads, stale.ResourceVersion)
	}
}
