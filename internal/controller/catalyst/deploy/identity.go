package deploy

import (
	"fmt"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// impersonating returns a copy of the Engine whose every request about objects goes to the API
// server as the ServiceAccount sa (impersonation: the operator's RBAC allows it for the
// ServiceAccount names of one namespace only, where nothing runs and no ServiceAccount object
// exists; the API server does not look an impersonated ServiceAccount up). Discovery, the REST
// mapper and the capabilities stay the Engine's: they are the same for every identity. The copy shares the HTTP transport of New's
// config (client-go caches it by TLS configuration); building it costs no request.
func (e *Engine) impersonating(sa types.NamespacedName) (*Engine, error) {
	cfg := rest.CopyConfig(e.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceaccount.MakeUsername(sa.Namespace, sa.Name)}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{HTTPClient: hc, Mapper: e.mapper})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	as := *e
	as.config, as.client, as.clientset, as.user = cfg, c, cs, cfg.Impersonate.UserName
	as.helm = newHelmKit(cfg, e.discovery, e.mapper)
	// The OpenAPI schema Helm validates objects with is the same for every identity: one
	// validator for the Engine, made once, rather than one per deploy (each parses the schema).
	as.helm.factory = sharedValidator{Factory: as.helm.factory, validators: e.validators}
	return &as, nil
}

// sharedValidator is a Helm factory whose schema validators come from validators.
type sharedValidator struct {
	kube.Factory
	validators *validators
}

func (f sharedValidator) Validator(directive string) (validation.Schema, error) {
	return f.validators.get(directive)
}

// validators are the schema validators of the Engine's own Helm factory, one per validation
// directive, made on first use. They are safe for concurrent use (kubectl's caching verifier).
type validators struct {
	factory kube.Factory
	mu      sync.Mutex
	made    map[string]validation.Schema
}

func (v *validators) get(directive string) (validation.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.made[directive]; ok {
		return s, nil
	}
	s, err := v.factory.Validator(directive)
	if err != nil {
		return nil, err
	}
	if v.made == nil {
		v.made = map[string]validation.Schema{}
	}
	v.made[directive] = s
	return s, nil
}

// capsTTL is how long the cluster's capabilities (version, API versions) are reused before
// discovery is asked again: a CRD installed meanwhile shows in .Capabilities after at most that.
const capsTTL = time.Minute

// capabilities are the cluster's Kubernetes version and API versions, as Helm's templates see them
// (.Capabilities), read through discovery once per capsTTL rather than once per deploy.
type capabilities struct {
	discovery discovery.CachedDiscoveryInterface
	mu        sync.Mutex
	value     *common.Capabilities
	read      time.Time
}

func (c *capabilities) get() (*common.Capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.value != nil && time.Since(c.read) < capsTTL {
		return c.value, nil
	}
	c.discovery.Invalidate()
	v, err := c.discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's version: %w", err)
	}
	apis, err := action.GetVersionSet(c.discovery)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the cluster's API versions: %w", err)
	}
	c.value = &common.Capabilities{
		APIVersions: apis,
		KubeVersion: common.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
		HelmVersion: common.DefaultCapabilities.HelmVersion,
	}
	c.read = time.Now()
	return c.value, nil
}
