// Package operator is the runtime kit of slipway's in-cluster controllers: everything a controller
// package (internal/controller/<system>, internal/webhook/<system>) is built from, in one tree.
//
// This package is the manager side: a system describes itself as a Controller (its flags, its
// Setup, the namespaces it reads Jobs in) and receives Options; NewManager builds one
// controller-runtime manager hosting the selected systems, with JSON logs (NewLogger), Prometheus
// metrics, health and readiness probes, leader election through a Lease, a client-side rate limit
// (ClientRateLimit), rate-limited Events (Options.EventRecorder), a memory limit from the
// container's (SetMemoryLimit), webhook serving and a graceful shutdown that lets in-flight
// reconciles finish. rbac.go holds the rules every operator process needs (slipway-common).
//
// The subpackages are what a reconcile uses:
//
//   - conditions: the shared condition vocabulary (Ready, Reconciling, Stalled) and helpers;
//   - patch: writes an object back once, and only what the reconcile changed;
//   - notes: a reconcile's logs and Events, told once at its end;
//   - cachelag: whether the informer cache is older than the controller's own last write;
//   - jobsecret: a Job's Secret written in the order that survives a crash;
//   - phasegauge: gauges of objects by phase.
//
// The kit lives under internal/operator, not under a new root such as internal/runtime, because
// that is what it serves (the operator binary's controllers), because the names read well at the
// call sites (operator.Controller, operator.Options, conditions.Set, patch.NewHelper), and because
// a package named runtime or controller would shadow k8s.io/apimachinery/pkg/runtime and
// controller-runtime's controller, which the same files import.
//
// One package under this tree is not part of the kit: internal/operator/command, the assembler
// that lists every system and builds the operator's command line for cmd/operator and the tests
// of the manifests. It imports every controller package, so no controller package, nor any
// package of the kit, may import it (tests included); hack/verify-imports.sh, run by make verify,
// fails when one does.
package operator
