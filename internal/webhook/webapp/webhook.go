package webapp

import (
	"flag"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
)

// DefaultMaxReplicas is the highest spec.replicas accepted unless configured otherwise.
const DefaultMaxReplicas = 100

// ScalePath serves the validation of the scale subresource.
const ScalePath = "/validate-webapp-slipway-dev-v1-webapp-scale"

var groupKind = schema.GroupKind{Group: webappv1.GroupVersion.Group, Kind: "WebApp"}

// Options configure the webhooks.
type Options struct {
	// MaxReplicas is the highest spec.replicas accepted; 0 means DefaultMaxReplicas.
	MaxReplicas int
}

// BindFlags registers --webapp-max-replicas.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.MaxReplicas, "webapp-max-replicas", DefaultMaxReplicas, "highest spec.replicas the WebApp webhook accepts")
}

func (o Options) maxReplicas() (int32, error) {
	switch {
	case o.MaxReplicas == 0:
		return DefaultMaxReplicas, nil
	case o.MaxReplicas < 0 || o.MaxReplicas > math.MaxInt32:
		return 0, fmt.Errorf("max replicas %d is outside 0..%d", o.MaxReplicas, math.MaxInt32)
	}
	return int32(o.MaxReplicas), nil
}

// +kubebuilder:webhook:path=/mutate-webapp-slipway-dev-v1-webapp,mutating=true,failurePolicy=fail,sideEffects=None,groups=webapp.slipway.dev,resources=webapps,verbs=create;update,versions=v1,name=mwebapp.slipway.dev,admissionReviewVersions=v1,serviceName=slipway-webhook-service,serviceNamespace=slipway-system
// +kubebuilder:webhook:path=/validate-webapp-slipway-dev-v1-webapp,mutating=false,failurePolicy=fail,sideEffects=None,groups=webapp.slipway.dev,resources=webapps,verbs=create;update,versions=v1,name=vwebapp.slipway.dev,admissionReviewVersions=v1,serviceName=slipway-webhook-service,serviceNamespace=slipway-system
// +kubebuilder:webhook:path=/validate-webapp-slipway-dev-v1-webapp-scale,mutating=false,failurePolicy=fail,sideEffects=None,groups=webapp.slipway.dev,resources=webapps/scale,verbs=update,versions=v1,name=vwebapp-scale.slipway.dev,admissionReviewVersions=v1,serviceName=slipway-webhook-service,serviceNamespace=slipway-system

// Setup registers the WebApp webhooks with the manager's webhook server.
func Setup(mgr ctrl.Manager, opts Options) error {
	limit, err := opts.maxReplicas()
	if err != nil {
		return fmt.Errorf("webapp webhook options: %w", err)
	}
	err = ctrl.NewWebhookManagedBy(mgr, &webappv1.WebApp{}).
		WithDefaulter(&Defaulter{}).
		WithValidator(&Validator{MaxReplicas: limit}).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the WebApp webhooks: %w", err)
	}
	mgr.GetWebhookServer().Register(ScalePath, &webhook.Admission{
		Handler: &scaleValidator{maxReplicas: limit, decoder: admission.NewDecoder(mgr.GetScheme())},
	})
	return nil
}
