{{/* Labels of every object. */}}
{{- define "slipway.labels" -}}
app.kubernetes.io/part-of: slipway
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels that select the pods of one Deployment: include "slipway.selectorLabels" (list . "slipway-webapp"). */}}
{{- define "slipway.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{/* Whether the controller named by the argument runs: include "slipway.enabled" (list . "webapp"). */}}
{{- define "slipway.enabled" -}}
{{- $root := index . 0 -}}
{{- if has (index . 1) $root.Values.controllers -}}true{{- end -}}
{{- end -}}

{{/*
The operator's Deployments, a YAML list (include "slipway.deployments" . | fromYamlArray) of
{name, serviceAccount, controllers}. By default one per controller in .Values.controllers, named
slipway-<controller>, with a ServiceAccount of the same name bound to the common roles and that
controller's alone, and a Lease and metrics Service of its own. With singleDeployment, one
Deployment slipway-operator runs every controller under .Values.serviceAccount.name.
*/}}
{{- define "slipway.deployments" -}}
{{- if .Values.singleDeployment }}
- name: slipway-operator
  serviceAccount: {{ .Values.serviceAccount.name }}
  controllers: {{ toJson .Values.controllers }}
{{- else }}
{{- range .Values.controllers }}
- name: slipway-{{ . }}
  serviceAccount: slipway-{{ . }}
  controllers: [{{ . }}]
{{- end }}
{{- end }}
{{- end -}}

{{/* The name of the Deployment that runs a controller: include "slipway.deploymentOf" (list . "webapp"). */}}
{{- define "slipway.deploymentOf" -}}
{{- $root := index . 0 -}}
{{- range $d := include "slipway.deployments" $root | fromYamlArray }}
{{- if has (index $ 1) $d.controllers }}{{ $d.name }}{{ end }}
{{- end }}
{{- end -}}

{{/*
The objects of one generated file under files/ (a copy of config/, written by `make manifests`),
one per document, each with the chart's labels. Roles of the operator's namespace (slipway-system
in config/) go to the release namespace, those of Catalyst's build and deployer namespaces to
their configured names; a webhook's Service reference to the release namespace.
*/}}
{{- define "slipway.generated" -}}
{{ include "slipway.generatedFrom" (list (index . 0) ((index . 0).Files.Get (index . 1))) }}
{{- end -}}

{{/* slipway.generated of a file's content: include "slipway.generatedFrom" (list . $content). */}}
{{- define "slipway.generatedFrom" -}}
{{- $root := index . 0 -}}
{{- range $doc := regexSplit "(?m)^---$" (index . 1) -1 }}
{{- $o := fromYaml $doc }}
{{- if $o.kind }}
{{- $meta := $o.metadata }}
{{- if eq ($meta.namespace | default "") "slipway-system" }}
{{- $_ := set $meta "namespace" $root.Release.Namespace }}
{{- else if eq ($meta.namespace | default "") "slipway-builds" }}
{{- $_ := set $meta "namespace" $root.Values.catalyst.buildNamespace.name }}
{{- else if eq ($meta.namespace | default "") "slipway-catalyst-deployers" }}
{{- $_ := set $meta "namespace" $root.Values.catalyst.deployerNamespace.name }}
{{- end }}
{{- $_ := set $meta "labels" (merge (dict) ($meta.labels | default dict) (include "slipway.labels" $root | fromYaml)) }}
{{- range $w := ($o.webhooks | default list) }}
{{- $_ := set $w.clientConfig.service "namespace" $root.Release.Namespace }}
{{- end }}
{{- if and (has $o.kind (list "MutatingWebhookConfiguration" "ValidatingWebhookConfiguration")) $root.Values.webhook.certManager.enabled }}
{{- $_ := set $meta "annotations" (dict "cert-manager.io/inject-ca-from" (printf "%s/slipway-webhook-cert" $root.Release.Namespace)) }}
{{- end }}
---
{{ toYaml $o }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
Subjects of the bindings of a role (files/rbac/<name>): include "slipway.subjects" (list . "webapp").
The ServiceAccount of every Deployment for the common role, that of the Deployment running the
controller for a controller's role.
*/}}
{{- define "slipway.subjects" -}}
{{- $root := index . 0 -}}
{{- $role := index . 1 -}}
{{- range $d := include "slipway.deployments" $root | fromYamlArray }}
{{- if or (eq $role "common") (has $role $d.controllers) }}
- kind: ServiceAccount
  name: {{ $d.serviceAccount }}
  namespace: {{ $root.Release.Namespace }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
A number as the operator's flags read it: YAML numbers arrive as float64, which the template
would print as 1e+06; whole numbers are printed as integers, others as they are.
*/}}
{{- define "slipway.number" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- end -}}
