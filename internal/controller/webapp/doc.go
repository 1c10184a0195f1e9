// Package webapp is the WebApp operator. It owns the webapp.slipway.dev/v1 WebApp reconciler: one
// WebApp becomes a Deployment and a Service of the same name, both controlled by the WebApp (owner
// references do the garbage collection; there is no finalizer). Both are written by server-side
// apply under the field owner "slipway-webapp", and only when the live object differs from the
// desired one in a field the operator sets, so a reconcile with nothing to change writes nothing.
// The WebApp's phase and conditions follow the Deployment's real progress.
//
// Files: webapp_controller.go (wiring, the reconcile shape), webapp_steps.go (the apply steps),
// desired.go (the Deployment and Service the spec asks for), compare.go (does the live object
// already hold them), webapp_status.go (phase and conditions, decided in one place),
// freshness.go (waiting for the cache to hold the operator's own writes), webapp_scope.go,
// metrics.go, setup.go (flags and registration in the operator).
package webapp
