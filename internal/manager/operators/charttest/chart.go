package charttest

import (
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/internal/registry"
)

// ChartFiles are a chart's files by path relative to the chart directory (registry's type, so
// registrytest.PushChart takes them as they are).
type ChartFiles = registry.ChartFiles

// Option configures OperatorChart.
type Option func(*chartConfig)

type chartConfig struct {
	templateCRD bool
	webhook     bool
	appVersion  string
}

// WithTemplateCRD adds the Gadget CRD as a template (templates/gadget-crd.yaml) that uses the
// release name and .Capabilities, as charts that template their CRDs do.
func WithTemplateCRD() Option { return func(c *chartConfig) { c.templateCRD = true } }

// WithWebhook adds a ValidatingWebhookConfiguration and the Service it calls.
func WithWebhook() Option { return func(c *chartConfig) { c.webhook = true } }

// WithAppVersion sets Chart.yaml's appVersion (default: "v" + version).
func WithAppVersion(v string) Option { return func(c *chartConfig) { c.appVersion = v } }

// Versions are the chart versions the fixtures publish, oldest first, with their schema level.
var Versions = []struct {
	Version string
	Level   Level
}{
	{"1.0.0", Base},
	{"1.1.0", Compatible},
	{"2.0.0", Breaking},
}

// OperatorChart returns a small operator chart named name at version: Chart.yaml, values.yaml,
// the Widget CRD of level in crds/, a ServiceAccount, a ClusterRole and its binding, and a
// Deployment, plus whatever opts add.
func OperatorChart(name, version string, level Level, opts ...Option) ChartFiles {
	cfg := chartConfig{appVersion: "v" + version}
	for _, o := range opts {
		o(&cfg)
	}
	files := ChartFiles{
		"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\nappVersion: %q\ndescription: a test operator\ntype: application\n",
			name, version, cfg.appVersion),
		"values.yaml":                   "image: registry.example/widget-operator:" + cfg.appVersion + "\nreplicas: 1\n",
		"crds/widgets.yaml":             YAML(Widget(level)),
		"templates/serviceaccount.yaml": serviceAccount,
		"templates/rbac.yaml":           rbac,
		"templates/deployment.yaml":     deployment,
		"templates/_helpers.tpl":        helpers,
		"templates/NOTES.txt":           "{{ .Release.Name }} installed.\n",
	}
	if cfg.templateCRD {
		files["templates/gadget-crd.yaml"] = templateCRD(level)
	}
	if cfg.webhook {
		files["templates/webhook.yaml"] = webhook
	}
	return files
}

// ManyCRDs returns an operator chart named name at version with n CRDs in crds/
// (thing000s.charttest.slipway.dev, kind Thing000, ...), each with level's schema: the fixture of
// the 50-CRD benchmark.
func ManyCRDs(name, version string, n int, level Level) ChartFiles {
	files := OperatorChart(name, version, level)
	delete(files, "crds/widgets.yaml")
	for i := range n {
		files[fmt.Sprintf("crds/thing%03d.yaml", i)] = YAML(NewCRD(ThingPlural(i), ThingKind(i), level))
	}
	return files
}

// ThingPlural is the plural of ManyCRDs' i-th CRD.
func ThingPlural(i int) string { return fmt.Sprintf("thing%03ds", i) }

// ThingKind is the kind of ManyCRDs' i-th CRD.
func ThingKind(i int) string { return fmt.Sprintf("Thing%03d", i) }

// templateCRD is the Gadget CRD as a template: the release name in a label and a guard on
// .Capabilities, rendered offline with Helm's default capabilities.
func templateCRD(level Level) string {
	body := YAML(Gadget(level))
	body = strings.Replace(body, "metadata:\n", "metadata:\n  labels:\n    app.kubernetes.io/instance: {{ .Release.Name | quote }}\n", 1)
	return "{{- if .Capabilities.APIVersions.Has \"apiextensions.k8s.io/v1\" }}\n" +
		"{{- if semverCompare \">=1.16-0\" .Capabilities.KubeVersion.Version }}\n" +
		body + "{{- end }}\n{{- end }}\n"
}

const helpers = `{{- define "op.name" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
`

const serviceAccount = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "op.name" . }}
  namespace: {{ .Release.Namespace }}
`

const rbac = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "op.name" . }}
rules:
- apiGroups: ["charttest.slipway.dev"]
  resources: ["*"]
  verbs: ["get", "list", "watch", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "op.name" . }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ include "op.name" . }}
subjects:
- kind: ServiceAccount
  name: {{ include "op.name" . }}
  namespace: {{ .Release.Namespace }}
`

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "op.name" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
    app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      serviceAccountName: {{ include "op.name" . }}
      containers:
      - name: manager
        image: {{ .Values.image }}
`

const webhook = `apiVersion: v1
kind: Service
metadata:
  name: {{ include "op.name" . }}-webhook
  namespace: {{ .Release.Namespace }}
spec:
  selector:
    app.kubernetes.io/instance: {{ .Release.Name }}
  ports:
  - port: 443
    targetPort: 9443
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {{ include "op.name" . }}
webhooks:
- name: widgets.charttest.slipway.dev
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    service:
      name: {{ include "op.name" . }}-webhook
      namespace: {{ .Release.Namespace }}
      path: /validate
  rules:
  - apiGroups: ["charttest.slipway.dev"]
    apiVersions: ["v1alpha1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["widgets"]
`

// Archive returns the chart as a .tgz the way `helm package` lays it out (files under a
// directory named after the chart), with fixed times so equal charts have equal digests.
func Archive(files ChartFiles) ([]byte, error) {
	meta, err := chartMetadata(files)
	if err != nil {
		return nil, err
	}
	return registry.ChartTarball(meta.Name, files)
}
