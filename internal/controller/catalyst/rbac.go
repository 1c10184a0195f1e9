package catalyst

// The operator's own permissions for Catalyst, each with its reason (docs/operator.md lists them
// in its rights table, which TestRights checks against the API server). `make manifests`
// generates the role slipway-catalyst from the markers of this file alone into
// config/rbac/catalyst/role.yaml; it is installed when --controllers runs catalyst.
//
// What an application deploys into its environment namespace is not here: the deploy engine
// renders and applies a pull request's chart, manifests or overlay as the environment's own
// ServiceAccount (DeployerServiceAccount), bound in that namespace to the ClusterRole the Project
// names (default slipway-catalyst-deployer, internal/controller/catalyst/deployerrole). The
// operator only creates that ServiceAccount and its RoleBinding, and impersonates it.

// Projects and Environments: read both; write Environment status, the finalizer and the TTL
// annotation; delete expired Environments; write Project status.
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments/finalizers,verbs=update
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects,verbs=get;list;watch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects/status,verbs=get;update;patch

// Environment namespaces (created, labelled, deleted) and the guard rails the operator keeps in
// them: ResourceQuota, LimitRange, NetworkPolicy; and the environment's Ingress.
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=core,resources=resourcequotas,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=core,resources=limitranges,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete

// Secrets: read the ones Projects name (credentials, secretRefs, the wildcard certificate) and
// copy them into environment namespaces; write build Jobs' Secrets.
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch;create;update;patch;delete

// The environment's deployer ServiceAccount (created in each environment namespace) and the
// image pull Secret on the namespace's default ServiceAccount.
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=get;create;patch

// Deploy as the environment's ServiceAccount: impersonation of that one name only.
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=impersonate,resourceNames=catalyst-deployer

// The deployer's RoleBinding in each environment namespace (its roleRef cannot change: a Project
// naming another ClusterRole deletes and creates it), to the one ClusterRole the operator may
// bind.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=slipway-catalyst-deployer

// Build Jobs, and the log of a failed build's pod.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=core,resources=pods,verbs=list
// +kubebuilder:rbac:groups=core,resources=pods/log,verbs=get

// Readiness: the environment's Deployments are watched (a rollout's progress reconciles the
// Environment), and why pods are not coming is read from its pods (above) and the FailedCreate
// events of StatefulSets and DaemonSets. The other deployed objects are read as the deployer.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=events,verbs=list
