package install

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// keepCRDs is a Helm post-renderer that marks the CRDs a chart renders from its templates with
// helm.sh/resource-policy: keep, so that neither an uninstall nor an upgrade that drops them
// deletes them (and with them every custom resource). Other documents pass through unchanged.
type keepCRDs struct{}

func (keepCRDs) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rendered.Bytes())))
	out := &bytes.Buffer{}
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err == nil && head.Kind == "CustomResourceDefinition" &&
			(head.APIVersion == "apiextensions.k8s.io/v1" || head.APIVersion == "apiextensions.k8s.io/v1beta1") {
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return nil, err
			}
			meta, _ := obj["metadata"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
				obj["metadata"] = meta
			}
			ann, _ := meta["annotations"].(map[string]any)
			if ann == nil {
				ann = map[string]any{}
				meta["annotations"] = ann
			}
			ann["helm.sh/resource-policy"] = "keep"
			if doc, err = yaml.Marshal(obj); err != nil {
				return nil, err
			}
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		out.WriteString("---\n")
		out.Write(doc)
		if !bytes.HasSuffix(doc, []byte("\n")) {
			out.WriteByte('\n')
		}
	}
}
