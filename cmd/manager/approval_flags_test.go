//go:build e2e

package main_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// --approval-environments lists the environments whose deployments go through the approval
// workflow: an unknown name or an empty value stops serve at start, naming the flag and the
// problem; a valid list serves.
func TestServeApprovalEnvironments(t *testing.T) {
	t.Parallel()
	d := newDeployment(t, "sqlite")
	for _, bad := range []struct{ value, want string }{
		{"QA", `unknown environment "QA"`},
		{"production", `unknown environment "production"`},
		{"", "empty: list the environments"},
	} {
		_, err := d.startServe("--insecure-http", "--approval-environments="+bad.value)
		var exit *exitError
		if !errors.As(err, &exit) {
			t.Fatalf("serve --approval-environments=%q: %v, want it to exit", bad.value, err)
		}
		if !strings.Contains(exit.log, "--approval-environments") || !strings.Contains(exit.log, bad.want) {
			t.Errorf("serve --approval-environments=%q said %q, want the flag and %q", bad.value, exit.log, bad.want)
		}
	}
	p := d.serve("--insecure-http", "--approval-environments=Staging,Production", "--approval-upgrade-level=patch")
	p.must("GET", "/api/v1/clusters", d.admin(), nil, http.StatusOK)
}
