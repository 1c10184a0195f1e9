package operator

// Permissions every controller shares: recording Events. Each controller package declares its own.
// Leader election needs Leases in the operator's namespace only; that Role is
// config/rbac/leader_election_role.yaml.

// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
