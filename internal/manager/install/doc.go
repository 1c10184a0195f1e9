// Package install puts an operator chart into one cluster with the Helm SDK: the chart's CRDs
// first (crds/, applied server-side by the manager and waited for until Established), then the
// release ("helm upgrade --install" with CRDs skipped), waited for until its resources are ready.
// Rollback, Uninstall, Status and History act on that release.
//
// CRDs are the manager's, never Helm's: they are never deleted (Uninstall keeps them, CRDs a chart
// renders from templates get helm.sh/resource-policy: keep) and a rollback leaves the newer schema
// in place, so custom resources are never deleted or rewritten by an install, an upgrade or a
// rollback.
//
// Every call builds its own clients from the cluster's *rest.Config, wrapped so that each request
// carries the W3C trace context of the current span (otelhttp) and is counted: Result.APIRequests
// is the number of Kubernetes API requests the call made.
package install
