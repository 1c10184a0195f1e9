{{/* Labels of every object. */}}
{{- define "slipway.labels" -}}
app.kubernetes.io/part-of: slipway
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels that select the operator pods. */}}
{{- define "slipway.selectorLabels" -}}
app.kubernetes.io/name: slipway-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Whether the controller named by the argument runs: include "slipway.enabled" (list . "webapp"). */}}
{{- define "slipway.enabled" -}}
{{- $root := index . 0 -}}
{{- if has (index . 1) $root.Values.controllers -}}true{{- end -}}
{{- end -}}

{{/*
The objects of one generated file under files/ (a copy of config/, written by `make manifests`),
one per document, each with the chart's labels. Roles of the operator's namespace (slipway-system
in config/) go to the release namespace, those of Catalyst's build namespace to its configured
name; a webhook's Service reference to the release namespace.
*/}}
{{- define "slipway.generated" -}}
{{- $root := index . 0 -}}
{{- range $doc := regexSplit "(?m)^---$" ($root.Files.Get (index . 1)) -1 }}
{{- $o := fromYaml $doc }}
{{- if $o.kind }}
{{- $meta := $o.metadata }}
{{- if eq ($meta.namespace | default "") "slipway-system" }}
{{- $_ := set $meta "namespace" $root.Release.Namespace }}
{{- else if eq ($meta.namespace | default "") "slipway-builds" }}
{{- $_ := set $meta "namespace" $root.Values.catalyst.buildNamespace.name }}
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

{{/* Subjects of the operator's bindings. */}}
{{- define "slipway.subjects" -}}
- kind: ServiceAccount
  name: {{ .Values.serviceAccount.name }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{/*
A number as the operator's flags read it: YAML numbers arrive as float64, which the template
would print as 1e+06; whole numbers are printed as integers, others as they are.
*/}}
{{- define "slipway.number" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- end -}}
