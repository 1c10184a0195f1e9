package deploy

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReleaseAnnotation is put on every object of a manifest or kustomize deploy, with the release
// name: pruning and Uninstall delete only objects that still carry it.
const ReleaseAnnotation = "catalyst.dev/release"

// scopeFunc tells whether a kind is namespaced; an error means the cluster does not serve it.
type scopeFunc func(gvk schema.GroupVersionKind) (namespaced bool, err error)

// prepareOptions say what prepare changes besides namespace and labels.
type prepareOptions struct {
	// inject sets the image and the environment variables on workload containers, and the host
	// on Ingresses and routes.
	inject bool
	// injectEnv sets the environment variables alone (Helm: the chart's values bring the image
	// and the host).
	injectEnv bool
	// release, when set, is written into ReleaseAnnotation.
	release string
	// reserved is an object name of kind ConfigMap the deploy keeps for itself.
	reserved string
}

// prepare makes objects fit for req's namespace, in place. First it checks every object and
// refuses the whole render (ErrRefusedObject, every refused object named) when one is
// cluster-scoped, of another namespace, of a kind the cluster does not serve, a guard rail of
// the environment (quotas, limit ranges, network policies), one of req.Reserved, or refused by
// req.Policy; a duplicate is ErrInvalidManifest. Then it sets metadata.namespace, merges
// req.Labels over the objects' labels and, with o.inject, sets the image and env on the
// containers of workloads (with o.injectEnv env alone). It returns how many containers (init
// containers included) received env.
func prepare(ms []manifest, req Request, scope scopeFunc, o prepareOptions) (envContainers int, err error) {
	if err := check(ms, req, scope, o); err != nil {
		return 0, err
	}
	for _, m := range ms {
		ref := m.ref()
		m.obj.SetNamespace(req.Namespace)
		if len(req.Labels) > 0 {
			labels := m.obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			maps.Copy(labels, req.Labels)
			m.obj.SetLabels(labels)
		}
		if o.release != "" {
			setAnnotation(m.obj, ReleaseAnnotation, o.release)
		}
		if (o.inject || o.injectEnv) && !isTestHook(m.obj) {
			img := req.Image
			if !o.inject {
				img = Image{}
			}
			n, err := injectWorkload(m.obj, img, req.Env)
			if err != nil {
				return 0, fmt.Errorf("%w: %s (%s): %w", ErrInvalidManifest, ref, m.origin, err)
			}
			envContainers += n
		}
		if o.inject {
			if err := injectHost(m.obj, req.Host); err != nil {
				return 0, fmt.Errorf("%w: %s (%s): %w", ErrInvalidManifest, ref, m.origin, err)
			}
		}
	}
	return envContainers, nil
}

// check looks at every object before anything is changed or applied and refuses the render
// when any object may not be deployed, naming them all.
func check(ms []manifest, req Request, scope scopeFunc, o prepareOptions) error {
	seen := make(map[string]string, len(ms))
	var refused []string
	for _, m := range ms {
		ref := m.ref()
		gk := m.obj.GroupVersionKind().GroupKind()
		key := gk.String() + "/" + ref.Name
		if prev, dup := seen[key]; dup {
			return fmt.Errorf("%w: %s is defined twice (%s and %s)", ErrInvalidManifest, ref, prev, m.origin)
		}
		seen[key] = m.origin
		why, err := refusal(m, req, scope, o)
		if err != nil {
			return err
		}
		if why != "" {
			refused = append(refused, fmt.Sprintf("%s (%s) %s", ref, m.origin, why))
		}
	}
	if len(refused) > 0 {
		return refusedError(req.Namespace, refused)
	}
	return nil
}

// refusal says why m may not be deployed, "" when it may. An error is for a failed lookup of
// the kind's scope.
func refusal(m manifest, req Request, scope scopeFunc, o prepareOptions) (string, error) {
	gvk := m.obj.GroupVersionKind()
	name := m.obj.GetName()
	namespaced, err := scope(gvk)
	switch {
	case errors.Is(err, errNotServed):
		return fmt.Sprintf("is of kind %s of apiVersion %s, which the cluster does not serve (is its CRD installed?)", gvk.Kind, gvk.GroupVersion()), nil
	case err != nil:
		return "", err
	case !namespaced:
		return "is cluster-scoped; an environment holds only objects of its namespace " + req.Namespace, nil
	}
	if ns := m.obj.GetNamespace(); ns != "" && ns != req.Namespace {
		return fmt.Sprintf("is for namespace %s; an environment holds only objects of its namespace %s", ns, req.Namespace), nil
	}
	if guardRail(gvk.GroupKind()) {
		return "is a guard rail: the environment's quota, limits and network policy are the operator's (set them in the Project); remove it from the deployment", nil
	}
	if why := req.Policy.refusal(m.obj); why != "" {
		return why, nil
	}
	if o.reserved != "" && gvk.GroupKind() == (schema.GroupKind{Kind: "ConfigMap"}) && name == o.reserved {
		return "takes the name reserved for the deploy's inventory", nil
	}
	for _, r := range req.Reserved {
		if r.GroupKind == gvk.GroupKind() && r.Name == name {
			return "takes a name the operator keeps in the environment; rename it in the deployment", nil
		}
	}
	return "", nil
}

// isTestHook reports a Helm test hook: run by `helm test` only, never by the operator, so it gets
// nothing injected and is not counted.
func isTestHook(obj *unstructured.Unstructured) bool {
	for _, h := range strings.Split(obj.GetAnnotations()["helm.sh/hook"], ",") {
		if strings.TrimSpace(h) == "test" || strings.TrimSpace(h) == "test-success" {
			return true
		}
	}
	return false
}

// guardRail reports the kinds that fence an environment in: a deployment may not bring its own,
// since the operator's permissions would let it lift the namespace's quota or open its network.
func guardRail(gk schema.GroupKind) bool {
	switch gk {
	case schema.GroupKind{Kind: "ResourceQuota"}, schema.GroupKind{Kind: "LimitRange"},
		schema.GroupKind{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:
		return true
	}
	return false
}

// podSpecPath is where the pod spec of a workload kind is, nil for other kinds.
func podSpecPath(gk schema.GroupKind) []string {
	switch gk {
	case schema.GroupKind{Kind: "Pod"}:
		return []string{"spec"}
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}, schema.GroupKind{Kind: "ReplicationController"}:
		return []string{"spec", "template", "spec"}
	case schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return []string{"spec", "jobTemplate", "spec", "template", "spec"}
	}
	return nil
}

// injectWorkload sets img on the containers (and init containers) whose image matches it, and
// env on all of them; it returns how many containers received env. Objects that are not
// workloads are left alone.
func injectWorkload(obj *unstructured.Unstructured, img Image, env []corev1.EnvVar) (envContainers int, err error) {
	specPath := podSpecPath(obj.GroupVersionKind().GroupKind())
	if specPath == nil || (img.Repository == "" && len(env) == 0) {
		return 0, nil
	}
	for _, field := range []string{"initContainers", "containers"} {
		p := append(append([]string{}, specPath...), field)
		raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, p...)
		if err != nil || !found || raw == nil {
			continue
		}
		containers, ok := raw.([]any)
		if !ok {
			return 0, fmt.Errorf("%s is not a list", strings.Join(p, "."))
		}
		for i, c := range containers {
			cm, ok := c.(map[string]any)
			if !ok {
				return 0, fmt.Errorf("%s[%d] is not an object", strings.Join(p, "."), i)
			}
			if image, ok := cm["image"].(string); ok && img.Repository != "" {
				if replaced, ok := replaceImage(image, img); ok {
					cm["image"] = replaced
				}
			}
			if len(env) > 0 {
				existing, ok := cm["env"].([]any)
				if !ok && cm["env"] != nil {
					return 0, fmt.Errorf("%s[%d].env is not a list", strings.Join(p, "."), i)
				}
				merged, err := mergeEnv(existing, env)
				if err != nil {
					return 0, err
				}
				cm["env"] = merged
				envContainers++
			}
		}
	}
	return envContainers, nil
}

// injectHost points Ingresses and Gateway API HTTPRoutes and GRPCRoutes at host, so environments
// do not claim each other's (or production's) host: every rule of an Ingress gets host, and its
// TLS entries list host alone; a route's hostnames become host. Empty host changes nothing.
func injectHost(obj *unstructured.Unstructured, host string) error {
	if host == "" {
		return nil
	}
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}:
		for _, field := range []string{"rules", "tls"} {
			raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, "spec", field)
			if err != nil || !found || raw == nil {
				continue
			}
			entries, ok := raw.([]any)
			if !ok {
				return fmt.Errorf("spec.%s is not a list", field)
			}
			for i, e := range entries {
				m, ok := e.(map[string]any)
				if !ok {
					return fmt.Errorf("spec.%s[%d] is not an object", field, i)
				}
				if field == "rules" {
					m["host"] = host
				} else {
					m["hosts"] = []any{host}
				}
			}
		}
	case schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"},
		schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "GRPCRoute"}:
		if spec, ok := obj.Object["spec"].(map[string]any); ok {
			spec["hostnames"] = []any{host}
		}
	}
	return nil
}

// replaceImage returns the image to run instead of image, and whether image matches img: its
// repository (without tag or digest) is img.Repository (compared after Docker's normalisation,
// so nginx is docker.io/library/nginx), or is the last path element of img.Repository alone (the
// placeholder form: "app" or "app:latest" for registry.example.dev/org/app). The result is
// img with its tag, or with image's own tag or digest when img has none.
func replaceImage(image string, img Image) (string, bool) {
	name, suffix := splitImage(image)
	if name == "" || !sameRepository(name, img.Repository) {
		return image, false
	}
	if img.Tag == "" {
		return img.Repository + suffix, true
	}
	return img.String(), true
}

// splitImage splits an image reference into its repository and the rest (":tag", "@digest" or
// ":tag@digest").
func splitImage(image string) (name, suffix string) {
	name = image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, suffix = name[:i], name[i:]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, suffix = name[:i], name[i:]+suffix
	}
	return name, suffix
}

func sameRepository(name, repository string) bool {
	if name == repository || name == path.Base(repository) {
		return true
	}
	a, errA := reference.ParseNormalizedNamed(name)
	b, errB := reference.ParseNormalizedNamed(repository)
	return errA == nil && errB == nil && a.Name() == b.Name()
}

// mergeEnv sets vars on a container's env list: a variable of the same name (the deployment's
// own, or an earlier one of vars) is replaced where it is, others are appended in order. Variables
// the deployment sets and vars do not name are kept as they are.
func mergeEnv(existing []any, vars []corev1.EnvVar) ([]any, error) {
	out := make([]any, len(existing), len(existing)+len(vars))
	copy(out, existing)
	index := make(map[string]int, len(existing))
	for i, e := range out {
		if m, ok := e.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				index[n] = i
			}
		}
	}
	for _, v := range vars {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v)
		if err != nil {
			return nil, err
		}
		if i, ok := index[v.Name]; ok {
			out[i] = u
			continue
		}
		index[v.Name] = len(out)
		out = append(out, u)
	}
	return out, nil
}
