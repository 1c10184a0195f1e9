{{/* The chart's name. */}}
{{- define "slipway-manager.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Objects' name: the release name when it holds the chart's name, else <release>-<chart>. */}}
{{- define "slipway-manager.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "slipway-manager.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object. */}}
{{- define "slipway-manager.labels" -}}
{{ include "slipway-manager.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: slipway
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels that select the manager's pods. */}}
{{- define "slipway-manager.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slipway-manager.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "slipway-manager.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "slipway-manager.fullname" .) -}}
{{- end -}}

{{/* The replicas: the value, else 1 with SQLite and 3 with PostgreSQL. */}}
{{- define "slipway-manager.replicas" -}}
{{- if .Values.replicas -}}{{ int .Values.replicas }}{{- else if eq .Values.database.engine "sqlite" -}}1{{- else -}}3{{- end -}}
{{- end -}}

{{/* The Secret the API's certificate is read from. */}}
{{- define "slipway-manager.tlsSecretName" -}}
{{- .Values.tls.secretName | default (printf "%s-tls" (include "slipway-manager.fullname" .)) -}}
{{- end -}}

{{/* The SQLite volume's claim. */}}
{{- define "slipway-manager.claimName" -}}
{{- .Values.database.sqlite.existingClaim | default (printf "%s-data" (include "slipway-manager.fullname" .)) -}}
{{- end -}}

{{/* http or https: how the API serves. */}}
{{- define "slipway-manager.scheme" -}}
{{- if .Values.tls.insecureHTTP -}}http{{- else -}}https{{- end -}}
{{- end -}}

{{/* Where the manager's files are mounted; the args name them. */}}
{{- define "slipway-manager.paths" -}}
data: /var/lib/slipway-manager
database: /var/lib/slipway-manager/manager.db
keys: /etc/slipway-manager/keys
jwt: /etc/slipway-manager/jwt
tls: /etc/slipway-manager/tls
smtpCA: /etc/slipway-manager/smtp-ca
{{- end -}}

{{/*
The values the manager would refuse, or that would lose data, refused at install with what to
do instead. The schema checks types and enums; this checks what depends on several values.
*/}}
{{- define "slipway-manager.validate" -}}
{{- $v := .Values -}}
{{- if eq .Release.Namespace "slipway-manager" -}}
{{- fail "the namespace slipway-manager is the manager's own identity namespace in the clusters it manages, deleted when a cluster is removed from the manager: install into another namespace, e.g. slipway-manager-system" -}}
{{- end -}}
{{- if and (eq $v.database.engine "sqlite") (gt (int (include "slipway-manager.replicas" .)) 1) -}}
{{- fail (printf "replicas is %s but SQLite is one process per file: use replicas 1 with database.engine sqlite, or database.engine postgres for several" (include "slipway-manager.replicas" .)) -}}
{{- end -}}
{{- if and (eq $v.database.engine "postgres") (not $v.database.postgres.urlSecret.name) -}}
{{- fail "database.engine postgres needs database.postgres.urlSecret.name: a Secret whose key (database.postgres.urlSecret.key) holds the postgres:// URL" -}}
{{- end -}}
{{- if not $v.encryptionKeys.secretName -}}
{{- fail "encryptionKeys.secretName is required: a Secret whose key (encryptionKeys.key) holds the encryption key file (manager gen-key prints a line)" -}}
{{- end -}}
{{- if not (or $v.auth.jwtSecret.name $v.auth.oidc.issuerURL) -}}
{{- fail "no way to verify tokens: set auth.jwtSecret.name (a Secret with an HS256 secret) and/or auth.oidc.issuerURL with auth.oidc.audience" -}}
{{- end -}}
{{- if and $v.auth.oidc.issuerURL (not $v.auth.oidc.audience) -}}
{{- fail "auth.oidc.audience is required with auth.oidc.issuerURL" -}}
{{- end -}}
{{- if and $v.ui.oidcClientID (not $v.auth.oidc.issuerURL) -}}
{{- fail "ui.oidcClientID needs auth.oidc.issuerURL: the issuer the web UI signs in at" -}}
{{- end -}}
{{- if eq (or $v.tls.secretName $v.tls.certManager.enabled | empty) (not $v.tls.insecureHTTP) -}}
{{- fail "say how the API serves: tls.secretName (a kubernetes.io/tls Secret), tls.certManager.enabled, or tls.insecureHTTP behind a TLS-terminating proxy (exactly one; certManager may name its Secret with tls.secretName)" -}}
{{- end -}}
{{- if and $v.tls.certManager.enabled (not $v.tls.certManager.issuerRef.name) -}}
{{- fail "tls.certManager.enabled needs tls.certManager.issuerRef, e.g. {kind: ClusterIssuer, name: my-ca}" -}}
{{- end -}}
{{- if and $v.mail.smtpAddress (not (and $v.mail.from $v.mail.recipients $v.publicURL)) -}}
{{- fail "mail.smtpAddress needs mail.from, mail.recipients and publicURL (the links in approval mail)" -}}
{{- end -}}
{{- if and $v.mail.recipients (not $v.mail.smtpAddress) -}}
{{- fail "mail.recipients needs mail.smtpAddress" -}}
{{- end -}}
{{- if and $v.mail.username (not $v.mail.passwordSecret.name) -}}
{{- fail "mail.username needs mail.passwordSecret.name: the Secret holding the SMTP password" -}}
{{- end -}}
{{- if and $v.ingress.enabled (not $v.ingress.hosts) -}}
{{- fail "ingress.enabled needs ingress.hosts" -}}
{{- end -}}
{{- end -}}

{{/* The image: repository:tag, or repository@sha256:… when the tag is a digest. */}}
{{- define "slipway-manager.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- printf "%s%s%s" .Values.image.repository (hasPrefix "sha256:" $tag | ternary "@" ":") $tag | quote -}}
{{- end -}}

{{/* The volumes both containers mount: scratch space, and SQLite's data. */}}
{{- define "slipway-manager.dataMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if eq .Values.database.engine "sqlite" }}
- name: data
  mountPath: {{ (include "slipway-manager.paths" . | fromYaml).data }}
{{- end }}
{{- end -}}

{{/*
`manager serve`'s arguments (docs/manager.md, Commands). Values left empty (or 0) leave the
manager's defaults, which values.yaml repeats (TestManagerChart_DefaultsAreTheManagers); secrets
are files or environment variables, never arguments. --replica-id is left to its default, the
pod's host name (the pod's name) with a random suffix.
*/}}
{{- define "slipway-manager.serveArgs" -}}
{{- $p := include "slipway-manager.paths" . | fromYaml -}}
{{- $v := .Values -}}
- serve
- --address=:8443
- --metrics-address={{ if $v.metrics.enabled }}:{{ $v.metrics.port }}{{ else }}0{{ end }}
# The init container migrates (migration.enabled) or you do: serve never changes the schema.
- --migrate=false
{{- if eq $v.database.engine "sqlite" }}
- --database-path={{ $p.database }}
{{- end }}
- --encryption-key-file={{ $p.keys }}/keys
{{- if $v.auth.jwtSecret.name }}
- --jwt-secret-file={{ $p.jwt }}/secret
{{- end }}
{{- with $v.auth.oidc.issuerURL }}
- {{ printf "--oidc-issuer-url=%s" . | quote }}
- {{ printf "--oidc-audience=%s" $v.auth.oidc.audience | quote }}
{{- end }}
{{- with $v.auth.roleClaim }}
- {{ printf "--role-claim=%s" . | quote }}
{{- end }}
{{- with $v.auth.leeway }}
- --jwt-leeway={{ . }}
{{- end }}
{{- if $v.tls.insecureHTTP }}
- --insecure-http=true
{{- else }}
- --tls-cert-file={{ $p.tls }}/tls.crt
- --tls-key-file={{ $p.tls }}/tls.key
{{- end }}
{{- with $v.publicURL }}
- {{ printf "--public-url=%s" . | quote }}
{{- end }}
{{- if not $v.ui.enabled }}
- --ui=false
{{- end }}
{{- with $v.ui.oidcClientID }}
- {{ printf "--ui-oidc-client-id=%s" . | quote }}
{{- end }}
{{- with $v.ui.oidcScopes }}
- {{ printf "--ui-oidc-scopes=%s" . | quote }}
{{- end }}
{{- with $v.ui.sessionTTL }}
- --ui-session-ttl={{ . }}
{{- end }}
{{- with $v.ui.connectSrc }}
- {{ printf "--ui-connect-src=%s" (join "," .) | quote }}
{{- end }}
{{- with $v.approvals.environments }}
- {{ printf "--approval-environments=%s" . | quote }}
{{- end }}
{{- with $v.approvals.upgradeLevel }}
- --approval-upgrade-level={{ . }}
{{- end }}
{{- with $v.approvals.counts }}
- {{ printf "--approval-counts=%s" . | quote }}
{{- end }}
{{- with $v.approvals.ttl }}
- --approval-ttl={{ . }}
{{- end }}
{{- with $v.mail.smtpAddress }}
- --smtp-address={{ . }}
- {{ printf "--smtp-from=%s" $v.mail.from | quote }}
- {{ printf "--approval-recipients=%s" $v.mail.recipients | quote }}
{{- end }}
{{- with $v.mail.username }}
- {{ printf "--smtp-username=%s" . | quote }}
{{- end }}
{{- if $v.mail.caSecret.name }}
- --smtp-ca-file={{ $p.smtpCA }}/ca.crt
{{- end }}
{{- with $v.notifications.timeout }}
- --notification-timeout={{ . }}
{{- end }}
{{- with $v.notifications.retryFor }}
- --notification-retry-for={{ . }}
{{- end }}
{{- with $v.notifications.maxAttempts }}
- --notification-max-attempts={{ int64 . }}
{{- end }}
{{- with $v.notifications.maxPerChannel }}
- --notification-max-per-channel={{ int64 . }}
{{- end }}
{{- with $v.rollouts.maxConcurrentDeployments }}
- --max-concurrent-deployments={{ int64 . }}
{{- end }}
{{- with $v.rollouts.maxParallelInstalls }}
- --max-parallel-installs={{ int64 . }}
{{- end }}
{{- with $v.rollouts.installTimeout }}
- --install-timeout={{ . }}
{{- end }}
{{- with $v.rollouts.deploymentLease }}
- --deployment-lease={{ . }}
{{- end }}
{{- with $v.rollouts.rollbackAfterFailures }}
- --rollback-after-failures={{ int64 . }}
{{- end }}
{{- with $v.rollouts.blueRetention }}
- --blue-retention={{ . }}
{{- end }}
{{- with $v.rollouts.switchMonitor }}
- --switch-monitor={{ . }}
{{- end }}
{{- with $v.rollouts.bakeWindow }}
- --bake-window={{ . }}
{{- end }}
{{- with $v.clusterHealthInterval }}
- --cluster-health-interval={{ . }}
{{- end }}
{{- with $v.clusterHealthConcurrency }}
- --cluster-health-concurrency={{ int64 . }}
{{- end }}
{{- with $v.operatorHealthInterval }}
- --operator-health-interval={{ . }}
{{- end }}
{{- with $v.maxBodyBytes }}
- --max-body-bytes={{ int64 . }}
{{- end }}
{{- with $v.requestTimeout }}
- --request-timeout={{ . }}
{{- end }}
- --log-level={{ $v.logLevel }}
- --log-format={{ $v.logFormat }}
{{- with $v.otlpEndpoint }}
- {{ printf "--otlp-endpoint=%s" . | quote }}
{{- end }}
{{- with $v.plainHTTPRegistries }}
- {{ printf "--plain-http-registries=%s" (join "," .) | quote }}
{{- end }}
{{- with $v.rateLimits }}
- {{ printf "--rate-limits=%s" . | quote }}
{{- end }}
- --operator-refresh-interval={{ $v.operatorRefreshInterval }}
{{- with $v.operatorRefreshConcurrency }}
- --operator-refresh-concurrency={{ int64 . }}
{{- end }}
- --shutdown-grace={{ $v.shutdownGrace }}
{{- range $v.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}
