package engine

import (
	"time"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// deployable refuses a deployment of a deleted operator, of a version it does not have, and of
// a version marked removed (gone from its chart source or outside its version filter: the
// refresh loop found it so; deployments that used it keep their history). versions are the
// operator's, as the store lists them.
func deployable(op *store.Operator, versions []*store.OperatorVersion, version string) error {
	if op.DeletedAt != nil {
		return invalid.Reasoned("operator", "deleted", nil, "operator %q was deleted at %s; its history stays readable, but it can no longer be deployed",
			op.Name, op.DeletedAt.UTC().Format(time.RFC3339))
	}
	var available []*store.OperatorVersion
	var removed *store.OperatorVersion
	for _, v := range versions {
		switch {
		case v.RemovedAt == nil:
			available = append(available, v)
		case v.Version == version:
			removed = v
		}
	}
	if removed != nil {
		why := "its chart source no longer lists it"
		if removed.RemovedReason == store.VersionRemovedByFilter {
			why = "the operator's version filter leaves it out"
		}
		return invalid.Reasoned("version", "removed", nil, "version %q of operator %q was removed at %s (%s): it can no longer be deployed (%s)",
			version, op.Name, removed.RemovedAt.UTC().Format(time.RFC3339), why, versionList(available))
	}
	if !hasVersion(available, version) {
		return invalid.Reasoned("version", "notFound", nil, "operator %q has no version %q (%s)", op.Name, version, versionList(available))
	}
	return nil
}
