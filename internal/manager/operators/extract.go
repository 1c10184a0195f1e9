package operators

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const (
	crdAPIVersion = "apiextensions.k8s.io/v1"
	crdKind       = "CustomResourceDefinition"
)

// renderNamespace is the namespace templates see as .Release.Namespace when CRDs are extracted.
const renderNamespace = "default"

// ExtractCRDs returns the CustomResourceDefinitions a chart ships, sorted by name: the files in
// crds/ (of the chart and its subcharts) and the CRDs among its templates rendered offline with
// the default values, Helm's default capabilities and lint mode (so `required` and `fail` on
// values only an installer sets do not stop it; `lookup` finds nothing). A CRD in both places
// is taken from crds/. A CRD that is not apiextensions.k8s.io/v1 or that does not parse is an
// error naming its file.
func ExtractCRDs(ch *chart.Chart) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if ch == nil || ch.Metadata == nil {
		return nil, errors.New("extracting CRDs: no chart")
	}
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range ch.CRDObjects() {
		crds, err := decodeCRDs(f.Filename, string(f.File.Data), true)
		if err != nil {
			return nil, err
		}
		for _, c := range crds {
			if _, dup := byName[c.Name]; dup {
				return nil, fmt.Errorf("%s: CRD %s is defined twice in crds/", f.Filename, c.Name)
			}
			byName[c.Name] = c
		}
	}
	rendered, err := renderTemplates(ch)
	if err != nil {
		return nil, err
	}
	files := make([]string, 0, len(rendered))
	for name := range rendered {
		files = append(files, name)
	}
	sort.Strings(files)
	for _, name := range files {
		if !isManifest(name) {
			continue
		}
		crds, err := decodeCRDs(name, rendered[name], false)
		if err != nil {
			return nil, err
		}
		for _, c := range crds {
			if _, dup := byName[c.Name]; !dup {
				byName[c.Name] = c
			}
		}
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(byName))
	for _, c := range byName {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func isManifest(name string) bool {
	base := name[strings.LastIndex(name, "/")+1:]
	if strings.HasPrefix(base, "_") {
		return false
	}
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")
}

// renderTemplates renders the chart's templates offline with its default values.
func renderTemplates(ch *chart.Chart) (map[string]string, error) {
	opts := common.ReleaseOptions{Name: ch.Metadata.Name, Namespace: renderNamespace, IsInstall: true, Revision: 1}
	values, err := chartutil.ToRenderValuesWithSchemaValidation(ch, nil, opts, common.DefaultCapabilities, true)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s %s: values: %w", ch.Metadata.Name, ch.Metadata.Version, err)
	}
	e := engine.Engine{LintMode: true}
	out, err := e.Render(ch, values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s %s: %w", ch.Metadata.Name, ch.Metadata.Version, err)
	}
	return out, nil
}

// decodeCRDs splits a manifest file into documents and decodes the CRDs among them. In crds/
// (strict) every document must be a v1 CRD; among templates other kinds are skipped, but a
// CRD of another API version is still an error.
func decodeCRDs(file, content string, strict bool) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	docs := releaseutil.SplitManifests(content)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return manifestIndex(keys[i]) < manifestIndex(keys[j]) })
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, k := range keys {
		doc := docs[k]
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return nil, fmt.Errorf("%s: not YAML: %w", file, err)
		}
		if head.Kind == "" && head.APIVersion == "" {
			continue // a document of comments only
		}
		if head.Kind != crdKind {
			if strict {
				return nil, fmt.Errorf("%s: a %s %s in crds/, which holds CRDs only", file, head.APIVersion, head.Kind)
			}
			continue
		}
		if head.APIVersion != crdAPIVersion {
			return nil, fmt.Errorf("%s: CRD of apiVersion %q: only %s is supported", file, head.APIVersion, crdAPIVersion)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal([]byte(doc), crd); err != nil {
			return nil, fmt.Errorf("%s: decoding CRD: %w", file, err)
		}
		if crd.Name == "" {
			return nil, fmt.Errorf("%s: CRD without metadata.name", file)
		}
		out = append(out, crd)
	}
	return out, nil
}

// manifestIndex orders SplitManifests' keys ("manifest-<n>") numerically.
func manifestIndex(key string) int {
	n := 0
	for _, c := range strings.TrimPrefix(key, "manifest-") {
		if c < '0' || c > '9' {
			return n
		}
		n = n*10 + int(c-'0')
	}
	return n
}
