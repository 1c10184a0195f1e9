// Package webhookcert gives the operator's admission webhooks a serving certificate without
// cert-manager: it keeps a CA and a serving certificate in one Secret, rotates both before they
// expire, injects the CA bundle into the webhook configurations, and starts the webhook server
// only once a certificate is on disk.
//
// Three parts, wired by Setup and NewServer:
//
//   - The issuer (leader only) creates the Secret when it is missing and keeps it valid: a new CA
//     when the current one has less than twice RotateBefore left, a new serving certificate when
//     it has less than RotateBefore left, is not signed by a CA of the bundle, or names other
//     hosts. Old CAs stay in ca.crt until they expire, and a serving certificate is signed only
//     by a CA the webhook configurations already trust, so a CA rotation never leaves the API
//     server with a certificate it cannot verify. After every change it writes the bundle into
//     the caBundle of every webhook of the named configurations (and again whenever someone
//     resets it).
//   - The mirror (every replica, optional) copies tls.crt, tls.key and ca.crt from the Secret into
//     the certificate directory the way the kubelet updates a Secret volume (a "..data" symlink
//     switched in one rename), for an operator that runs outside the cluster. In a cluster the
//     Secret is mounted there instead.
//   - Server wraps controller-runtime's webhook server: it waits until the directory holds a key
//     pair, then starts serving; a certwatcher reloads the files when they change, so a rotated
//     certificate is served without a restart. Its StartedChecker is the operator's readiness
//     check: not ready until the certificate is in place.
//   - The trust reader (every replica) tells the Server what the API server trusts: the CA bundle
//     of the Secret and of every webhook of the configurations. The Server then presents only a
//     certificate that chains to all of them, whatever the directory holds: at start (a previous
//     control plane's certificate left in the directory, an old mounted Secret) and on every
//     handshake and readiness check after. Until the directory holds a trusted certificate (the
//     mirror or the kubelet rewrites it from the Secret) it does not serve, readiness fails with
//     the reason, and after a change it keeps serving the last trusted certificate while that is
//     still trusted.
//
// Every replica serves webhooks; only the leader writes the Secret and the configurations.
//
// The configurations are named by the markers below; the issuer may update only those (RBAC
// resourceNames, see rbac.go).
//
// +kubebuilder:webhookconfiguration:mutating=true,name=slipway-mutating-webhook-configuration
// +kubebuilder:webhookconfiguration:mutating=false,name=slipway-validating-webhook-configuration
package webhookcert

// Names the manifests and the operator's defaults use.
const (
	// MutatingWebhookConfiguration is the name of the operator's MutatingWebhookConfiguration.
	MutatingWebhookConfiguration = "slipway-mutating-webhook-configuration"
	// ValidatingWebhookConfiguration is the name of the operator's ValidatingWebhookConfiguration.
	ValidatingWebhookConfiguration = "slipway-validating-webhook-configuration"
	// DefaultSecretName is the Secret holding the CA and the serving certificate.
	DefaultSecretName = "slipway-webhook-cert"
	// DefaultServiceName is the Service in front of the webhook server.
	DefaultServiceName = "slipway-webhook-service"
)

// Keys of the Secret. tls.crt and tls.key are the serving pair; ca.crt is the CA bundle (newest
// first) the API server is told to trust; ca.key is the newest CA's key.
const (
	KeyCert   = "tls.crt"
	KeyKey    = "tls.key"
	KeyCA     = "ca.crt"
	KeyCAKey  = "ca.key"
	fieldName = "slipway-webhookcert"
)
