package analysis

import (
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// MaxAnalyses bounds a deployment's analyses.
const MaxAnalyses = 16

// Planned is an analysis of a deployment as it was created: the spec (the template copied, its
// args bound), the template it came from ("" inline) and its stages (nil: every stage with
// health checks). A later edit of the template does not change it.
type Planned struct {
	Spec     Spec   `json:"spec"`
	Template string `json:"template,omitempty"`
	Stages   []int  `json:"stages,omitempty"`
}

// RunsIn says whether p runs in the hold of stage number n (1-based).
func (p Planned) RunsIn(n int) bool {
	if len(p.Stages) == 0 {
		return true
	}
	for _, s := range p.Stages {
		if s == n {
			return true
		}
	}
	return false
}

// TemplateSource reads a stored template's spec by name (store.ErrNotFound when there is none).
type TemplateSource func(name string) (Spec, error)

// StoreTemplates reads templates from exec.
func StoreTemplates(get func(name string) (*store.AnalysisTemplate, error)) TemplateSource {
	return func(name string) (Spec, error) {
		t, err := get(name)
		if err != nil {
			return Spec{}, err
		}
		var s Spec
		if err := s.UnmarshalJSON(t.Spec); err != nil {
			return Spec{}, fmt.Errorf("stored analysis template %s: %w", name, err)
		}
		return s, nil
	}
}

// ResolveRefs resolves a request's analyses: templates copied from templates, inline ones
// parsed, args bound, names unique; stages must lie in 1..stages (0: the strategy has no
// stages to name). Errors are *invalid.Error naming the entry ("analyses[1].template").
func ResolveRefs(refs []api.AnalysisRef, templates TemplateSource, stages int) ([]Planned, error) {
	if len(refs) > MaxAnalyses {
		return nil, invalid.Field("analyses", "at most %d analyses", MaxAnalyses)
	}
	out := make([]Planned, 0, len(refs))
	seen := map[string]bool{}
	for i, r := range refs {
		field := fmt.Sprintf("analyses[%d]", i)
		p, err := resolveRef(r, field, templates)
		if err != nil {
			return nil, err
		}
		if seen[p.Spec.Name] {
			return nil, invalid.Field(field, "a second analysis named %q: names are unique in a deployment", p.Spec.Name)
		}
		seen[p.Spec.Name] = true
		if err := checkStages(r.Stages, field, stages); err != nil {
			return nil, err
		}
		p.Stages = append([]int(nil), r.Stages...)
		out = append(out, p)
	}
	return out, nil
}

func resolveRef(r api.AnalysisRef, field string, templates TemplateSource) (Planned, error) {
	var spec Spec
	var err error
	switch {
	case (r.Template == "") == (r.Inline == nil):
		return Planned{}, invalid.Field(field, "give either template (a stored template's name) or inline (an analysis)")
	case r.Inline != nil:
		if spec, err = Parse(*r.Inline); err != nil {
			return Planned{}, prefixed(field+".inline", err)
		}
	default:
		spec, err = templates(r.Template)
		if errors.Is(err, store.ErrNotFound) {
			return Planned{}, invalid.Reasoned(field+".template", "notFound", nil, "no analysis template %q", r.Template)
		}
		if err != nil {
			return Planned{}, err
		}
	}
	bound, err := Bind(spec, r.Args)
	if err != nil {
		return Planned{}, invalid.Field(field+".args", "%v", err)
	}
	return Planned{Spec: bound, Template: r.Template}, nil
}

// prefixed moves an *invalid.Error of a template under field.
func prefixed(field string, err error) error {
	if e, ok := invalid.As(err); ok {
		out := *e
		out.Field = field + "." + e.Field
		return &out
	}
	return invalid.Field(field, "%v", err)
}

func checkStages(list []int, field string, stages int) error {
	if len(list) == 0 {
		return nil
	}
	if stages == 0 {
		return invalid.Field(field+".stages", "stages name Canary stages; this strategy has none: leave it out to run the analysis in every hold")
	}
	for _, n := range list {
		if n < 1 || n > stages {
			return invalid.Field(field+".stages", "stage %d: the Canary has stages 1 to %d", n, stages)
		}
	}
	return nil
}
