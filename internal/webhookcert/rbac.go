package webhookcert

// The issuer reads and writes only its own Secret in the operator namespace (create cannot be
// limited by name) and only the operator's two webhook configurations. The cache lists and
// watches them with a metadata.name field selector, which is what lets resourceNames cover list
// and watch too.
//
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch;update;patch,namespace=slipway-system,resourceNames=slipway-webhook-cert
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=create,namespace=slipway-system
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=get;list;watch;update;patch,resourceNames=slipway-mutating-webhook-configuration
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;update;patch,resourceNames=slipway-validating-webhook-configuration
