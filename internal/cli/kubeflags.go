package cli

import (
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeFlags are the kubeconfig flags of the commands that talk to Kubernetes directly, read as
// kubectl reads them with client-go's clientcmd: the file of --kubeconfig, else $KUBECONFIG's
// files merged, else ~/.kube/config; the context of --context (else the file's current one); the
// namespace of -n (else the context's); in a pod without a kubeconfig, the pod's own identity.
// cli-runtime's kube flags say the same but link kustomize, kubectl's resource builder and
// client-go's scheme of every API group (docs/cli.md).
type KubeFlags struct {
	KubeConfig, Context, Namespace string

	once   sync.Once
	loader clientcmd.ClientConfig
}

// ToRawKubeConfigLoader is the client config of the flags, made once, at the first call (after
// the flags are parsed).
func (k *KubeFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	k.once.Do(func() {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = k.KubeConfig
		// An empty kubeconfig resolves as kubectl's does (kubeConn refuses it first, outside a pod).
		rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
		overrides := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults, CurrentContext: k.Context}
		overrides.Context.Namespace = k.Namespace
		k.loader = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	})
	return k.loader
}

// ToRESTConfig is the REST config of the flags' cluster and user.
func (k *KubeFlags) ToRESTConfig() (*rest.Config, error) {
	return k.ToRawKubeConfigLoader().ClientConfig()
}
