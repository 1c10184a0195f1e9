package crds

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// spec returns the schema of spec in crd's first version, for in-place edits.
func spec(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	return &s
}

// editSpec applies f to the spec schema of crd's first version.
func editSpec(crd *apiextensionsv1.CustomResourceDefinition, f func(s *apiextensionsv1.JSONSchemaProps)) {
	s := spec(crd)
	f(s)
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = *s
}

func editProp(crd *apiextensionsv1.CustomResourceDefinition, name string, f func(p *apiextensionsv1.JSONSchemaProps)) {
	editSpec(crd, func(s *apiextensionsv1.JSONSchemaProps) {
		p := s.Properties[name]
		f(&p)
		s.Properties[name] = p
	})
}

func ptr[T any](v T) *T { return &v }

// change is what a test expects of one Change.
type change struct {
	Path, Kind, Version string
	Breaking            bool
}

func (c change) String() string {
	return fmt.Sprintf("%s %s@%s breaking=%v", c.Kind, c.Path, c.Version, c.Breaking)
}

func summarize(r *Report) []change {
	out := make([]change, len(r.Changes))
	for i, c := range r.Changes {
		out[i] = change{c.Path, c.Kind, c.Version, c.Breaking}
	}
	return out
}

func TestCompare(t *testing.T) {
	const v = "v1alpha1"
	for _, tc := range []struct {
		name string
		edit func(crd *apiextensionsv1.CustomResourceDefinition)
		want []change
	}{
		{"identical", func(*apiextensionsv1.CustomResourceDefinition) {}, nil},
		{"required field added", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editSpec(crd, func(s *apiextensionsv1.JSONSchemaProps) { s.Required = append(s.Required, "color") })
		}, []change{{"spec.color", KindRequiredFieldAdded, v, true}}},
		{"new required field", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editSpec(crd, func(s *apiextensionsv1.JSONSchemaProps) {
				s.Properties["owner"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
				s.Required = append(s.Required, "owner")
			})
		}, []change{{"spec.owner", KindFieldAdded, v, false}, {"spec.owner", KindRequiredFieldAdded, v, true}}},
		{"field removed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editSpec(crd, func(s *apiextensionsv1.JSONSchemaProps) { delete(s.Properties, "legacy") })
		}, []change{{"spec.legacy", KindFieldRemoved, v, true}}},
		{"type changed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "count", func(p *apiextensionsv1.JSONSchemaProps) { p.Type = "string" })
		}, []change{{"spec.count", KindTypeChanged, v, true}}},
		{"enum tightened", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "color", func(p *apiextensionsv1.JSONSchemaProps) { p.Enum = p.Enum[:2] })
		}, []change{{"spec.color", KindEnumTightened, v, true}}},
		{"enum added", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "legacy", func(p *apiextensionsv1.JSONSchemaProps) {
				p.Enum = []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}}
			})
		}, []change{{"spec.legacy", KindEnumTightened, v, true}}},
		{"enum values added", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "color", func(p *apiextensionsv1.JSONSchemaProps) {
				p.Enum = append(p.Enum, apiextensionsv1.JSON{Raw: []byte(`"pink"`)})
			})
		}, []change{{"spec.color", KindEnumValuesAdded, v, false}}},
		{"enum removed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "color", func(p *apiextensionsv1.JSONSchemaProps) { p.Enum = nil })
		}, []change{{"spec.color", KindEnumConstraintDrop, v, false}}},
		{"maximum tightened", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "size", func(p *apiextensionsv1.JSONSchemaProps) { p.Maximum = ptr(50.0) })
		}, []change{{"spec.size", "maximumTightened", v, true}}},
		{"maximum loosened", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "size", func(p *apiextensionsv1.JSONSchemaProps) { p.Maximum = ptr(500.0) })
		}, nil},
		{"minimum tightened", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "size", func(p *apiextensionsv1.JSONSchemaProps) { p.Minimum = ptr(5.0) })
		}, []change{{"spec.size", "minimumTightened", v, true}}},
		{"minimum added", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "count", func(p *apiextensionsv1.JSONSchemaProps) { p.Minimum = ptr(0.0) })
		}, []change{{"spec.count", "minimumTightened", v, true}}},
		{"pattern changed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "name", func(p *apiextensionsv1.JSONSchemaProps) { p.Pattern = "^[a-c]+$" })
		}, []change{{"spec.name", KindPatternChanged, v, true}}},
		{"pattern added", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "legacy", func(p *apiextensionsv1.JSONSchemaProps) { p.Pattern = "^x" })
		}, []change{{"spec.legacy", KindPatternChanged, v, true}}},
		{"pattern removed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "name", func(p *apiextensionsv1.JSONSchemaProps) { p.Pattern = "" })
		}, nil},
		{"maxLength tightened", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "name", func(p *apiextensionsv1.JSONSchemaProps) { p.MaxLength = ptr(int64(10)) })
		}, []change{{"spec.name", "maxLengthTightened", v, true}}},
		{"default changed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "legacy", func(p *apiextensionsv1.JSONSchemaProps) {
				p.Default = &apiextensionsv1.JSON{Raw: []byte(`"x"`)}
			})
		}, []change{{"spec.legacy", KindDefaultChanged, v, true}}},
		{"description changed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "legacy", func(p *apiextensionsv1.JSONSchemaProps) { p.Description = "now documented" })
		}, nil},
		{"validation rule added", func(crd *apiextensionsv1.CustomResourceDefinition) {
			editProp(crd, "legacy", func(p *apiextensionsv1.JSONSchemaProps) {
				p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self != 'x'"}}
			})
		}, []change{{"spec.legacy", KindOtherChange, v, true}}},
		{"scope changed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope = apiextensionsv1.ClusterScoped
		}, []change{{"", KindScopeChanged, "", true}}},
		{"stored version removed", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Name = "v1"
		}, []change{{"", KindStoredVersionRemoved, "", true}, {"", KindVersionAdded, "v1", false}}},
		{"version added", func(crd *apiextensionsv1.CustomResourceDefinition) {
			next := *crd.Spec.Versions[0].DeepCopy()
			next.Name, next.Storage = "v1", false
			crd.Spec.Versions = append(crd.Spec.Versions, next)
		}, []change{{"", KindVersionAdded, "v1", false}}},
		{"served version breaks another", func(crd *apiextensionsv1.CustomResourceDefinition) {
			next := *crd.Spec.Versions[0].DeepCopy()
			next.Name, next.Storage = "v1", false
			crd.Spec.Versions = append(crd.Spec.Versions, next)
			s := next.Schema.OpenAPIV3Schema.Properties["spec"]
			delete(s.Properties, "legacy")
			next.Schema.OpenAPIV3Schema.Properties["spec"] = s
			crd.Spec.Versions[1] = next
		}, []change{{"", KindVersionAdded, "v1", false}, {"spec.legacy", KindFieldRemoved, "v1alpha1 -> v1", true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := charttest.Widget(charttest.Base)
			next := charttest.Widget(charttest.Base)
			tc.edit(next)
			r, err := Compare(old, next)
			if err != nil {
				t.Fatal(err)
			}
			got := summarize(r)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("changes:\n  %v\nwant:\n  %v\nmessages: %v", got, tc.want, r.Changes)
			}
			wantBreaking := slices.ContainsFunc(tc.want, func(c change) bool { return c.Breaking })
			if r.Breaking() != wantBreaking {
				t.Fatalf("Breaking() = %v, want %v", r.Breaking(), wantBreaking)
			}
			for _, c := range r.Changes {
				if c.Message == "" {
					t.Fatalf("change %+v has no message", c)
				}
			}
		})
	}
}

// TestCompareChartVersions compares the fixture charts' schema levels: Base to Compatible is
// additions only, Compatible to Breaking breaks in exactly the four ways Breaking documents.
func TestCompareChartVersions(t *testing.T) {
	const v = "v1alpha1"
	r, err := Compare(charttest.Widget(charttest.Base), charttest.Widget(charttest.Compatible))
	if err != nil {
		t.Fatal(err)
	}
	want := []change{
		{"spec.color", KindEnumValuesAdded, v, false},
		{"spec.replicas", KindFieldAdded, v, false},
	}
	if got := summarize(r); !slices.Equal(got, want) || r.Breaking() {
		t.Fatalf("base -> compatible: %v, want %v", got, want)
	}

	r, err = Compare(charttest.Widget(charttest.Compatible), charttest.Widget(charttest.Breaking))
	if err != nil {
		t.Fatal(err)
	}
	want = []change{
		{"spec.color", KindEnumTightened, v, true},
		{"spec.count", KindTypeChanged, v, true},
		{"spec.legacy", KindFieldRemoved, v, true},
		{"spec.replicas", KindFieldRemoved, v, true},
		{"spec.size", "maximumTightened", v, true},
		{"spec.tls.secretName", KindRequiredFieldAdded, v, true},
	}
	if got := summarize(r); !slices.Equal(got, want) {
		t.Fatalf("compatible -> breaking: %v, want %v", got, want)
	}
	if !strings.Contains(r.Changes[0].Message, "blue") {
		t.Fatalf("enum message %q does not name the removed value", r.Changes[0].Message)
	}
}

func TestCompareErrors(t *testing.T) {
	noSchema := charttest.Widget(charttest.Base)
	noSchema.Spec.Versions[0].Schema = nil
	for _, tc := range []struct {
		name     string
		old, new *apiextensionsv1.CustomResourceDefinition
	}{
		{"missing", nil, charttest.Widget(charttest.Base)},
		{"different CRDs", charttest.Widget(charttest.Base), charttest.Gadget(charttest.Base)},
		{"no schema", charttest.Widget(charttest.Base), noSchema},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compare(tc.old, tc.new)
			if e, ok := invalid.As(err); !ok || e.Field != "definition" {
				t.Fatalf("error %v, want an invalid definition", err)
			}
		})
	}
}
