// Package engine drives deployments (issue 12): it turns a request into a stored deployment,
// and on every replica a loop claims due deployments (a lease on the row, renewed while a step
// runs, taken over by another replica when it lapses), advances each by idempotent steps
// persisted one at a time (Queued → Planning → WaitingApproval → Deploying → Validating →
// Completed, or RollingBack → RolledBack | Failed), checks the health of every live operator
// release, and rolls back on its own after consecutive failed checks.
//
// Every step can be repeated: a replica that dies between two writes leaves the deployment
// claimed until the lease lapses, and the next replica redoes the unfinished step, reading the
// cluster's Helm release to find what the dead one had already done.
package engine
