//go:build e2e

package werfbundle_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/joblog/joblogtest"
)

// TestWerfBundle_FailedDeployKeepsTheLogsLastLine: a deploy Job fails after writing a log far
// longer than what is kept (64 KiB); the operator reads it as in a cluster (PodLogs through the
// API server's pods/log, as the operator's RBAC user), from a kwok node that serves the pod's log.
// lastErrorMessage ends with the log's last line, the error, and the stored log is its end.
func TestWerfBundle_FailedDeployKeepsTheLogsLastLine(t *testing.T) {
	f := newFixture(t)
	reg := startRegistry(t, "1.0.0")
	node := joblogtest.StartLogNode(t, env, f.target)
	const lastLine = `Error: UPGRADE FAILED: resource Deployment/my-app: context deadline exceeded`
	var log strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&log, "│ │ my-app/deployment/web: waiting for 1 of 3 replicas to become ready (attempt %04d) ......... │\n", i)
	}
	log.WriteString(lastLine + "\n")
	node.WriteLog(t, f.target, log.String())

	cs, err := kubernetes.NewForConfig(operatorConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	f.outcomes.failTag("1.0.0")
	r := f.reconciler()
	r.Logs = werfbundle.PodLogs{REST: cs.CoreV1().RESTClient()}
	r.DecoratePod = func(kind werfbundle.JobKind, tpl *corev1.PodTemplateSpec) {
		f.outcomes.decorate(kind, tpl)
		node.Bind(&tpl.Spec)
	}
	b := f.bundle("app", reg.Repository("demo/app"))
	f.create(b)
	f.start()

	got := f.waitPhase(b, werfv1.PhaseFailed, "")
	msg := got.Status.LastErrorMessage
	if !strings.HasSuffix(msg, "\n"+lastLine) {
		t.Errorf("lastErrorMessage ends with %q, want the log's last line %q", msg[max(0, len(msg)-200):], lastLine)
	}
	if !strings.Contains(msg, "deploy of tag 1.0.0 failed") {
		t.Errorf("lastErrorMessage %q does not say the deploy failed", msg)
	}

	stored := &corev1.ConfigMap{}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: f.opNS, Name: got.Status.LastJobLog}, stored); err != nil {
		t.Fatalf("stored log %q: %v", got.Status.LastJobLog, err)
	}
	kept := stored.Data["log"]
	if len(kept) > werfbundle.DefaultLogBytes {
		t.Errorf("stored log holds %d bytes, more than %d", len(kept), werfbundle.DefaultLogBytes)
	}
	body, cut := strings.CutPrefix(kept, joblog.CutNote)
	if !cut || !strings.HasSuffix(log.String(), body) || !strings.HasSuffix(body, lastLine+"\n") {
		t.Errorf("stored log is %d bytes %q...%q, want the cut note and the log's end", len(kept), kept[:min(len(kept), 100)], kept[max(0, len(kept)-100):])
	}
}
