package charttest

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Level is how far a chart version's CRD schemas have moved from the first version.
type Level int

const (
	// Base is the first schema: spec.size (integer 1..100, required), spec.color (enum red,
	// green, blue), spec.name (maxLength 63, pattern ^[a-z]+$), spec.count (integer),
	// spec.legacy (string) and spec.tls (object with secretName and insecure, none required).
	Base Level = iota
	// Compatible adds spec.replicas, the enum value yellow and raises spec.size's maximum to 200.
	Compatible
	// Breaking removes spec.legacy, changes spec.count to a string, makes spec.tls.secretName
	// required and drops blue from spec.color's enum.
	Breaking
)

// Group is the API group of every CRD built here.
const Group = "charttest.slipway.dev"

// Widget is the CRD every operator chart ships in crds/: widgets.charttest.slipway.dev, kind
// Widget, one version v1alpha1 (served and stored), namespaced, with the schema of level.
func Widget(level Level) *apiextensionsv1.CustomResourceDefinition {
	return NewCRD("widgets", "Widget", level)
}

// Gadget is the CRD an operator chart renders from templates/ when built WithTemplateCRD.
func Gadget(level Level) *apiextensionsv1.CustomResourceDefinition {
	return NewCRD("gadgets", "Gadget", level)
}

// NewCRD returns a namespaced CRD <plural>.charttest.slipway.dev of kind with one version
// v1alpha1 whose schema is level's (see Level).
func NewCRD(plural, kind string, level Level) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: plural, Singular: kind2singular(kind), Kind: kind, ListKind: kind + "List",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: Schema(level)},
				// The status is the controller's (written through /status, which does not bump
				// the generation), as a real operator's CRD has it: health checks read it.
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

func kind2singular(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Schema is the openAPIV3Schema of level (see Level).
func Schema(level Level) *apiextensionsv1.JSONSchemaProps {
	maxSize := 100.0
	colors := []string{"red", "green", "blue"}
	countType := "integer"
	var tlsRequired []string
	spec := map[string]apiextensionsv1.JSONSchemaProps{
		"size":   {Type: "integer", Minimum: ptr(1.0), Maximum: &maxSize},
		"name":   {Type: "string", MaxLength: ptr(int64(63)), Pattern: "^[a-z]+$"},
		"legacy": {Type: "string"},
	}
	switch level {
	case Compatible:
		maxSize = 200
		colors = append(colors, "yellow")
		spec["replicas"] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
	case Breaking:
		colors = colors[:2]
		countType = "string"
		tlsRequired = []string{"secretName"}
		delete(spec, "legacy")
	}
	spec["color"] = apiextensionsv1.JSONSchemaProps{Type: "string", Enum: enum(colors...)}
	spec["count"] = apiextensionsv1.JSONSchemaProps{Type: countType}
	spec["tls"] = apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: tlsRequired,
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"secretName": {Type: "string"},
			"insecure":   {Type: "boolean"},
		},
	}
	return &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Required: []string{"size"}, Properties: spec},
			"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"ready":              {Type: "boolean"},
				"observedGeneration": {Type: "integer"},
				"conditions": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr(true),
				}}},
			}},
		},
	}
}

func enum(values ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(values))
	for i, v := range values {
		out[i] = apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", v))}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// YAML renders crd as a manifest.
func YAML(crd *apiextensionsv1.CustomResourceDefinition) string {
	out, err := yaml.Marshal(crd)
	if err != nil {
		panic(fmt.Sprintf("charttest: marshalling CRD %s: %v", crd.Name, err))
	}
	return string(out)
}
