// Package werfbundle is the WerfBundle pull deployer. It owns the werf.io/v1alpha1 WerfBundle
// reconciler: registry polling (ETag, backoff, jitter, a shared limit on registry operations in
// flight), one converge Job at a time per bundle running `werf bundle apply` under the bundle's
// ServiceAccount in the target namespace, values merged from ConfigMaps and Secrets and mounted as
// a file, Job outcome and log capture, drift checks and corrections, tenant isolation (a bundle
// deploys into another namespace only when that namespace accepts it), and the push webhook
// receiver (subpackage receiver). Tag selection and values merging are pure subpackages (tags,
// values).
//
// Files: werfbundle_controller.go (wiring, the reconcile shape), werfbundle_steps.go (the steps),
// werfbundle_status.go (phase and conditions, decided in one place), job.go (the Job),
// jobsecret.go (the Job's Secret and the order of a deploy's writes), tenancy.go, drift.go,
// registry.go, values.go, logs.go, poll.go, metrics.go.
package werfbundle
