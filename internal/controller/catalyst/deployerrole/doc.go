// Package deployerrole holds the markers of the ClusterRole slipway-catalyst-deployer: what a
// preview environment's own ServiceAccount (catalyst-deployer) may do, through a RoleBinding in
// its namespace only. The deploy engine renders and applies a pull request's chart, manifests or
// overlay as that ServiceAccount, so this is everything a pull request can reach. `make
// manifests` generates config/rbac/catalyst/deployer/role.yaml from it.
//
// The kinds are those a web application's preview needs. Deliberately absent: the guard rails
// (ResourceQuota, LimitRange, NetworkPolicy, which the operator keeps), every cluster-scoped
// kind, and pods/exec and pods/attach. Roles and RoleBindings are present: the API server lets
// the deployer grant only what it holds itself, in its own namespace, and the deploy engine
// refuses a RoleBinding to a ClusterRole the Project does not allow. A Project that needs more
// names its own ClusterRole (spec.deployment.clusterRole), which the operator must be allowed to
// bind (docs/catalyst.md, Security model).
package deployerrole

// +kubebuilder:rbac:groups=core,resources=configmaps;secrets;services;serviceaccounts;persistentvolumeclaims;pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=pods/log;events;endpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes;grpcroutes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=resourcequotas;limitranges,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch
