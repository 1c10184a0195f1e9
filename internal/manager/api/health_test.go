package api

import "testing"

// TestStates: the design's one-word webhookStatus and crdReconciliation, from each part.
func TestStates(t *testing.T) {
	for _, tc := range []struct {
		in   WebhooksStatus
		want WebhookState
	}{
		{WebhooksStatus{Health: Healthy, Total: 2, Healthy: 2}, WebhookAvailable},
		{WebhooksStatus{Health: Unhealthy, Total: 2, Healthy: 1}, WebhookUnavailable},
		{WebhooksStatus{Health: Unhealthy, Total: 1}, WebhookUnavailable}, // also when some could not be listed
		{WebhooksStatus{Health: Healthy}, WebhookNotConfigured},
		{WebhooksStatus{Health: Degraded, Total: 1, Healthy: 1}, WebhookUnknown},
		{WebhooksStatus{Health: Degraded}, WebhookUnknown},
	} {
		if got := tc.in.State(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   ReconciliationStatus
		want ReconciliationState
	}{
		{ReconciliationStatus{Health: Healthy, CRDs: 1, Resources: 3, Ready: 3}, ReconciliationActive},
		{ReconciliationStatus{Health: Healthy, CRDs: 1, Resources: 3, Ready: 2, Pending: 1}, ReconciliationActive},
		// The tenants' failures leave the reconciliation Active; a resource failing newly under the
		// operator makes it Failing.
		{ReconciliationStatus{Health: Healthy, CRDs: 1, Resources: 40, Ready: 30, Failing: 10, TenantFailures: TenantFailures{FailingBefore: 4, FailingReconciled: 6}}, ReconciliationActive},
		{ReconciliationStatus{Health: Degraded, CRDs: 1, Resources: 40, Ready: 39, Failing: 1, OperatorFailures: OperatorFailures{NewlyFailing: 1}}, ReconciliationFailing},
		{ReconciliationStatus{Health: Unhealthy, CRDs: 1, Resources: 4, Ready: 1, Failing: 1, Stale: 2, OperatorFailures: OperatorFailures{NotReconciling: 2, NewlyFailing: 1}}, ReconciliationFailing},
		{ReconciliationStatus{Health: Unhealthy, CRDs: 1, Resources: 4, Stale: 4}, ReconciliationStale},
		{ReconciliationStatus{Health: Degraded, CRDs: 1, Resources: 3, Ready: 3}, ReconciliationUnknown}, // another CRD not read
		{ReconciliationStatus{Health: Degraded}, ReconciliationUnknown},
		{ReconciliationStatus{Health: Healthy, CRDs: 2}, ReconciliationNoResources},
		{ReconciliationStatus{Health: Healthy}, ReconciliationNoResources}, // no CRDs at all
	} {
		if got := tc.in.State(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.in, got, tc.want)
		}
	}
}
