package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// manifest is one object read from the source, with where it came from for error messages.
type manifest struct {
	obj    *unstructured.Unstructured
	origin string // e.g. "deploy/app.yaml, document 2"
}

func (m manifest) ref() ObjectRef { return refOf(m.obj) }

func refOf(u *unstructured.Unstructured) ObjectRef {
	return ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// helmFilenameAnnotation is where Helm's post-rendering keeps each document's template name.
const helmFilenameAnnotation = "postrenderer.helm.sh/postrender-filename"

// renderManifests reads every *.yaml, *.yml and *.json file under dir, recursively, in lexical
// order; files and directories whose names start with a dot are left out.
func renderManifests(root *os.Root, dir string, b *budget) ([]manifest, error) {
	files, err := readTree(root, dir, b, func(rel string, info fs.FileInfo) bool {
		if hidden(rel) {
			return false
		}
		if info.IsDir() {
			return true
		}
		switch strings.ToLower(path.Ext(rel)) {
		case ".yaml", ".yml", ".json":
			return true
		}
		return false
	})
	if err != nil {
		return nil, wrapAs(ErrInvalidManifest, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no *.yaml, *.yml or *.json files under %q", ErrPathNotFound, dir)
	}
	var out []manifest
	for _, f := range files {
		if slices.Contains(kustomizationFiles, path.Base(f.Name)) {
			return nil, fmt.Errorf("%w: %s is a kustomization; use deployment type kustomize", ErrInvalidManifest, path.Join(dir, f.Name))
		}
		ms, err := parseManifests(path.Join(dir, f.Name), f.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// parseManifests splits a stream of YAML (or JSON) documents into objects. Empty documents are
// skipped and v1 Lists are expanded. Errors wrap ErrInvalidManifest, name the file and the
// document, and never quote the document's content.
func parseManifests(name string, data []byte) ([]manifest, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []manifest
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		origin := fmt.Sprintf("%s, document %d", name, doc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidManifest, origin, err)
		}
		objs, err := parseDocument(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidManifest, origin, err)
		}
		for _, o := range objs {
			out = append(out, manifest{obj: o, origin: origin})
		}
	}
}

func parseDocument(raw []byte) ([]*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	j = bytes.TrimSpace(j)
	if len(j) == 0 || bytes.Equal(j, []byte("null")) {
		return nil, nil
	}
	if j[0] != '{' {
		return nil, errors.New("not a Kubernetes object (a mapping with apiVersion, kind and metadata)")
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: m}
	if obj.GetKind() == "List" && obj.GetAPIVersion() == "v1" {
		return expandList(obj)
	}
	if err := checkObject(obj); err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{obj}, nil
}

func expandList(list *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	items, ok := list.Object["items"].([]any)
	if !ok && list.Object["items"] != nil {
		return nil, errors.New("items of a List is not a list")
	}
	filename := list.GetAnnotations()[helmFilenameAnnotation]
	out := make([]*unstructured.Unstructured, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("item %d of the List is not an object", i+1)
		}
		obj := &unstructured.Unstructured{Object: m}
		if err := checkObject(obj); err != nil {
			return nil, fmt.Errorf("item %d of the List: %w", i+1, err)
		}
		if filename != "" {
			setAnnotation(obj, helmFilenameAnnotation, filename)
		}
		out = append(out, obj)
	}
	return out, nil
}

// checkObject makes sure the fields the deployer reads and writes have the right shape, so the
// unstructured accessors neither fail silently nor panic later.
func checkObject(obj *unstructured.Unstructured) error {
	apiVersion, ok := obj.Object["apiVersion"].(string)
	if !ok || apiVersion == "" {
		return errors.New("no apiVersion")
	}
	kind, ok := obj.Object["kind"].(string)
	if !ok || kind == "" {
		return errors.New("no kind")
	}
	if strings.HasPrefix(apiVersion, "kustomize.config.k8s.io/") {
		return fmt.Errorf("a %s is not a Kubernetes object; use deployment type kustomize", kind)
	}
	md, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s has no metadata", kind)
	}
	name, ok := md["name"].(string)
	if !ok || name == "" {
		return fmt.Errorf("%s has no metadata.name (generateName is not supported)", kind)
	}
	if ns, found := md["namespace"]; found {
		if _, ok := ns.(string); !ok && ns != nil {
			return fmt.Errorf("%s/%s: metadata.namespace is not a string", kind, name)
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		v, found := md[field]
		if !found || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s/%s: metadata.%s is not a mapping", kind, name, field)
		}
		for k, val := range m {
			if _, ok := val.(string); !ok {
				return fmt.Errorf("%s/%s: metadata.%s[%s] is not a string", kind, name, field, k)
			}
		}
	}
	return nil
}

// setAnnotation sets one annotation, keeping the others.
func setAnnotation(obj *unstructured.Unstructured, key, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
}

// marshalManifests writes objects as a YAML stream.
func marshalManifests(ms []manifest) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	for _, m := range ms {
		y, err := yaml.Marshal(m.obj.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.ref(), err)
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	return &buf, nil
}
