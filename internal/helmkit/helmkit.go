// Package helmkit is what every user of the Helm SDK here shares: a RESTClientGetter built from a
// rest.Config (no kubeconfig file is read) and the release type conversion. Catalyst's deploy
// engine and the operator manager's installer both drive Helm through it.
package helmkit

import (
	"fmt"

	ri "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Getter is a genericclioptions.RESTClientGetter built from a rest.Config, a cached discovery
// client and a REST mapper, so discovery is shared by every Helm client made from it.
type Getter struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

// NewGetter returns a Getter serving cfg, dc and mapper.
func NewGetter(cfg *rest.Config, dc discovery.CachedDiscoveryInterface, mapper meta.RESTMapper) *Getter {
	return &Getter{config: cfg, discovery: dc, mapper: mapper}
}

func (g *Getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.config), nil }

func (g *Getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *Getter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

// ToRawKubeConfigLoader serves the rest.Config; every Helm client built from a Getter sets its
// namespace itself, so the loader's is only a fallback.
func (g *Getter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return restClientConfig{g.config} }

// restClientConfig is a clientcmd.ClientConfig that reads no file.
type restClientConfig struct{ config *rest.Config }

func (c restClientConfig) RawConfig() (clientcmdapi.Config, error) {
	return *clientcmdapi.NewConfig(), nil
}
func (c restClientConfig) ClientConfig() (*rest.Config, error) { return rest.CopyConfig(c.config), nil }
func (c restClientConfig) Namespace() (string, bool, error)    { return "default", false, nil }
func (c restClientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return &clientcmd.ClientConfigLoadingRules{}
}

// ToRelease is the v1 release behind Helm's release interface.
func ToRelease(r ri.Releaser) (*release.Release, error) {
	switch rel := r.(type) {
	case *release.Release:
		return rel, nil
	case release.Release:
		return &rel, nil
	}
	return nil, fmt.Errorf("unexpected Helm release type %T", r)
}
