// Package chaos holds the chaos suites: the operator binary runs as real processes on the full
// local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok) beside a real
// registry and git server, and is killed with SIGKILL at random moments while it works; the
// kube-apiserver is restarted in the middle of each run and, for WerfBundle, the registry
// misbehaves. Each suite then checks what must hold whatever happened (every object converges, no
// duplicate and no lost object) from what watches recorded during the whole run, and prints its
// figures: objects, kills, duplicates, objects lost, time from the last fault to all converged,
// peak RSS of the operator.
//
// The suites are behind the e2e build tag. `make chaos` runs them at full size
// (SLIPWAY_CHAOS_SCALE=full); without the variable, as in `make test`, they run a short form.
//
// Files: werfbundle_test.go, catalyst_test.go, webapp_test.go (one suite each), scale_test.go
// (sizes), faults_test.go (the killer and the API server restart), recorder_test.go (watch
// recorders), podhook_test.go (the admission webhook that steers kwok's pods), report_test.go
// (figures).
package chaos
