// Package approvals is the manager's approval policy (issue 12 §5, FR-OP-007): which approvals a
// deployment needs before anything is installed, and who may decide one. It is pure policy: no
// store, no clock, no I/O. The rollout engine turns each Requirement into a store.Approval
// (Requirement.Approval) and asks MayDecide before recording a person's decision.
//
// Three kinds of request:
//
//   - versionUpgrade (Admin): the target version moves a target cluster's installed version
//     across a minor or a major (Policy.UpgradeLevel), in either direction. A first install, a
//     re-deploy of the same version and a patch bump are not upgrades; a version that is not
//     semver and differs from the installed one is (when in doubt, ask).
//   - breakingCRD (Admin): the chart's CRDs break their stored definitions (crds.Report.Breaking),
//     whatever the environment.
//   - production (EnvironmentOwner:Production, or Admin): any target cluster is in Production.
//
// Each kind needs Policy.Count[kind] distinct approvers (default 1: multi-level approval is a
// count above 1). Nobody approves or rejects their own request.
package approvals
