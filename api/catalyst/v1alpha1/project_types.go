package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProjectSpec is the desired state of a Project: where the application's source lives, how it is
// built and deployed, and what every one of its environments gets.
type ProjectSpec struct {
	// Source is the git repository of the application.
	// +required
	Source ProjectSource `json:"source"`

	// Deployment says how the repository is deployed into an environment.
	// +required
	Deployment DeploymentSpec `json:"deployment"`

	// Resources are the defaults of the environments' namespaces.
	// +optional
	Resources ProjectResources `json:"resources,omitempty"`

	// Registry is where images built from the repository are pushed and looked up. Without it
	// nothing is built: environments deploy the images the deployment refers to as they are.
	// +optional
	Registry *RegistrySpec `json:"registry,omitempty"`

	// Build says how an image is built from the repository at an environment's commit.
	// +kubebuilder:default={}
	// +optional
	Build BuildSpec `json:"build,omitempty"`

	// Preview says how environments are exposed: https://<environment>.<domain>.
	// +kubebuilder:default={}
	// +optional
	Preview PreviewSpec `json:"preview,omitempty"`

	// DefaultTTL is how long a development environment lives after its creation or the last
	// change to its spec, whichever is later; it is then deleted. An Environment's own spec.ttl
	// overrides it. Deployment environments (staging, production) never expire unless they set
	// spec.ttl themselves. Empty means development environments do not expire either.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="defaultTTL must be at least 1m"
	// +optional
	DefaultTTL *metav1.Duration `json:"defaultTTL,omitempty"`

	// SecretRefs name Secrets in the Project's namespace that are copied, under the same name,
	// into every environment namespace (and kept in sync), for the deployed application to use.
	// Their content never appears in a status, a condition or an event.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	SecretRefs []SecretReference `json:"secretRefs,omitempty"`
}

// ProjectSource is the git repository of the application, fetched over HTTP(S).
type ProjectSource struct {
	// RepositoryURL is the HTTP(S) URL of the repository, without credentials,
	// e.g. https://github.com/org/repo.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'https' || url(self).getScheme() == 'http') && url(self).getHostname() != ''",message="repositoryUrl must be an http:// or https:// URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-zA-Z]+://[^/]*@')",message="repositoryUrl must not carry credentials; put them in a Secret named by secretRef"
	RepositoryURL string `json:"repositoryUrl"`

	// Branch is the project's main branch: checked when the Project is validated and fetched
	// for environments that name no branch of their own.
	// +kubebuilder:default=main
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^-/\s~^:?*\[\\][^\s~^:?*\[\\]*$`
	// +kubebuilder:validation:XValidation:rule="self != '@' && !self.contains('..') && !self.contains('@{') && !self.contains('//') && !self.endsWith('/') && !self.endsWith('.') && !self.matches('(^|/)\\\\.') && !self.matches('\\\\.lock(/|$)')",message="branch must be a valid git branch name"
	// +optional
	Branch string `json:"branch,omitempty"`

	// SecretRef names a Secret in the Project's namespace with the credentials for the
	// repository: keys username and password (HTTP basic auth), or a key token (a personal or
	// app access token, sent as the basic-auth password; the username defaults to
	// x-access-token), or a key bearerToken (sent as an Authorization: Bearer header).
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// DeploymentType is how the repository is deployed.
// +kubebuilder:validation:Enum=helm;manifest;kustomize
type DeploymentType string

// Deployment types.
const (
	// DeploymentTypeHelm installs the Helm chart at path, one release per environment.
	DeploymentTypeHelm DeploymentType = "helm"
	// DeploymentTypeManifest applies the YAML manifests in the directory at path.
	DeploymentTypeManifest DeploymentType = "manifest"
	// DeploymentTypeKustomize builds the kustomization at path and applies the result.
	DeploymentTypeKustomize DeploymentType = "kustomize"
)

// DeploymentSpec says how the repository is deployed into an environment. The image built for
// the environment's commit, the ingress host and the environment's variables are injected.
// +kubebuilder:validation:XValidation:rule="!has(self.values) || self.type == 'helm'",message="values apply to type helm only"
type DeploymentSpec struct {
	// Type is helm, manifest or kustomize.
	// +required
	Type DeploymentType `json:"type"`

	// Path is the chart, manifest directory or kustomization, relative to the repository root,
	// e.g. ./charts/app.
	// +kubebuilder:default="."
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="path is relative to the repository root"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)\\\\.\\\\.(/|$)')",message="path must not leave the repository (no .. segments)"
	// +optional
	Path string `json:"path,omitempty"`

	// Values are Helm values (type helm only), given as an object. The controller's injected
	// values (image, ingress host, environment variables) are merged over them.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ClusterRole is what the deployment may do in its environment namespace: the environment's
	// deployer (system:serviceaccount:slipway-catalyst-deployers:<environment namespace>, an
	// identity only the operator can act as), which renders and applies the repository's chart,
	// manifests or overlay, is bound to it by a RoleBinding in that namespace only. Empty means
	// the operator's default (--catalyst-deployer-cluster-role, slipway-catalyst-deployer). The
	// operator must be allowed to bind the ClusterRole (RBAC verb bind); it binds only its
	// default unless the cluster's administrator allows more (docs/catalyst.md, Security model).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$`
	// +optional
	ClusterRole string `json:"clusterRole,omitempty"`

	// AllowedKinds, when set, are the only kinds the deployment may hold; anything else is
	// refused before anything is applied. Kind "*" allows every kind of a group. Kinds the
	// operator always refuses (cluster-scoped kinds, the environment's guard rails) stay refused.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	AllowedKinds []GroupKind `json:"allowedKinds,omitempty"`

	// DeniedKinds are refused besides those the operator always refuses. Kind "*" denies every
	// kind of a group.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	DeniedKinds []GroupKind `json:"deniedKinds,omitempty"`

	// AllowedClusterRoles are the ClusterRoles a RoleBinding of the deployment may refer to.
	// A RoleBinding to any other ClusterRole is refused; RoleBindings to Roles of the namespace
	// are allowed (the API server lets the deployer grant only what it holds itself).
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +optional
	AllowedClusterRoles []string `json:"allowedClusterRoles,omitempty"`

	// The lists below are the environment's admission parameters: the API server refuses, for
	// every identity but the operator's (the deployer, the pods' ServiceAccounts, a human with
	// admin rights in the namespace), what they do not allow (docs/catalyst.md, Admission
	// policies). The environment's host is not chosen: it is <environment>.<domain>.

	// AllowSubHosts lets Ingresses and Gateway API routes use names under the environment's host
	// (<name>.<environment>.<domain>) besides the host itself. Wildcards are refused either way.
	// +optional
	AllowSubHosts bool `json:"allowSubHosts,omitempty"`

	// AllowedIngressClasses are the IngressClasses an Ingress of the deployment may name. Empty
	// means spec.preview.ingressClassName only, or, when that is empty too, only Ingresses that
	// name no class (the cluster's default).
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	AllowedIngressClasses []string `json:"allowedIngressClasses,omitempty"`

	// AllowedIngressAnnotations are the annotations an Ingress may carry, per ingress class.
	// None by default (Helm's and kubectl's bookkeeping annotations aside). Annotations holding a
	// snippet, auth-tls-secret and values of the form <other namespace>/<name> stay refused.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	AllowedIngressAnnotations []IngressAnnotations `json:"allowedIngressAnnotations,omitempty"`

	// AllowedGateways are the Gateways (namespace and name) a Gateway API route of the deployment
	// may attach to. None by default: HTTPRoutes and GRPCRoutes are refused.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +optional
	AllowedGateways []GatewayReference `json:"allowedGateways,omitempty"`

	// AllowedServiceTypes are the Service types allowed besides ClusterIP. ExternalName and
	// externalIPs are always refused.
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=NodePort;LoadBalancer
	// +optional
	AllowedServiceTypes []string `json:"allowedServiceTypes,omitempty"`

	// AllowedPriorityClasses are the PriorityClasses a pod may name. None by default.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	AllowedPriorityClasses []string `json:"allowedPriorityClasses,omitempty"`

	// AllowedStorageClasses are the StorageClasses a PersistentVolumeClaim may use. Empty means
	// the cluster's default StorageClass only (none when the cluster has no default).
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	AllowedStorageClasses []string `json:"allowedStorageClasses,omitempty"`
}

// IngressAnnotations allows annotations on the Ingresses of one ingress class.
type IngressAnnotations struct {
	// IngressClassName is the class; empty means Ingresses that name no class.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`

	// Keys are annotation keys, e.g. nginx.ingress.kubernetes.io/rewrite-target; a key ending in
	// "*" allows every key that starts with the rest, e.g. nginx.ingress.kubernetes.io/*.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]?([-A-Za-z0-9_.]*[A-Za-z0-9])?\*?$`
	// +required
	Keys []string `json:"keys"`
}

// GatewayReference names a Gateway API Gateway.
type GatewayReference struct {
	// Namespace of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Namespace string `json:"namespace"`

	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}

// GroupKind names a kind of object: its API group ("" for the core group) and kind.
type GroupKind struct {
	// Group is the API group, "" for the core group (ConfigMap, Service, ...).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group"`

	// Kind, e.g. Deployment, or "*" for every kind of the group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`
}

// ProjectResources are the defaults of the environments' namespaces.
type ProjectResources struct {
	// DefaultQuota caps each environment namespace unless the Environment overrides it.
	// +optional
	DefaultQuota *Quota `json:"defaultQuota,omitempty"`

	// ContainerDefaults are the requests and limits a container gets when the deployment sets
	// none, through a LimitRange in every environment namespace. A quota caps limits as well as
	// requests, so without them the quota would refuse every pod that sets no limits (as most
	// public charts do at their default values). A value left empty is derived from the
	// environment's quota: a limit is a quarter of the quota, a request a tenth. Without a quota
	// and without values here the namespace gets no LimitRange.
	// +optional
	ContainerDefaults *ContainerDefaults `json:"containerDefaults,omitempty"`
}

// ContainerDefaults are the default requests and limits of an environment's containers.
type ContainerDefaults struct {
	// Requests of a container that sets none (a container that sets limits only gets requests
	// equal to them, as Kubernetes does). Each must not exceed the limit of the same resource.
	// +optional
	Requests *ComputeResources `json:"requests,omitempty"`

	// Limits of a container that sets none. Each must not exceed the quota of the same resource.
	// +optional
	Limits *ComputeResources `json:"limits,omitempty"`
}

// ComputeResources are amounts of CPU and memory.
type ComputeResources struct {
	// CPU, e.g. "250m".
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory, e.g. "256Mi".
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// RegistrySpec is the image repository of the project.
type RegistrySpec struct {
	// Repository is the image repository, without a tag or digest, e.g.
	// registry.example.dev/org/app. Built images are pushed as <repository>:<commitSha>.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains('://')",message="repository is an image repository such as registry.example.dev/org/app, without a scheme"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.matches(':[^/]*$')",message="repository must not carry a tag or digest; the tag is the commit SHA"
	Repository string `json:"repository"`

	// SecretRef names a kubernetes.io/dockerconfigjson Secret in the Project's namespace with
	// credentials for the registry. It is used to look images up and to push builds; it only ever
	// reaches the build namespace, and there only the container that pushes: it is never copied
	// into an environment namespace.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// PullSecretRef names a Secret in the Project's namespace with pull-only credentials for the
	// registry (a kubernetes.io/dockerconfigjson Secret, or a user name and password or token).
	// It is copied into each environment namespace as the image pull Secret
	// catalyst-registry-pull and given to the namespace's default ServiceAccount. Without it
	// environment namespaces get no pull Secret: the images must be public.
	// +optional
	PullSecretRef *SecretReference `json:"pullSecretRef,omitempty"`

	// Insecure allows plain HTTP (and unverified TLS) to the registry. Only for local or private
	// registries on trusted networks.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// BuildEngine builds images inside the cluster.
// +kubebuilder:validation:Enum=kaniko;buildkit
type BuildEngine string

// Build engines.
const (
	// BuildEngineKaniko builds with Kaniko (the default).
	BuildEngineKaniko BuildEngine = "kaniko"
	// BuildEngineBuildKit builds with rootless BuildKit (buildctl-daemonless).
	BuildEngineBuildKit BuildEngine = "buildkit"
)

// BuildSpec says how an image is built from the repository.
type BuildSpec struct {
	// Engine is kaniko (default) or buildkit (rootless).
	// +kubebuilder:default=kaniko
	// +optional
	Engine BuildEngine `json:"engine,omitempty"`

	// Context is the build context directory, relative to the repository root.
	// +kubebuilder:default="."
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="context is relative to the repository root"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)\\\\.\\\\.(/|$)')",message="context must not leave the repository (no .. segments)"
	// +optional
	Context string `json:"context,omitempty"`

	// Dockerfile is the path of the Dockerfile, relative to the context.
	// +kubebuilder:default=Dockerfile
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="dockerfile is relative to the context"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)\\\\.\\\\.(/|$)')",message="dockerfile must not leave the context (no .. segments)"
	// +optional
	Dockerfile string `json:"dockerfile,omitempty"`

	// Timeout is how long a build may run before it is failed.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('6h')",message="timeout must be between 1m and 6h"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// PreviewSpec says how environments are exposed.
type PreviewSpec struct {
	// Domain is the preview domain: an environment is served at <environment>.<domain>.
	// Empty means the operator's default preview domain; with neither, no Ingress is created
	// and status.url stays empty.
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`
	// +optional
	Domain string `json:"domain,omitempty"`

	// IngressClassName is the IngressClass of the environments' Ingresses. Empty means the
	// cluster's default IngressClass.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`

	// Service is the Service the Ingress routes to, created by the deployment.
	// +kubebuilder:default={}
	// +optional
	Service ServiceTarget `json:"service,omitempty"`

	// TLS serves the environments over HTTPS. Without it they are served over plain HTTP.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`
}

// ServiceTarget is the backend of an environment's Ingress.
type ServiceTarget struct {
	// Name of the Service in the environment namespace. Empty means the Project's name.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Name string `json:"name,omitempty"`

	// Port of the Service.
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
}

// TLSSpec is one of two ways to get certificates for environments.
// +kubebuilder:validation:XValidation:rule="has(self.clusterIssuer) != has(self.wildcardSecretRef)",message="set exactly one of clusterIssuer or wildcardSecretRef"
type TLSSpec struct {
	// ClusterIssuer is a cert-manager ClusterIssuer: each environment's Ingress carries the
	// cert-manager.io/cluster-issuer annotation and gets a certificate of its own.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ClusterIssuer string `json:"clusterIssuer,omitempty"`

	// WildcardSecretRef names a kubernetes.io/tls Secret in the Project's namespace holding a
	// certificate for *.<domain>. It is not copied into environment namespaces (a pull request's
	// code runs there): their Ingresses name no Secret and the ingress controller serves its
	// default certificate, which the administrator sets to this wildcard once (ingress-nginx:
	// --default-ssl-certificate). No certificate is issued per environment, which avoids ACME
	// rate limits. The Project's Ready condition reminds its owner.
	// +optional
	WildcardSecretRef *SecretReference `json:"wildcardSecretRef,omitempty"`
}

// ProjectStatus is the observed state of a Project.
type ProjectStatus struct {
	// ObservedGeneration is the generation last validated successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// SourceCommit is the head of spec.source.branch at the last validation.
	// +optional
	SourceCommit string `json:"sourceCommit,omitempty"`

	// Environments is the number of Environments that refer to this Project.
	// +optional
	Environments int32 `json:"environments"`

	// LastValidatedTime is when the source was last checked.
	// +optional
	LastValidatedTime *metav1.Time `json:"lastValidatedTime,omitempty"`

	// Conditions: Ready and SourceReady, Reconciling and Stalled while true.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cproj,categories=slipway;catalyst
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Environments",type=integer,JSONPath=`.status.environments`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Repository",type=string,priority=1,JSONPath=`.spec.source.repositoryUrl`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 63",message="a Project's name must be a DNS label (lowercase letters, digits and '-', at most 63 characters)"

// Project is an application whose branches and pull requests get preview environments. It lives
// in the team's namespace.
type Project struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ProjectSpec `json:"spec"`
	// +optional
	Status ProjectStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProjectList is a list of Projects.
type ProjectList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Project `json:"items"`
}

func init() {
	register(&Project{}, &ProjectList{})
}
