package catalyst

// The operator's own permissions for Catalyst, each with its reason (docs/operator.md lists them
// in its rights table, which TestRights checks against the API server). `make manifests`
// generates the roles slipway-catalyst from the markers of this file alone into
// config/rbac/catalyst/role.yaml: a ClusterRole for what Catalyst does in namespaces it cannot
// know in advance (Projects', environments'), a Role in the build namespace
// (namespace=slipway-builds, the default of --catalyst-build-namespace; the chart writes its
// catalyst.buildNamespace.name) for the build Jobs, which run nowhere else, and a Role in the
// deployer namespace (namespace=slipway-catalyst-deployers, --catalyst-deployer-namespace; the
// chart's catalyst.deployerNamespace.name) to impersonate the deployers. They are installed when
// --controllers runs catalyst.
//
// What an application deploys into its environment namespace is not here: the deploy engine
// renders and applies a pull request's chart, manifests or overlay as the environment's deployer
// (system:serviceaccount:slipway-catalyst-deployers:<environment namespace>, a name no object
// carries), bound in the environment namespace to the ClusterRole the Project names (default
// slipway-catalyst-deployer, internal/controller/catalyst/deployerrole). The operator only
// creates that RoleBinding, and impersonates the deployer.

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

// Secrets, in every namespace, because Projects (in any namespace) name them and environment
// namespaces are made at run time: get the ones a Project names (credentials, secretRefs, the
// wildcard certificate); list and watch for the metadata-only watch that reconciles the Projects
// and Environments naming a Secret when it changes, and to find the copies in an environment
// namespace; create, patch and delete the copies in environment namespaces and build Jobs'
// Secrets in the build namespace. Every write is a create, a merge patch or a delete: no update.
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch;create;patch;delete

// The image pull Secret on an environment namespace's default ServiceAccount; the deletion of
// the ServiceAccount catalyst-deployer earlier versions made in each environment namespace.
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=get;patch;delete

// Deploy as an environment's deployer: impersonation of the ServiceAccount names of the deployer
// namespace only, where nothing runs and no ServiceAccount object is made. (A ClusterRole cannot
// narrow impersonation to a prefix of names; a Role narrows it to a namespace.)
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=impersonate,namespace=slipway-catalyst-deployers

// The deployer's RoleBinding in each environment namespace (its roleRef cannot change: a Project
// naming another ClusterRole deletes and creates it), to the one ClusterRole the operator may
// bind.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;create;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=slipway-catalyst-deployer

// Build Jobs, and the log of a failed build's pod: in the build namespace only. Whoever may
// create a Job in a namespace may run a pod there as any of its ServiceAccounts, so this is not
// a ClusterRole; the operator caches Jobs in the build namespace alone when no other system it
// runs needs them elsewhere (operator.Controller.JobNamespaces).
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete,namespace=slipway-builds
// +kubebuilder:rbac:groups=core,resources=pods,verbs=list,namespace=slipway-builds
// +kubebuilder:rbac:groups=core,resources=pods/log,verbs=get,namespace=slipway-builds

// Readiness: the environment's Deployments are watched (a rollout's progress reconciles the
// Environment). Why its pods are not coming (its pods, the FailedCreate events of StatefulSets
// and DaemonSets) and the other deployed objects are read as the deployer, which may read them in
// its namespace: the operator holds no pods or events rule outside the build namespace.
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// The cluster's default StorageClass is an environment's allowed one unless its Project names
// others (admission parameters, docs/catalyst.md).
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
