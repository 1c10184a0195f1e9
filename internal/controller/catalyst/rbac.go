package catalyst

// The operator's permissions for Catalyst, each with its reason (docs/catalyst.md lists them too).
// `make manifests` generates the role slipway-catalyst from the markers of this package alone into
// config/rbac/catalyst/role.yaml; it is installed when --controllers runs catalyst.

// Projects and Environments: read both; write Environment status, the finalizer and the TTL
// annotation; delete expired Environments; write Project status.
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=environments/finalizers,verbs=update
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects,verbs=get;list;watch
// +kubebuilder:rbac:groups=catalyst.catalyst.dev,resources=projects/status,verbs=get;update;patch

// Environment namespaces (created, labelled, deleted), their ResourceQuota, LimitRange,
// NetworkPolicy and Ingress.
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=core,resources=resourcequotas,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=core,resources=limitranges,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// Secrets: read the ones Projects name (credentials, secretRefs, the wildcard certificate),
// copy them into environment namespaces, write build Jobs' Secrets; Helm keeps its releases in
// Secrets too.
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch;create;update;patch;delete

// The image pull Secret goes on each environment namespace's default ServiceAccount.
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=get;patch

// Build Jobs, and the log of a failed build's pod.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=core,resources=pods,verbs=list
// +kubebuilder:rbac:groups=core,resources=pods/log,verbs=get

// Why a deployment's pods are not coming: its pods' statuses (the pods rule above) and the
// FailedCreate events of StatefulSets and DaemonSets.
// +kubebuilder:rbac:groups=core,resources=events,verbs=list

// What an application deploys into its environment namespace (the deploy package applies it with
// server-side apply, prunes what a new revision drops, and Helm reads and waits for it): the
// kinds a web application's preview needs. An application with other kinds needs a rule added to
// the ClusterRole; cluster-scoped kinds and other namespaces are refused by the deploy package
// whatever the ClusterRole says. RBAC objects are deliberately absent: the operator could only
// grant what it holds itself.
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=services;configmaps;serviceaccounts;persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
