package deploy

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestReplaceImage_MatchesRepositoryOrPlaceholder(t *testing.T) {
	img := Image{Repository: "registry.example.dev/org/app", Tag: "abc123"}
	for _, tc := range []struct {
		image, img, want string
		tag              string
		match            bool
	}{
		{image: "app", want: "registry.example.dev/org/app:abc123", match: true},
		{image: "app:latest", want: "registry.example.dev/org/app:abc123", match: true},
		{image: "registry.example.dev/org/app", want: "registry.example.dev/org/app:abc123", match: true},
		{image: "registry.example.dev/org/app:v1@sha256:0123", want: "registry.example.dev/org/app:abc123", match: true},
		{image: "registry.example.dev/org/app:v1", tag: "-", want: "registry.example.dev/org/app:v1", match: true},
		{image: "app@sha256:0123", tag: "-", want: "registry.example.dev/org/app@sha256:0123", match: true},
		{image: "registry.example.dev/org/app", tag: "sha256:feed", want: "registry.example.dev/org/app@sha256:feed", match: true},
		{image: "redis:7", want: "redis:7"},
		{image: "other.example.dev/org/app:v1", want: "other.example.dev/org/app:v1"},
		{image: "org/app", want: "org/app"},
		{image: "registry.example.dev/org/application", want: "registry.example.dev/org/application"},
		{image: "localhost:5000/app", want: "localhost:5000/app"},
		{image: "", want: ""},
		// Docker Hub names compare after normalisation.
		{image: "nginx:1.27", img: "docker.io/library/nginx", want: "docker.io/library/nginx:abc123", match: true},
		{image: "docker.io/library/nginx", img: "nginx", want: "nginx:abc123", match: true},
		// A registry with a port: the port is not a tag.
		{image: "localhost:5000/org/app:old", img: "localhost:5000/org/app", want: "localhost:5000/org/app:abc123", match: true},
	} {
		t.Run(tc.image, func(t *testing.T) {
			i := img
			if tc.img != "" {
				i.Repository = tc.img
			}
			switch tc.tag {
			case "-":
				i.Tag = ""
			case "":
			default:
				i.Tag = tc.tag
			}
			got, ok := replaceImage(tc.image, i)
			if got != tc.want || ok != tc.match {
				t.Errorf("replaceImage(%q, %v) = %q, %v; want %q, %v", tc.image, i, got, ok, tc.want, tc.match)
			}
		})
	}
}

func TestMergeEnv_ReplacesByNameAndAppends(t *testing.T) {
	existing := []any{
		map[string]any{"name": "A", "value": "1"},
		map[string]any{"name": "B", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
	}
	for _, tc := range []struct {
		name     string
		existing []any
		vars     []corev1.EnvVar
		want     []any
	}{
		{"append to none", nil, []corev1.EnvVar{{Name: "X", Value: "1"}},
			[]any{map[string]any{"name": "X", "value": "1"}}},
		{"replace in place and append", existing, []corev1.EnvVar{{Name: "B", Value: "2"}, {Name: "C", Value: "3"}},
			[]any{
				map[string]any{"name": "A", "value": "1"},
				map[string]any{"name": "B", "value": "2"},
				map[string]any{"name": "C", "value": "3"},
			}},
		{"valueFrom kept as given", nil,
			[]corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			[]any{map[string]any{"name": "P", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.name"}}}}},
		{"empty value", nil, []corev1.EnvVar{{Name: "E"}}, []any{map[string]any{"name": "E"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(tc.existing)
			got, err := mergeEnv(tc.existing, tc.vars)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if len(tc.existing) != before {
				t.Error("the existing list was modified")
			}
		})
	}
}

func TestHelmValues_DeepMergesInjectedValuesOverProjectValues(t *testing.T) {
	img := Image{Repository: "registry.example.dev/org/app", Tag: "abc"}
	for _, tc := range []struct {
		name    string
		project map[string]any
		img     Image
		host    string
		want    map[string]any
	}{
		{name: "nothing to inject", project: map[string]any{"a": 1}, want: map[string]any{"a": 1}},
		{name: "no project values", img: img, host: "pr-1.example.dev",
			want: map[string]any{
				"image":   map[string]any{"repository": "registry.example.dev/org/app", "tag": "abc"},
				"ingress": map[string]any{"host": "pr-1.example.dev"},
			}},
		{name: "maps merge, injected keys win",
			project: map[string]any{
				"image":   map[string]any{"repository": "registry.cluster.local/org/repo", "pullPolicy": "Always"},
				"ingress": map[string]any{"enabled": true, "host": "old.example.dev"},
			},
			img: img, host: "pr-1.example.dev",
			want: map[string]any{
				"image":   map[string]any{"repository": "registry.example.dev/org/app", "tag": "abc", "pullPolicy": "Always"},
				"ingress": map[string]any{"enabled": true, "host": "pr-1.example.dev"},
			}},
		{name: "a scalar is replaced by a map",
			project: map[string]any{"image": "nginx"}, img: Image{Repository: "r/app"},
			want: map[string]any{"image": map[string]any{"repository": "r/app"}}},
		{name: "a digest goes to image.digest",
			img:  Image{Repository: "r/app", Tag: "sha256:0123"},
			want: map[string]any{"image": map[string]any{"repository": "r/app", "digest": "sha256:0123"}}},
		{name: "env is the chart's own: left as it is",
			project: map[string]any{"env": "production", "extraEnvs": []any{map[string]any{"name": "A", "value": "1"}}},
			want:    map[string]any{"env": "production", "extraEnvs": []any{map[string]any{"name": "A", "value": "1"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before map[string]any
			if tc.project != nil {
				before = copyValue(tc.project).(map[string]any)
			}
			got := helmValues(tc.project, tc.img, tc.host)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
			if tc.project != nil && !reflect.DeepEqual(tc.project, before) {
				t.Errorf("the project's values were modified: %v", tc.project)
			}
		})
	}
}

// TestPostRenderer_InjectsEnvIntoEveryContainer: whatever a chart calls its variables (env,
// extraEnvs, extraEnv, none at all), the post-renderer sets the environment's variables on every
// container and init container of every workload, keeps the chart's own variables unless the
// Environment names them, leaves test hooks alone, and counts the containers.
func TestPostRenderer_InjectsEnvIntoEveryContainer(t *testing.T) {
	vars := []corev1.EnvVar{{Name: "DEBUG", Value: "true"}, {Name: "PORT", Value: "8080"}}
	for _, tc := range []struct {
		name string
		doc  string
		// want is the env of each container, in document order (init containers first).
		want  [][]any
		count int
	}{
		{name: "no env in the chart",
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: a, image: x}]}}}\n",
			want: [][]any{{env("DEBUG", "true"), env("PORT", "8080")}}, count: 1},
		{name: "null env (an empty template block)",
			doc:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: a, image: x, env: null}]}}}\n",
			want: [][]any{{env("DEBUG", "true"), env("PORT", "8080")}}, count: 1},
		{name: "the chart's own variables are kept, a named one replaced in place",
			doc:  "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {template: {spec: {containers: [{name: a, image: x, env: [{name: PORT, value: '9898'}, {name: LOG, value: json}]}]}}}\n",
			want: [][]any{{env("PORT", "8080"), env("LOG", "json"), env("DEBUG", "true")}}, count: 1},
		{name: "init containers, sidecars and every workload kind",
			doc: "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {schedule: '@daily', jobTemplate: {spec: {template: {spec: {initContainers: [{name: i, image: x}], containers: [{name: a, image: x}, {name: b, image: y}]}}}}}\n" +
				"---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds}\nspec: {template: {spec: {containers: [{name: a, image: x}]}}}\n" +
				"---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, image: x}]}\n",
			want: [][]any{
				{env("DEBUG", "true"), env("PORT", "8080")}, {env("DEBUG", "true"), env("PORT", "8080")}, {env("DEBUG", "true"), env("PORT", "8080")},
				{env("DEBUG", "true"), env("PORT", "8080")}, {env("DEBUG", "true"), env("PORT", "8080")},
			}, count: 5},
		{name: "a pre-install hook gets them, a test hook does not",
			doc: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate, annotations: {helm.sh/hook: pre-install}}\nspec: {template: {spec: {containers: [{name: a, image: x}]}}}\n" +
				"---\napiVersion: v1\nkind: Pod\nmetadata: {name: t, annotations: {helm.sh/hook: test}}\nspec: {containers: [{name: a, image: x}]}\n",
			want:  [][]any{{env("DEBUG", "true"), env("PORT", "8080")}, nil},
			count: 1},
		{name: "not a workload", doc: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: env}\ndata: {env: x}\n", count: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &postRenderer{req: Request{Namespace: "env-1", Env: vars}, scope: scope}
			out, err := p.Run(bytes.NewBufferString(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			ms, err := parseManifests("out", out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			var got [][]any
			for _, m := range ms {
				path := podSpecPath(m.obj.GroupVersionKind().GroupKind())
				if path == nil {
					continue
				}
				for _, field := range []string{"initContainers", "containers"} {
					cs, _, _ := unstructured.NestedSlice(m.obj.Object, append(append([]string{}, path...), field)...)
					for _, c := range cs {
						e, _ := c.(map[string]any)["env"].([]any)
						got = append(got, e)
					}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env\n got %v\nwant %v", got, tc.want)
			}
			if p.envContainers != tc.count {
				t.Errorf("counted %d containers, want %d", p.envContainers, tc.count)
			}
		})
	}

	t.Run("env that is not a list is an error naming it", func(t *testing.T) {
		p := &postRenderer{req: Request{Namespace: "env-1", Env: vars}, scope: scope}
		_, err := p.Run(bytes.NewBufferString("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: a, image: x, env: {A: b}}]}}}\n"))
		if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "spec.template.spec.containers[0].env is not a list") {
			t.Errorf("got %v, want ErrInvalidManifest naming the env field", err)
		}
	})
}

func env(name, value string) any { return map[string]any{"name": name, "value": value} }

// scope is a fixed answer of the REST mapper for the kinds of these tests.
func scope(gvk schema.GroupVersionKind) (bool, error) {
	switch gvk.Kind {
	case "ClusterRole", "Namespace":
		return false, nil
	case "Widget":
		return false, ErrRefusedObject
	}
	return true, nil
}

func TestPrepare_SetsNamespaceLabelsAndRefusesEscapes(t *testing.T) {
	req := Request{
		Namespace: "env-1", Release: "pr-1",
		Image:  Image{Repository: "registry.example.dev/org/app", Tag: "abc"},
		Env:    []corev1.EnvVar{{Name: "DEBUG", Value: "true"}},
		Labels: map[string]string{"catalyst.dev/environment": "pr-1"},
		Reserved: []Reserved{
			{GroupKind: schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, Name: "preview"},
			{GroupKind: schema.GroupKind{Kind: "Secret"}, Name: "pull"},
		},
	}
	parse := func(t *testing.T, doc string) []manifest {
		t.Helper()
		ms, err := parseManifests("test.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}

	t.Run("workloads get image and env, every object namespace and labels", func(t *testing.T) {
		ms := parse(t, `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, labels: {team: a, catalyst.dev/environment: wrong}}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          initContainers: [{name: migrate, image: "app:latest"}]
          containers:
          - {name: app, image: app, env: [{name: DEBUG, value: "false"}, {name: KEEP, value: "1"}]}
          - {name: cache, image: "redis:7"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: env-1}
`)
		if n, err := prepare(ms, req, scope, prepareOptions{inject: true, release: "pr-1"}); err != nil || n != 3 {
			t.Fatalf("prepare: %d containers, %v; want 3", n, err)
		}
		cron := ms[0].obj
		if cron.GetNamespace() != "env-1" || ms[1].obj.GetNamespace() != "env-1" {
			t.Errorf("namespaces %q %q", cron.GetNamespace(), ms[1].obj.GetNamespace())
		}
		wantLabels := map[string]string{"team": "a", "catalyst.dev/environment": "pr-1"}
		if !reflect.DeepEqual(cron.GetLabels(), wantLabels) {
			t.Errorf("labels %v, want %v", cron.GetLabels(), wantLabels)
		}
		if cron.GetAnnotations()[ReleaseAnnotation] != "pr-1" {
			t.Errorf("annotations %v", cron.GetAnnotations())
		}
		spec := []string{"spec", "jobTemplate", "spec", "template", "spec"}
		containers, _, _ := unstructured.NestedSlice(cron.Object, append(spec, "containers")...)
		inits, _, _ := unstructured.NestedSlice(cron.Object, append(spec, "initContainers")...)
		app, cache, migrate := containers[0].(map[string]any), containers[1].(map[string]any), inits[0].(map[string]any)
		if app["image"] != "registry.example.dev/org/app:abc" || migrate["image"] != "registry.example.dev/org/app:abc" {
			t.Errorf("images %v %v", app["image"], migrate["image"])
		}
		if cache["image"] != "redis:7" {
			t.Errorf("the sidecar's image became %v", cache["image"])
		}
		wantEnv := []any{map[string]any{"name": "DEBUG", "value": "true"}, map[string]any{"name": "KEEP", "value": "1"}}
		if !reflect.DeepEqual(app["env"], wantEnv) {
			t.Errorf("env %v, want %v", app["env"], wantEnv)
		}
		if !reflect.DeepEqual(cache["env"], []any{map[string]any{"name": "DEBUG", "value": "true"}}) {
			t.Errorf("sidecar env %v", cache["env"])
		}
	})

	t.Run("ingresses and routes get the host", func(t *testing.T) {
		ms := parse(t, `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  tls: [{hosts: [app.example.dev, www.example.dev], secretName: tls}]
  rules:
  - host: app.example.dev
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}
  - http: {paths: [{path: /api, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web}
spec: {hostnames: [app.example.dev], rules: [{backendRefs: [{name: app, port: 80}]}]}
`)
		r := req
		r.Host = "pr-1.preview.example.dev"
		if _, err := prepare(ms, r, scope, prepareOptions{inject: true}); err != nil {
			t.Fatal(err)
		}
		rules, _, _ := unstructured.NestedSlice(ms[0].obj.Object, "spec", "rules")
		tls, _, _ := unstructured.NestedSlice(ms[0].obj.Object, "spec", "tls")
		hostnames, _, _ := unstructured.NestedStringSlice(ms[1].obj.Object, "spec", "hostnames")
		for i, rule := range rules {
			if h := rule.(map[string]any)["host"]; h != r.Host {
				t.Errorf("rule %d host %v", i, h)
			}
		}
		if hosts := tls[0].(map[string]any)["hosts"]; !reflect.DeepEqual(hosts, []any{r.Host}) || tls[0].(map[string]any)["secretName"] != "tls" {
			t.Errorf("tls %v", tls[0])
		}
		if !reflect.DeepEqual(hostnames, []string{r.Host}) {
			t.Errorf("route hostnames %v", hostnames)
		}
	})

	for _, tc := range []struct {
		name, doc string
		want      error
		wantInMsg string
	}{
		{"cluster-scoped", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n",
			ErrRefusedObject, "ClusterRole.rbac.authorization.k8s.io/r (test.yaml, document 1) is cluster-scoped"},
		{"namespace object", "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n", ErrRefusedObject, "Namespace/other"},
		{"other namespace", "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: default}\n",
			ErrRefusedObject, "Service/s (test.yaml, document 1) is for namespace default"},
		{"kind not served", "apiVersion: example.dev/v1\nkind: Widget\nmetadata: {name: w}\n", ErrRefusedObject, ""},
		{"duplicate", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
			ErrInvalidManifest, "Service/s is defined twice (test.yaml, document 1 and test.yaml, document 2)"},
		{"reserved inventory name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: catalyst-inventory-pr-1}\n",
			ErrRefusedObject, "reserved"},
		{"quota", "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: more}\nspec: {hard: {cpu: '100'}}\n",
			ErrRefusedObject, "ResourceQuota/more (test.yaml, document 1) is a guard rail: the environment's quota, limits and network policy are the operator's"},
		{"limit range", "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l}\n", ErrRefusedObject, "LimitRange/l"},
		{"network policy", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: allow-all}\nspec: {podSelector: {}}\n",
			ErrRefusedObject, "NetworkPolicy.networking.k8s.io/allow-all"},
		{"reserved Ingress", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: preview}\n",
			ErrRefusedObject, "Ingress.networking.k8s.io/preview (test.yaml, document 1) takes a name the operator keeps"},
		{"reserved Secret", "apiVersion: v1\nkind: Secret\nmetadata: {name: pull}\n", ErrRefusedObject, "Secret/pull"},
		{"containers not a list", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: {a: b}}}}\n",
			ErrInvalidManifest, "spec.template.spec.containers is not a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prepare(parse(t, tc.doc), req, scope, prepareOptions{inject: true, release: "pr-1", reserved: InventoryName("pr-1")})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Errorf("got %v, want %v with %q", err, tc.want, tc.wantInMsg)
			}
		})
	}
}

func TestParseManifests(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string // Kind/name
		wantErr   string
	}{
		{"multi-document with comments and empty documents",
			"# header\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n# only a comment\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n",
			[]string{"ConfigMap/a", "Service/b"}, ""},
		{"json", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}`, []string{"ConfigMap/j"}, ""},
		{"list", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n",
			[]string{"ConfigMap/a", "Secret/s"}, ""},
		{"empty", "", nil, ""},
		{"scalar", "just a string\n", nil, "test.yaml, document 1: not a Kubernetes object"},
		{"sequence", "- a\n- b\n", nil, "not a Kubernetes object"},
		{"bad yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkey: [unclosed\n", nil, "test.yaml, document 2: "},
		{"no apiVersion", "kind: ConfigMap\nmetadata: {name: a}\n", nil, "no apiVersion"},
		{"no name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: a-}\n", nil, "generateName is not supported"},
		{"metadata not a map", "apiVersion: v1\nkind: ConfigMap\nmetadata: a\n", nil, "ConfigMap has no metadata"},
		{"labels not strings", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {k: 1}}\n", nil, "metadata.labels[k] is not a string"},
		{"list item not an object", "apiVersion: v1\nkind: List\nitems: [a]\n", nil, "item 1 of the List is not an object"},
		{"kustomization", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\n", nil, "use deployment type kustomize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := parseManifests("test.yaml", []byte(tc.doc))
			if tc.wantErr != "" {
				if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got %v, want ErrInvalidManifest with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.obj.GetKind()+"/"+m.obj.GetName())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsRemote_MirrorsKustomize(t *testing.T) {
	for ref, want := range map[string]bool{
		"../base":                          false,
		"base":                             false,
		"deployment.yaml":                  false,
		"github.example.dev/base":          false,
		"my@file.yaml":                     false, // no path after the host: kustomize reads the file
		"https://github.com/org/repo//app": true,
		"HTTP://example.dev/x.yaml":        true,
		"ssh://git@example.dev/org/repo":   true,
		"file:///etc/passwd":               true,
		"git::https://example.dev/org/r":   true,
		"github.com/org/repo/app?ref=v1":   true,
		"github.com:org/repo":              true,
		"git@gitlab.com:org/repo.git//app": true,
		"https:/example.dev/x.yaml":        true, // url.Parse takes it for http
		"gcs:bucket/x":                     true,
	} {
		if got := isRemote(ref); got != want {
			t.Errorf("isRemote(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestReason_AndStalled(t *testing.T) {
	for _, tc := range []struct {
		err     error
		reason  string
		stalled bool
	}{
		{ErrPathNotFound, "DeploymentPathNotFound", true},
		{ErrInvalidChart, "RenderFailed", true},
		{ErrInvalidManifest, "RenderFailed", true},
		{ErrKustomizeBuild, "RenderFailed", true},
		{ErrRefusedObject, "ObjectRefused", true},
		{ErrInvalidRequest, "RenderFailed", true},
		{ErrApplyRejected, "DeploymentFailed", true},
		{ErrApplyConflict, "DeploymentFailed", false},
		{ErrHelmRelease, "DeploymentFailed", false},
		{errors.New("connection refused"), "DeploymentFailed", false},
	} {
		if got := Reason(tc.err); got != tc.reason || Stalled(tc.err) != tc.stalled {
			t.Errorf("%v: reason %s stalled %v, want %s %v", tc.err, got, Stalled(tc.err), tc.reason, tc.stalled)
		}
	}
}
