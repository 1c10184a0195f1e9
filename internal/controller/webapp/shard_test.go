package webapp

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
)

// TestDesired_ShardLabelOnTheObjectsNotThePods: a WebApp's shard label goes onto its Deployment
// and Service, so the shard caches them, but not onto the pods nor into the spec hash, so a move
// from shard to shard rolls nothing out; an unsharded WebApp's objects carry no such label.
func TestDesired_ShardLabelOnTheObjectsNotThePods(t *testing.T) {
	plain := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", UID: "u1"}, Spec: webappv1.WebAppSpec{Image: "nginx:1.25"}}
	sharded := plain.DeepCopy()
	sharded.Labels = map[string]string{webappv1.ShardLabel: "op-2"}
	for _, tc := range []struct {
		app  *webappv1.WebApp
		want string
	}{{plain, ""}, {sharded, "op-2"}} {
		d, err := desiredDeployment(tc.app, 600)
		if err != nil {
			t.Fatal(err)
		}
		s, err := desiredService(tc.app)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Labels[webappv1.ShardLabel]; got != tc.want {
			t.Errorf("Deployment shard label %q, want %q", got, tc.want)
		}
		if got := s.Labels[webappv1.ShardLabel]; got != tc.want {
			t.Errorf("Service shard label %q, want %q", got, tc.want)
		}
		if _, ok := d.Spec.Template.Labels[webappv1.ShardLabel]; ok {
			t.Errorf("the pod template carries the shard label: a move would roll the pods")
		}
	}
	dp, _ := desiredDeployment(plain, 600)
	ds, _ := desiredDeployment(sharded, 600)
	sp, _ := desiredService(plain)
	ss, _ := desiredService(sharded)
	if dp.Annotations[AnnotationSpecHash] != ds.Annotations[AnnotationSpecHash] || sp.Annotations[AnnotationSpecHash] != ss.Annotations[AnnotationSpecHash] {
		t.Errorf("the shard label changes the spec hash")
	}
}
