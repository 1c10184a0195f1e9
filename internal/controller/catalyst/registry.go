package catalyst

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/registry"
	"github.com/slipway-dev/slipway/internal/registry/access"
)

// ManifestChecker asks a registry whether an image exists; *registry.Client is the production one.
type ManifestChecker interface {
	ManifestExists(ctx context.Context, reference string) (bool, error)
}

// RegistryFactory makes a ManifestChecker for one set of registry settings.
type RegistryFactory = access.Factory[ManifestChecker]

// errSecret marks a referenced Secret that is missing or unusable: a human must fix it.
var errSecret = access.ErrSecret

// registryAccess reads the Project's registry credentials (uncached) into client options.
func registryAccess(ctx context.Context, c client.Reader, project *catalystv1alpha1.Project) (access.Access, error) {
	spec := project.Spec.Registry
	s := access.Spec{Namespace: project.Namespace, Repository: spec.Repository, Insecure: spec.Insecure, UserAgent: "slipway-catalyst"}
	if spec.SecretRef != nil {
		s.SecretRef = spec.SecretRef.Name
	}
	return access.Read(ctx, c, s)
}

// clientCache shares registry clients between environments with the same settings, so
// connections and bearer tokens are reused.
type clientCache = access.Cache[ManifestChecker]

// pullDockerConfig renders the pull-only credentials of src, named in the Project's field, as
// the .dockerconfigjson of an image pull Secret.
func pullDockerConfig(project *catalystv1alpha1.Project, src *corev1.Secret, field string) ([]byte, error) {
	host := access.Host(project.Spec.Registry.Repository)
	creds, err := registry.CredentialsFromSecret(src, host)
	if err != nil {
		return nil, access.Invalid(field, err)
	}
	return registry.DockerConfigJSON(host, creds)
}
