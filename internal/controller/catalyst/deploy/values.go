package deploy

import (
	"strings"
)

// Helm value keys the deployer injects; a chart uses them to receive the environment's image and
// host. The environment's variables are not values: the post-renderer sets them on every
// container (see the package documentation).
const (
	ValueImageRepository = "image.repository"
	ValueImageTag        = "image.tag"
	ValueImageDigest     = "image.digest"
	ValueIngressHost     = "ingress.host"
)

// helmValues returns the values of a Helm install or upgrade: the project's values with the
// injected ones deep-merged over them (maps merge key by key, anything else is replaced).
// project is not modified.
func helmValues(project map[string]any, img Image, host string) map[string]any {
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
	return mergeValues(copyValue(project).(map[string]any), injected)
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
