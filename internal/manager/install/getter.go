package install

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// restClientGetter is a genericclioptions.RESTClientGetter built from a rest.Config, as
// internal/controller/catalyst/deploy's (unexported there): no kubeconfig file is read.
type restClientGetter struct {
	config    *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

// ToRawKubeConfigLoader serves the rest.Config; every Helm client built here sets its namespace.
func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return restClientConfig{g.config}
}

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
