package cachelag

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
