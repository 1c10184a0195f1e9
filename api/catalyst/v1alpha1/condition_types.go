package v1alpha1

// Condition types. Every Project and Environment also has Ready, and Reconciling and Stalled while
// they are true (see internal/operator/conditions).
const (
	// NamespaceReadyCondition is True when the environment's namespace exists and is labelled,
	// and its ResourceQuota, LimitRange, NetworkPolicy and copied Secrets are in place.
	NamespaceReadyCondition = "NamespaceReady"

	// BuildReadyCondition is True when the image for the environment's commit is in the registry:
	// found there, or built and pushed.
	BuildReadyCondition = "BuildReady"

	// DeploymentReadyCondition is True when the commit is deployed and its workloads are
	// available.
	DeploymentReadyCondition = "DeploymentReady"

	// SourceReadyCondition (Project) is True when the repository is reachable with the
	// configured credentials, the branch exists and the deployment path is present at its head.
	SourceReadyCondition = "SourceReady"
)

// Reasons of the conditions above and of Ready. Each says what happened or what to fix.
const (
	// SucceededReason: the condition's goal is achieved.
	SucceededReason = "Succeeded"
	// ProgressingReason: work toward the goal is under way.
	ProgressingReason = "Progressing"
	// DeletingReason: the Environment is being deleted; its namespace is being removed.
	DeletingReason = "Deleting"

	// ProjectNotFoundReason: spec.projectRef names no Project. Create it or fix the reference.
	ProjectNotFoundReason = "ProjectNotFound"
	// ProjectNotReadyReason: the Project is not Ready; its conditions say why.
	ProjectNotReadyReason = "ProjectNotReady"
	// ProjectRefForbiddenReason: the Environment does not live in the namespace of the Project it
	// names (<team>-<project>). Move it there.
	ProjectRefForbiddenReason = "ProjectRefForbidden"
	// SecretNotFoundReason: a Secret named by the Project (git or registry credentials,
	// secretRefs, the wildcard certificate) does not exist or lacks the expected keys.
	SecretNotFoundReason = "SecretNotFound"

	// NamespaceConflictReason: the namespace the environment needs exists and belongs to
	// something else (its catalyst.dev labels name another environment). Rename the environment.
	NamespaceConflictReason = "NamespaceConflict"
	// InvalidContainerDefaultsReason: the Project's spec.resources.containerDefaults do not fit:
	// a request above its limit, or a limit above the environment's quota. Fix the Project.
	InvalidContainerDefaultsReason = "InvalidContainerDefaults"
	// NamespaceTerminatingReason: the namespace is still being deleted from an earlier
	// environment of the same name; it is recreated once gone.
	NamespaceTerminatingReason = "NamespaceTerminating"

	// RepositoryNotFoundReason: the repository URL does not exist (or is private and no
	// credentials were given).
	RepositoryNotFoundReason = "RepositoryNotFound"
	// AuthenticationFailedReason: the repository or registry refused the credentials, or needs
	// some and none were given. Fix the Secret named by secretRef.
	AuthenticationFailedReason = "AuthenticationFailed"
	// SourceUnavailableReason: the repository could not be reached (network, timeout, server
	// error, size limit). Retried with backoff.
	SourceUnavailableReason = "SourceUnavailable"
	// BranchNotFoundReason: the branch does not exist in the repository.
	BranchNotFoundReason = "BranchNotFound"
	// CommitNotFoundReason: spec.source.commitSha is not in the repository (a typo, or a
	// force-push removed it).
	CommitNotFoundReason = "CommitNotFound"
	// DeploymentPathNotFoundReason: spec.deployment.path does not exist at the commit.
	DeploymentPathNotFoundReason = "DeploymentPathNotFound"

	// ImageFoundReason: the image for the commit was already in the registry; nothing was built.
	ImageFoundReason = "ImageFound"
	// ImageBuiltReason: the image for the commit was built and pushed.
	ImageBuiltReason = "ImageBuilt"
	// BuildingReason: a build Job is running.
	BuildingReason = "Building"
	// BuildFailedReason: the build Job failed; the message holds the tail of its log. A new
	// commit retries.
	BuildFailedReason = "BuildFailed"
	// RegistryNotConfiguredReason: the image is missing and the Project has no registry to
	// build into. Set spec.registry on the Project.
	RegistryNotConfiguredReason = "RegistryNotConfigured"
	// BuildNamespaceRefusedReason: the build namespace's Pod Security level would refuse the
	// build engine's pod (Kaniko needs baseline, rootless BuildKit privileged). Label the build
	// namespace for the engine or choose the other engine.
	BuildNamespaceRefusedReason = "BuildNamespaceRefused"
	// RegistryUnavailableReason: the registry could not be asked whether the image exists.
	// Retried with backoff.
	RegistryUnavailableReason = "RegistryUnavailable"

	// DeployingReason: the deployment is applied and its workloads are becoming available.
	DeployingReason = "Deploying"
	// RenderFailedReason: the chart, manifests or kustomization at the commit could not be
	// rendered (invalid YAML, a template error, a missing file); the message says where.
	RenderFailedReason = "RenderFailed"
	// ObjectRefusedReason: the deployment holds objects an environment may not have: cluster-scoped
	// ones, ones for another namespace, a quota, limit range or network policy (the operator's
	// guard rails), a name the operator keeps, a kind the cluster does not serve, a kind the
	// Project does not allow, or a RoleBinding to a ClusterRole the Project does not allow. The
	// message names every refused object; nothing of the deployment was applied.
	ObjectRefusedReason = "ObjectRefused"
	// DeployerNotBoundReason: the environment's deployer could not be bound to the Project's
	// ClusterRole (it does not exist, or the operator may not bind it), or the deployer namespace
	// does not exist.
	DeployerNotBoundReason = "DeployerNotBound"
	// DeploymentFailedReason: the rendered objects could not be applied, or the workloads did not
	// become available in time (a Deployment past its progress deadline); the message says why
	// their pods are not coming when the cluster says (quota, Pod Security, admission, image
	// pulls, crash loops).
	DeploymentFailedReason = "DeploymentFailed"

	// ExpiredReason: the environment's TTL passed; it is being deleted.
	ExpiredReason = "Expired"
)
