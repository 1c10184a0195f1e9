package catalyst

import (
	"crypto/sha256"
	"encoding/hex"

	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
)

// Deployer deploys the repository at a commit into an environment's namespace; *deploy.Engine
// is the production one (Helm, plain manifests, kustomize).
type Deployer = deploy.Deployer

// The deploy package's request and result, under the names the steps use.
type (
	deployRequest = deploy.Request
	deployImage   = deploy.Image
	deployResult  = deploy.Result
)

// reservedObjects are the objects the controller keeps in an environment namespace besides its
// guard rails: the Ingress, the deployer's RoleBinding, and the Secrets copied from the Project.
// A deployment that brings one of them is refused, so the two never fight over it. The name of
// the ServiceAccount earlier versions deployed as stays reserved too: a deployment cannot bring
// back an object the operator deletes.
func reservedObjects(project *catalystv1alpha1.Project) []deploy.Reserved {
	out := []deploy.Reserved{
		{GroupKind: schema.GroupKind{Group: networkingv1.GroupName, Kind: "Ingress"}, Name: IngressName},
		{GroupKind: schema.GroupKind{Kind: "ServiceAccount"}, Name: LegacyDeployerServiceAccount},
		{GroupKind: schema.GroupKind{Group: rbacv1.GroupName, Kind: "RoleBinding"}, Name: DeployerRoleBinding},
	}
	for _, c := range secretCopies(project) {
		out = append(out, deploy.Reserved{GroupKind: schema.GroupKind{Kind: "Secret"}, Name: c.name})
	}
	return out
}

// newDeployer is the deploy engine. The operator's own credentials serve discovery; every
// request about an environment's objects impersonates the environment's deployer.
func newDeployer(cfg *rest.Config, render deploy.RenderLimits) (Deployer, error) {
	return deploy.New(cfg, deploy.Options{Render: render})
}

// deployFailure turns a Deployer error into a failure: the reason the deploy package gives it
// (DeploymentPathNotFound, ObjectRefused, RenderFailed, DeploymentFailed), stalled when retrying the same commit
// cannot help.
func deployFailure(err error) *failure {
	f := &failure{reason: deploy.Reason(err), stalled: deploy.Stalled(err), phase: catalystv1alpha1.PhaseDeploying,
		message: err.Error()}
	if f.stalled {
		f.phase = catalystv1alpha1.PhaseFailed
		switch f.reason {
		case catalystv1alpha1.DeploymentPathNotFoundReason:
			f.message += "; fix the Project's spec.deployment.path or add it to the repository"
		case catalystv1alpha1.ObjectRefusedReason:
			f.message += " (in a new commit)"
		case catalystv1alpha1.RenderFailedReason:
			f.message += "; fix the deployment in the repository and push a new commit"
		default:
			f.message += "; fix the objects (or the namespace's quota) and push a new commit"
		}
	}
	return f
}

// inventoryOf lists what a deploy applied.
func inventoryOf(res deployResult) []inventoryEntry {
	out := make([]inventoryEntry, 0, len(res.Objects))
	for _, o := range res.Objects {
		out = append(out, inventoryEntry{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name})
	}
	return out
}

// maxReleaseName is Helm's limit on release names, which the deploy package keeps for all types.
const maxReleaseName = 53

// releaseName is the deployment's release: the Project's name (one release per environment
// namespace), shortened with a hash when longer than Helm allows.
func releaseName(env *catalystv1alpha1.Environment) string {
	name := env.Spec.ProjectRef.Name
	if len(name) <= maxReleaseName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:maxReleaseName-13] + "-" + hex.EncodeToString(sum[:])[:12]
}
