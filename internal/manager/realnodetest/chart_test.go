//go:build e2e

package realnodetest

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// chartName is the test operator's chart; its objects are named <release>-widget-operator.
const chartName = "widget-operator"

// version is one chart version of the test operator and how it behaves.
type version struct {
	Version string
	// Mode is the program's --mode: ok, crash or unready.
	Mode string
	// FailAfter, when set, is this version's --fail-after (default chartEnv.FailAfter).
	FailAfter string
	// WebhookSelectsNothing gives the webhook Service a selector that matches no pod (a label
	// typo in the chart): the Service never has a ready endpoint.
	WebhookSelectsNothing bool
}

// chartEnv is what every version's values carry: the image, the API server's address for the
// pods (no kube-proxy: the gateway, not the kubernetes Service) and the webhook's certificate.
type chartEnv struct {
	Image            string
	APIHost, APIPort string
	CACert           []byte
	Cert, Key        []byte
	// FailAfter is when a broken version fails after its start (--fail-after).
	FailAfter string
}

// operatorChart is the test operator's chart at v: the Widget CRD, a ServiceAccount with RBAC,
// the webhook's certificate Secret, the Deployment (probes, restricted security context), the
// metrics and webhook Services and the ValidatingWebhookConfiguration.
func operatorChart(v version, env chartEnv) charttest.ChartFiles {
	// RELEASE is replaced with the release's name by the template.
	selector := map[string]string{"app.kubernetes.io/instance": "RELEASE"}
	if v.WebhookSelectsNothing {
		selector = map[string]string{"app.kubernetes.io/instance": "RELEASE", "app.kubernetes.io/name": "widget-operatr"}
	}
	failAfter := env.FailAfter
	if v.FailAfter != "" {
		failAfter = v.FailAfter
	}
	values := map[string]any{
		"image": env.Image, "mode": v.Mode, "failAfter": failAfter, "apiHost": env.APIHost, "apiPort": env.APIPort,
		"caBundle": env.CACert, "tlsCert": string(env.Cert), "tlsKey": string(env.Key), "webhookSelector": selector,
	}
	vals, err := yaml.Marshal(values)
	if err != nil {
		panic(err)
	}
	return charttest.ChartFiles{
		"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\nappVersion: %q\ndescription: the real node's test operator\ntype: application\n",
			chartName, v.Version, "v"+v.Version),
		"values.yaml":             string(vals),
		"crds/widgets.yaml":       charttest.YAML(charttest.Widget(charttest.Base)),
		"templates/_helpers.tpl":  `{{- define "op.name" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}` + "\n",
		"templates/access.yaml":   access,
		"templates/workload.yaml": workload,
		"templates/services.yaml": services,
	}
}

const access = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "op.name" . }}
  namespace: {{ .Release.Namespace }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "op.name" . }}
rules:
- apiGroups: ["charttest.slipway.dev"]
  resources: ["widgets", "widgets/status"]
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
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "op.name" . }}-tls
  namespace: {{ .Release.Namespace }}
type: kubernetes.io/tls
stringData:
  tls.crt: {{ .Values.tlsCert | quote }}
  tls.key: {{ .Values.tlsKey | quote }}
`

// workload is the operator's Deployment. Its pods are restricted (non-root, read-only root, no
// capabilities) and talk to the API server at the node's gateway: there is no kube-proxy, so the
// kubernetes Service's ClusterIP leads nowhere from a pod.
const workload = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "op.name" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
        app.kubernetes.io/version: {{ .Chart.Version | quote }}
    spec:
      serviceAccountName: {{ include "op.name" . }}
      terminationGracePeriodSeconds: 2
      securityContext:
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      containers:
      - name: manager
        image: {{ .Values.image }}
        imagePullPolicy: Never
        args: ["--mode={{ .Values.mode }}", "--fail-after={{ .Values.failAfter }}", "--version={{ .Chart.Version }}"]
        env:
        - name: KUBERNETES_SERVICE_HOST
          value: {{ .Values.apiHost | quote }}
        - name: KUBERNETES_SERVICE_PORT
          value: {{ .Values.apiPort | quote }}
        - name: POD_NAMESPACE
          valueFrom:
            fieldRef:
              fieldPath: metadata.namespace
        ports:
        - {name: metrics, containerPort: 8080}
        - {name: probes, containerPort: 8081}
        - {name: webhook, containerPort: 9443}
        livenessProbe:
          httpGet: {path: /healthz, port: probes}
          periodSeconds: 2
          failureThreshold: 3
        readinessProbe:
          httpGet: {path: /readyz, port: probes}
          periodSeconds: 1
          failureThreshold: 1
        terminationMessagePolicy: FallbackToLogsOnError
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities:
            drop: ["ALL"]
        volumeMounts:
        - {name: tls, mountPath: /tls, readOnly: true}
      volumes:
      - name: tls
        secret:
          secretName: {{ include "op.name" . }}-tls
`

// services are the metrics Service (read by the health check through the API server's Service
// proxy), the webhook Service (its selector from the values) and the webhook's configuration.
const services = `apiVersion: v1
kind: Service
metadata:
  name: {{ include "op.name" . }}-metrics
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  selector:
    app.kubernetes.io/instance: {{ .Release.Name }}
  ports:
  - {name: http-metrics, port: 8080, targetPort: metrics}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "op.name" . }}-webhook
  namespace: {{ .Release.Namespace }}
spec:
  selector:
{{ toYaml .Values.webhookSelector | replace "RELEASE" .Release.Name | indent 4 }}
  ports:
  - {port: 443, targetPort: webhook}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {{ include "op.name" . }}
  labels:
    app.kubernetes.io/instance: {{ .Release.Name }}
webhooks:
- name: widgets.charttest.slipway.dev
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig:
    caBundle: {{ .Values.caBundle }}
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
