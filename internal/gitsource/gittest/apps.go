package gittest

import (
	"path"
	"strings"
)

// The sample application: a Deployment named app running the image "app" (replaced by the
// deployer with the built image) on port 8080, and a Service named app on port 80. Its pods meet
// the restricted Pod Security standard, which environment namespaces enforce: a numeric non-root
// user, the runtime's default seccomp profile, no privilege escalation, no capability, and a
// read-only root filesystem (the sample serves files and writes none). A pod is ready once it
// accepts connections on its port (a readiness probe), so a Deployment the deployer reads as
// available, and a Service's endpoints, answer at once on a real node.

// HelmChart returns a Helm chart at dir named name: Chart.yaml, values.yaml (image.repository,
// image.tag, env, service.port) and templates for the Deployment and the Service.
func HelmChart(dir, name string) Files {
	return Files{
		path.Join(dir, "Chart.yaml"): []byte(`apiVersion: v2
name: ` + name + `
description: A sample application for Catalyst tests
type: application
version: 0.1.0
appVersion: "1.0.0"
`),
		path.Join(dir, "values.yaml"): []byte(`image:
  repository: app
  tag: latest
env: {}
service:
  port: 80
`),
		path.Join(dir, "templates", "deployment.yaml"): []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}
  labels: {app.kubernetes.io/name: {{ .Chart.Name }}, app.kubernetes.io/instance: {{ .Release.Name }}}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: {{ .Chart.Name }}, app.kubernetes.io/instance: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: {{ .Chart.Name }}, app.kubernetes.io/instance: {{ .Release.Name }}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: http}, periodSeconds: 2}
        env:
        {{- range $k, $v := .Values.env }}
        - {name: {{ $k | quote }}, value: {{ $v | toString | quote }}}
        {{- end }}
        resources:
          requests: {cpu: 10m, memory: 16Mi}
          limits: {cpu: 100m, memory: 64Mi}
`),
		path.Join(dir, "templates", "service.yaml"): []byte(`apiVersion: v1
kind: Service
metadata:
  name: {{ .Chart.Name }}
spec:
  selector: {app.kubernetes.io/name: {{ .Chart.Name }}, app.kubernetes.io/instance: {{ .Release.Name }}}
  ports: [{name: http, port: {{ .Values.service.port }}, targetPort: http}]
`),
	}
}

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels: {app.kubernetes.io/name: app}
spec:
  replicas: 1
  selector:
    matchLabels: {app.kubernetes.io/name: app}
  template:
    metadata:
      labels: {app.kubernetes.io/name: app}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: app
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: http}, periodSeconds: 2}
        resources:
          requests: {cpu: 10m, memory: 16Mi}
          limits: {cpu: 100m, memory: 64Mi}
`

const serviceYAML = `apiVersion: v1
kind: Service
metadata:
  name: app
spec:
  selector: {app.kubernetes.io/name: app}
  ports: [{name: http, port: 80, targetPort: http}]
`

// Manifests returns plain manifests in dir: deployment.yaml and service.yaml.
func Manifests(dir string) Files {
	return Files{
		path.Join(dir, "deployment.yaml"): []byte(deploymentYAML),
		path.Join(dir, "service.yaml"):    []byte(serviceYAML),
	}
}

// Kustomization returns a base (dir/base: the Deployment and the Service) and an overlay
// (dir/overlays/preview: a kustomization that uses the base, sets a common label and names the
// image "app" so a deployer can replace it). Point a deployment at dir/overlays/preview.
func Kustomization(dir string) Files {
	base := path.Join(dir, "base")
	overlay := path.Join(dir, "overlays", "preview")
	return Files{
		path.Join(base, "deployment.yaml"): []byte(deploymentYAML),
		path.Join(base, "service.yaml"):    []byte(serviceYAML),
		path.Join(base, "kustomization.yaml"): []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
- service.yaml
`),
		path.Join(overlay, "kustomization.yaml"): []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../base
labels:
- pairs: {app.kubernetes.io/part-of: catalyst-sample}
images:
- name: app
  newTag: latest
`),
	}
}

// Dockerfile returns a minimal Dockerfile at p (for build tests).
func Dockerfile(p string) Files {
	return Files{p: []byte(strings.TrimSpace(`
FROM busybox:1.36
COPY . /app
CMD ["httpd", "-f", "-p", "8080", "-h", "/app"]
`) + "\n")}
}
