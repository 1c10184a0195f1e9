package notes

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

type recorded struct {
	events.EventRecorder
	reasons []string
}

func (r *recorded) Eventf(_, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	r.reasons = append(r.reasons, reason)
}

func TestEmit_OneEventPerPhaseChange(t *testing.T) {
	var n Notes
	n.Add(false, "NewTag", "Found tag 1.1.0")
	n.Add(false, "JobCreated", "Created Job")
	n.PhaseChanged(false, "", "Syncing", "Running Job")
	rec := &recorded{}
	n.Emit(context.Background(), rec, nil, "Reconcile")
	if len(rec.reasons) != 1 || rec.reasons[0] != "PhaseSyncing" {
		t.Errorf("Events %v, want only PhaseSyncing", rec.reasons)
	}
	if got, want := n[2].Message, "Phase (none) -> Syncing: Running Job"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}

	var quiet Notes
	quiet.Add(true, "DeployFailed", "a")
	quiet.Add(false, "RollingBack", "b")
	rec = &recorded{}
	quiet.Emit(context.Background(), rec, nil, "Reconcile")
	if len(rec.reasons) != 2 {
		t.Errorf("Events %v, want both notes without a phase change", rec.reasons)
	}
}
