// Package approvals is the manager's approval policy (issue 12 §5, FR-OP-007): which approvals a
// deployment needs before anything is installed, and who may decide one. It is pure policy: no
// store, no clock, no I/O. The rollout engine turns each Requirement into a store.Approval
// (Requirement.Approval) and asks MayDecide before recording a person's decision.
//
// Three kinds of request:
//
//   - versionUpgrade (Admin): the target version differs from a target cluster's installed
//     version by at least Policy.UpgradeLevel, in either direction. The default level is patch:
//     every version change is one (the design's "every operator version upgrade requires admin
//     approval"); minor or major let smaller changes through. A first install and a re-deploy of
//     the same version are not upgrades; a version that is not semver and differs from the
//     installed one is (when in doubt, ask).
//   - breakingCRD (Admin): the chart's CRDs break their stored definitions (crds.Report.Breaking),
//     whatever the environment (of those whose workflow is on).
//   - production (EnvironmentOwner:Production, or Admin): any target cluster is in Production.
//
// The workflow can be off per environment (Policy.Disabled, design FR-OP-003): clusters of such
// an environment ask no approval of any kind.
//
// Each kind needs Policy.Count[kind] distinct approvers (default 1: multi-level approval is a
// count above 1). Nobody approves or rejects their own request.
package approvals
