package conditions_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/operator/conditions"
)

var earlier = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// start is a condition list as read from the API server: Ready False since earlier, and one
// other condition after it.
func start() []metav1.Condition {
	return []metav1.Condition{
		{Type: conditions.Ready, Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: earlier, Reason: "Progressing", Message: "waiting"},
		{Type: "SourceReady", Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: earlier, Reason: "Fetched", Message: "abc"},
	}
}

// TestSet_TransitionTimeMovesOnlyWithTheStatus: a new condition or a changed status takes the
// time of the change; a reason, message or generation alone updates those fields and keeps the
// time; other conditions and the order are left as they are.
func TestSet_TransitionTimeMovesOnlyWithTheStatus(t *testing.T) {
	for _, tc := range []struct {
		name           string
		typ            string
		status         metav1.ConditionStatus
		gen            int64
		reason, msg    string
		want           metav1.Condition
		wantTransition bool
		wantLen        int
	}{
		{name: "same status, new reason, message and generation", typ: conditions.Ready, status: metav1.ConditionFalse, gen: 2, reason: "Failed", msg: "boom",
			want: metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionFalse, ObservedGeneration: 2, Reason: "Failed", Message: "boom"}, wantLen: 2},
		{name: "status changes", typ: conditions.Ready, status: metav1.ConditionTrue, gen: 2, reason: "Available", msg: "ready",
			want: metav1.Condition{Type: conditions.Ready, Status: metav1.ConditionTrue, ObservedGeneration: 2, Reason: "Available", Message: "ready"}, wantTransition: true, wantLen: 2},
		{name: "new condition is appended", typ: conditions.Reconciling, status: metav1.ConditionTrue, gen: 3, reason: "Progressing", msg: "working",
			want: metav1.Condition{Type: conditions.Reconciling, Status: metav1.ConditionTrue, ObservedGeneration: 3, Reason: "Progressing", Message: "working"}, wantTransition: true, wantLen: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conds := start()
			before := time.Now().Truncate(time.Second)
			conditions.Set(&conds, tc.gen, tc.typ, tc.status, tc.reason, tc.msg)
			if len(conds) != tc.wantLen {
				t.Fatalf("got %d conditions, want %d: %+v", len(conds), tc.wantLen, conds)
			}
			got := conditions.Get(conds, tc.typ)
			if got == nil {
				t.Fatalf("condition %s missing", tc.typ)
			}
			if got.Status != tc.want.Status || got.ObservedGeneration != tc.want.ObservedGeneration || got.Reason != tc.want.Reason || got.Message != tc.want.Message {
				t.Fatalf("got %+v, want %+v", *got, tc.want)
			}
			moved := !got.LastTransitionTime.Equal(&earlier)
			if moved != tc.wantTransition {
				t.Fatalf("lastTransitionTime %v (was %v): moved %v, want %v", got.LastTransitionTime, earlier, moved, tc.wantTransition)
			}
			if moved && got.LastTransitionTime.Time.Before(before) {
				t.Fatalf("lastTransitionTime %v is before the Set at %v", got.LastTransitionTime, before)
			}
			if conds[0].Type != conditions.Ready || conds[1] != start()[1] {
				t.Fatalf("the other conditions or the order changed: %+v", conds)
			}
		})
	}
}

// TestSet_SameValuesChangeNothing: setting a condition as it stands leaves the list equal, so a
// no-op reconcile has no status to write.
func TestSet_SameValuesChangeNothing(t *testing.T) {
	conds := start()
	conditions.Set(&conds, 1, conditions.Ready, metav1.ConditionFalse, "Progressing", "waiting")
	want := start()
	for i := range want {
		if conds[i] != want[i] {
			t.Fatalf("condition %d: got %+v, want %+v", i, conds[i], want[i])
		}
	}
}

// TestRemove_DropsOnlyThatType: Reconciling and Stalled are removed when false; the others stay,
// and removing an absent type is no change.
func TestRemove_DropsOnlyThatType(t *testing.T) {
	conds := start()
	conditions.Set(&conds, 1, conditions.Stalled, metav1.ConditionTrue, "Bad", "bad spec")
	conditions.Remove(&conds, conditions.Stalled)
	conditions.Remove(&conds, conditions.Reconciling)
	if len(conds) != 2 || conds[0] != start()[0] || conds[1] != start()[1] {
		t.Fatalf("got %+v", conds)
	}
	if conditions.Get(conds, conditions.Stalled) != nil {
		t.Fatal("Stalled still there")
	}
}

// TestIsTrue_OnlyPresentAndTrue: a missing, False or Unknown condition is not true.
func TestIsTrue_OnlyPresentAndTrue(t *testing.T) {
	conds := start()
	conditions.Set(&conds, 1, conditions.Reconciling, metav1.ConditionUnknown, "Starting", "")
	for typ, want := range map[string]bool{"SourceReady": true, conditions.Ready: false, conditions.Reconciling: false, conditions.Stalled: false} {
		if got := conditions.IsTrue(conds, typ); got != want {
			t.Errorf("IsTrue(%s) = %v, want %v", typ, got, want)
		}
	}
}

// TestSet_LongMessageIsCutAtACharacterAndSurvivesJSON: a message beyond 4 KiB is cut with "..."
// at a character boundary, so what the API server stores (JSON, where a broken character turns
// into U+FFFD) is what the next Set computes, and a reconcile with the same message writes
// nothing. Short messages are kept whole.
func TestSet_LongMessageIsCutAtACharacterAndSurvivesJSON(t *testing.T) {
	for _, msg := range []string{
		strings.Repeat("a", 5000),
		strings.Repeat("é", 3000), // 2 bytes each: an odd cut would split one
		strings.Repeat("✓", 2000), // 3 bytes each
		"x" + strings.Repeat("✓", 2000),
	} {
		var conds []metav1.Condition
		conditions.Set(&conds, 1, conditions.Ready, metav1.ConditionFalse, "Failed", msg)
		got := conds[0].Message
		if len(got) > 4096 || !strings.HasSuffix(got, "...") || !strings.HasPrefix(msg, strings.TrimSuffix(got, "...")) {
			t.Fatalf("message of %d bytes cut to %d bytes: %q...", len(msg), len(got), got[len(got)-12:])
		}
		if !utf8.ValidString(got) {
			t.Fatalf("message of %q... cut inside a character", msg[:6])
		}
		b, err := json.Marshal(conds)
		if err != nil {
			t.Fatal(err)
		}
		var stored []metav1.Condition
		if err := json.Unmarshal(b, &stored); err != nil {
			t.Fatal(err)
		}
		if stored[0].Message != got {
			t.Fatalf("the stored message differs from the one set")
		}
	}
	short := strings.Repeat("é", 2048) // 4096 bytes: kept
	var conds []metav1.Condition
	conditions.Set(&conds, 1, conditions.Ready, metav1.ConditionFalse, "Failed", short)
	if conds[0].Message != short {
		t.Fatalf("a message of 4096 bytes was cut")
	}
}
