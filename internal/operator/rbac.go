package operator

// The common role (slipway-common, config/rbac/common): what the operator process needs whichever
// controllers it runs. Each controller package declares its own role (docs/operator.md, RBAC).
// `make manifests` generates it from the markers here; the webhook certificate's rules (package
// webhookcert) go to slipway-webapp, the one system that serves webhooks.

// Every controller records Events on its objects.
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Leader election: the operator's Lease, in its own namespace only; client-go reads, creates and
// updates it (renewing and, on shutdown, releasing it).
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=slipway-system

// Shards (--shards > 1, package shard): each replica deletes its membership Lease on a clean stop;
// the assigner lists and watches the ring's Leases.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=list;watch;delete,namespace=slipway-system

// Secure metrics (--metrics-secure): the operator asks the API server to authenticate and
// authorize each scraper.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
