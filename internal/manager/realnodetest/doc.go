// Package realnodetest proves the operator manager's health checks and automatic rollback on
// real pods: its tests (build tag e2e, run as root) start one control plane with a real node
// (containerd, runc, a kubelet; controlplane.Options.RealNode), register it as a cluster of an
// in-process manager (SQLite store, clusters, chart repository, rollout engine and health
// checker, as `manager serve` wires them), and deploy a test operator to it: a controller-runtime
// controller (testdata/operator) built into an image with internal/ociimage and imported into
// the node, installed by a chart whose versions break the way real operators do — one
// crash-loops, one fails its readiness probe, one ships a webhook Service that selects no pod.
// Each is judged by the kubelet's own pod statuses and the API server's own Service proxy, and
// rolled back; nothing is simulated.
//
//	KUBEBUILDER_ASSETS=$(hack/controlplane.sh) go test -tags e2e -count=1 -v ./internal/manager/realnodetest/
package realnodetest
