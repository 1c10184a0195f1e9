package testenv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// WorkloadFleet starts a fleet whose servers have a Ready node, which Fleet then shares; after
// StopFleet, a fleet Fleet started is refused to WorkloadFleet with a message that says why.
func TestWorkloadFleet_SharedWithFleetAndRefusedWithoutWorkloads(t *testing.T) {
	t.Cleanup(func() { testenv.StopFleet(0) })
	f := testenv.WorkloadFleet(t, 1)
	cs, err := kubernetes.NewForConfig(f.Servers[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Get(context.Background(), f.Servers[0].NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the node of a workload fleet's server: %v", err)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	}
	if !ready || len(node.Spec.Taints) != 0 {
		t.Fatalf("node %s: Ready %v, taints %v; want Ready and untainted", node.Name, ready, node.Spec.Taints)
	}
	if got := testenv.Fleet(t, 1); got != f {
		t.Fatal("Fleet after WorkloadFleet started another fleet")
	}
	if code := testenv.StopFleet(0); code != 0 {
		t.Fatalf("StopFleet: exit code %d", code)
	}

	testenv.Fleet(t, 1)
	rec := &fatalRecorder{TB: t}
	testenv.WorkloadFleet(rec, 1)
	if !strings.Contains(rec.fatal, "started without workloads") {
		t.Fatalf("WorkloadFleet on a fleet without workloads: want a fatal error saying so, got %q", rec.fatal)
	}
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
