package clusters

import (
	"net/url"
	"regexp"
	"strconv"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// MaxKubeconfigBytes bounds a registered kubeconfig.
const MaxKubeconfigBytes = 256 << 10

// Kubeconfig is a parsed, validated kubeconfig reduced to its current context: one cluster, one
// user, inline credentials only.
type Kubeconfig struct {
	// Minified is the kubeconfig serialized again with the current context only: what is sealed
	// and stored (the other contexts of the registered file are dropped).
	Minified []byte
	config   *rest.Config
}

// RESTConfig returns a copy of the kubeconfig's client configuration.
func (k *Kubeconfig) RESTConfig() *rest.Config { return rest.CopyConfig(k.config) }

var yamlLine = regexp.MustCompile(`line (\d+)`)

// kubeconfigError is an *invalid.Error on field "kubeconfig". Messages are fixed sentences: none
// quotes a byte of the kubeconfig (not even a name), and no cause is kept, since parser errors
// may quote the input.
func kubeconfigError(reason, msg string) *invalid.Error {
	return &invalid.Error{Field: "kubeconfig", Reason: reason, Message: msg}
}

// ParseKubeconfig parses a kubeconfig's YAML (or JSON) text and checks it is usable by the
// manager: a current context naming a cluster with an https server and a user with inline
// credentials. The manager never runs a program or reads a file a user's kubeconfig names, so
// exec and auth-provider plugins and file paths (certificate-authority, client-certificate,
// client-key, tokenFile) are refused. Errors are *invalid.Error on field "kubeconfig" and never
// echo the kubeconfig's bytes.
func ParseKubeconfig(data []byte) (*Kubeconfig, error) {
	if len(data) == 0 {
		return nil, &invalid.Error{Field: "kubeconfig", Reason: "required", Message: "is required: the YAML text of a kubeconfig"}
	}
	if len(data) > MaxKubeconfigBytes {
		return nil, kubeconfigError("tooLarge", "is larger than 256 KiB")
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			if n, convErr := strconv.Atoi(m[1]); convErr == nil {
				return nil, kubeconfigError("format", "is not a valid kubeconfig: YAML syntax error at line "+strconv.Itoa(n))
			}
		}
		return nil, kubeconfigError("format", "is not a valid kubeconfig: not YAML or JSON of a kubeconfig (apiVersion v1, kind Config)")
	}
	if cfg.CurrentContext == "" {
		return nil, kubeconfigError("format", "has no current-context: set current-context to the context the manager should use")
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok || kctx == nil {
		return nil, kubeconfigError("format", "current-context names a context the kubeconfig does not define")
	}
	cluster, ok := cfg.Clusters[kctx.Cluster]
	if !ok || cluster == nil {
		return nil, kubeconfigError("format", "the current context names a cluster the kubeconfig does not define")
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if kctx.AuthInfo == "" || !ok || user == nil {
		return nil, kubeconfigError("format", "the current context names a user the kubeconfig does not define")
	}
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	if err := checkUser(user); err != nil {
		return nil, err
	}

	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, kubeconfigError("format", "the current context cannot be extracted from the kubeconfig")
	}
	// Namespace and extensions play no part in how the manager connects.
	for _, c := range cfg.Contexts {
		c.Namespace, c.Extensions = "", nil
	}
	cfg.Extensions, cfg.Preferences = nil, clientcmdapi.Preferences{}
	minified, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, kubeconfigError("format", "the kubeconfig cannot be serialized again")
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, kubeconfigError("format", "does not give a usable client configuration")
	}
	return &Kubeconfig{Minified: minified, config: rc}, nil
}

func checkCluster(c *clientcmdapi.Cluster) error {
	if c.Server == "" {
		return kubeconfigError("format", "the current context's cluster has no server")
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Host == "" {
		return kubeconfigError("format", "the current context's cluster server is not a URL")
	}
	if u.Scheme != "https" {
		return kubeconfigError("format", "the current context's cluster server must be an https:// URL")
	}
	if c.CertificateAuthority != "" {
		return kubeconfigError("fileReference", "the cluster names a certificate-authority file: the manager reads no file named by a kubeconfig; inline it as certificate-authority-data")
	}
	if c.ProxyURL != "" {
		if p, err := url.Parse(c.ProxyURL); err != nil || p.Host == "" {
			return kubeconfigError("format", "the cluster's proxy-url is not a URL")
		}
	}
	return nil
}

func checkUser(u *clientcmdapi.AuthInfo) error {
	switch {
	case u.Exec != nil:
		return kubeconfigError("plugin", "the user uses an exec credential plugin: the manager runs no program named by a kubeconfig; "+
			"give an inline credential (a token, e.g. a ServiceAccount token, or client-certificate-data and client-key-data)")
	case u.AuthProvider != nil:
		return kubeconfigError("plugin", "the user uses an auth-provider plugin: the manager runs no plugin named by a kubeconfig; "+
			"give an inline credential (a token, or client-certificate-data and client-key-data)")
	case u.ClientCertificate != "" || u.ClientKey != "":
		return kubeconfigError("fileReference", "the user names a client-certificate or client-key file: the manager reads no file named by a kubeconfig; "+
			"inline them as client-certificate-data and client-key-data")
	case u.TokenFile != "":
		return kubeconfigError("fileReference", "the user names a tokenFile: the manager reads no file named by a kubeconfig; inline the token as token")
	case (len(u.ClientCertificateData) == 0) != (len(u.ClientKeyData) == 0):
		return kubeconfigError("format", "the user has only one of client-certificate-data and client-key-data: give both")
	case len(u.ClientCertificateData) == 0 && u.Token == "" && u.Username == "":
		return kubeconfigError("format", "the user has no credential: give a token, or client-certificate-data and client-key-data")
	}
	return nil
}
