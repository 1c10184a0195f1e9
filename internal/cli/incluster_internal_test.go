package cli

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string, gen int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
}

// TestWerfBundleOutcome: how reconcile and resume read a WerfBundle, for each state the
// controller writes (docs/werfbundle.md, Conditions).
func TestWerfBundleOutcome(t *testing.T) {
	const T, F, U = metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown
	for _, c := range []struct {
		name    string
		handled bool
		active  string
		conds   []metav1.Condition
		state   waitState
		msg     string
	}{
		{"not handled", false, "", []metav1.Condition{cond("Ready", T, "Succeeded", "Deployed tag 1.0.0", 1)},
			statePending, "Waiting for the operator to act on the request"},
		{"deploying", true, "app-apply-1", []metav1.Condition{cond("Ready", F, "Progressing", "Running apply Job ns/app-apply-1 for tag 1.1.0", 1),
			cond("Reconciling", T, "Progressing", "Running apply Job ns/app-apply-1 for tag 1.1.0", 1)},
			statePending, "Running apply Job ns/app-apply-1 for tag 1.1.0"},
		{"drift check", true, "app-check-1", []metav1.Condition{cond("Ready", T, "Succeeded", "Deployed tag 1.0.0", 1)},
			statePending, "Job app-check-1 runs"},
		{"deployed", true, "", []metav1.Condition{cond("Ready", T, "Succeeded", "Deployed tag 1.1.0", 1)},
			stateSucceeded, "Deployed tag 1.1.0"},
		{"failed", true, "", []metav1.Condition{cond("Ready", F, "DeployFailed", "deploy of tag 1.1.0 failed", 1),
			cond("Stalled", T, "DeployFailed", "deploy of tag 1.1.0 failed", 1)},
			stateFailed, "DeployFailed: deploy of tag 1.1.0 failed"},
		{"registry retried, deployed before", true, "", []metav1.Condition{cond("Ready", T, "Succeeded", "Deployed tag 1.0.0", 1),
			cond("Reconciling", T, "RegistryRetrying", "registry unavailable: 503", 1)},
			stateFailed, "RegistryRetrying: registry unavailable: 503"},
		{"no Ready yet", true, "", nil, statePending, "Waiting for the Ready condition"},
		{"Ready unknown", true, "", []metav1.Condition{cond("Ready", U, "Progressing", "", 1)}, statePending, "Waiting for the Ready condition"},
		{"still suspended", true, "", []metav1.Condition{cond("Ready", T, "Suspended", "Suspended: no polling", 1)},
			statePending, "Waiting for the operator to resume it"},
	} {
		b := &werfv1.WerfBundle{Status: werfv1.WerfBundleStatus{ActiveJob: c.active, Conditions: c.conds}}
		state, msg := werfBundleOutcome(b, c.handled)
		if state != c.state || msg != c.msg {
			t.Errorf("%s: (%v, %q), want (%v, %q)", c.name, state, msg, c.state, c.msg)
		}
	}
}

// TestReconciledSince: resume waits for a reconcile of the resumed generation, which a registry
// being retried shows only in its Reconciling condition.
func TestReconciledSince(t *testing.T) {
	suspended := []metav1.Condition{cond("Ready", metav1.ConditionTrue, "Suspended", "Suspended", 3)}
	for _, c := range []struct {
		name     string
		observed int64
		conds    []metav1.Condition
		want     bool
	}{
		{"still suspended", 2, suspended, false},
		{"observed", 4, suspended, true},
		{"registry retried", 2, append(suspended, cond("Reconciling", metav1.ConditionTrue, "RegistryRetrying", "503", 4)), true},
	} {
		b := &werfv1.WerfBundle{Status: werfv1.WerfBundleStatus{ObservedGeneration: c.observed, Conditions: c.conds}}
		if got := reconciledSince(b, 4); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int64
		want string
	}{
		{"a\nb\nc\n", -1, "a\nb\nc\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\n", 5, "a\nb\n"},
		{"a\n", 0, ""},
		{"", 3, ""},
	} {
		if got := lastLines(c.in, c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestReadyCells(t *testing.T) {
	ready, status := readyCells(nil)
	if ready != "Unknown" || status != "waiting to be reconciled" {
		t.Errorf("no Ready: %q %q", ready, status)
	}
	ready, status = readyCells([]metav1.Condition{cond("Ready", metav1.ConditionFalse, "DeployFailed", "deploy failed\nlog tail:\nError", 1)})
	if ready != "False" || status != "deploy failed …" {
		t.Errorf("a message of several lines: %q %q", ready, status)
	}
}

// TestOpenBrowserRefusesOtherSchemes: a URL from the cluster is opened only when it is http or
// https (a status could hold anything).
func TestOpenBrowserRefusesOtherSchemes(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "/bin/false" })
	for _, u := range []string{"file:///etc/passwd", "--help", "javascript:alert(1)", "https://"} {
		err := openBrowser(f, u)
		if err == nil || !strings.Contains(err.Error(), "not an http or https URL") {
			t.Errorf("openBrowser(%q) = %v", u, err)
		}
	}
}
