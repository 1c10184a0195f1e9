package deploy

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Helm value keys the deployer injects; a chart uses them to receive the environment's image,
// host and variables. See the package documentation.
const (
	ValueImageRepository = "image.repository"
	ValueImageTag        = "image.tag"
	ValueImageDigest     = "image.digest"
	ValueIngressHost     = "ingress.host"
	ValueEnv             = "env"
)

// helmValues returns the values of a Helm install or upgrade: the project's values with the
// injected ones deep-merged over them (maps merge key by key, anything else is replaced).
// project is not modified. The shape of env follows the chart: a list of EnvVar objects when
// env is a list in the project's values (or, without one there, in the chart's values.yaml),
// merged by name into that list; otherwise a map of name to value merged into the map.
func helmValues(chartDefaults, project map[string]any, img Image, host string, env []corev1.EnvVar) (map[string]any, error) {
	injected := map[string]any{}
	image := map[string]any{}
	if img.Repository != "" {
		image["repository"] = img.Repository
	}
	switch {
	case strings.HasPrefix(img.Tag, "sha256:"):
		image["digest"] = img.Tag
	case img.Tag != "":
		image["tag"] = img.Tag
	}
	if len(image) > 0 {
		injected["image"] = image
	}
	if host != "" {
		injected["ingress"] = map[string]any{"host": host}
	}
	if len(env) > 0 {
		base, list := project[ValueEnv].([]any)
		if _, inProject := project[ValueEnv]; !inProject {
			base, list = chartDefaults[ValueEnv].([]any)
		}
		if list {
			merged, err := mergeEnv(base, env)
			if err != nil {
				return nil, err
			}
			injected[ValueEnv] = merged
		} else {
			m := make(map[string]any, len(env))
			for _, v := range env {
				if v.ValueFrom != nil {
					return nil, fmt.Errorf("%w: variable %s has valueFrom, which the chart's env map cannot hold (make env a list in values.yaml)", ErrInvalidRequest, v.Name)
				}
				m[v.Name] = v.Value
			}
			injected[ValueEnv] = m
		}
	}
	return mergeValues(copyValue(project).(map[string]any), injected), nil
}

// mergeValues merges src into dst (which it modifies and returns): maps present in both are
// merged recursively, any other value of src replaces dst's.
func mergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		sm, srcMap := v.(map[string]any)
		dm, dstMap := dst[k].(map[string]any)
		if srcMap && dstMap {
			dst[k] = mergeValues(dm, sm)
			continue
		}
		dst[k] = copyValue(v)
	}
	return dst
}

// copyValue deep-copies maps and slices of values; anything else is returned as it is. A nil map
// of type map[string]any becomes an empty one.
func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = copyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
