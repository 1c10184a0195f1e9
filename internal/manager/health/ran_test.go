package health

import (
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// TestRan: a result of NotCheckedOn did not run; one where any part ran (even a part that found
// something, or one part not checked beside others that ran) did.
func TestRan(t *testing.T) {
	none := NotCheckedOn("c", "no connection to the cluster", time.Now())
	if Ran(none) {
		t.Errorf("NotCheckedOn's result reports it ran: %+v", none)
	}
	some := NotCheckedOn("c", "no connection", time.Now())
	some.CRDs = api.ReconciliationStatus{Health: api.Healthy, CRDs: 1, Resources: 2, Ready: 2}
	if !Ran(some) {
		t.Errorf("a result whose CRD part ran reports it did not: %+v", some)
	}
	found := NotCheckedOn("c", "x", time.Now())
	found.Pods.Messages = []string{"pod p: container manager restarted 4 times within 5m0s"}
	if !Ran(found) {
		t.Errorf("a result whose pod part found a problem reports it did not run: %+v", found)
	}
}
