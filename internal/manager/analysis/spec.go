// Package analysis runs the manager's analyses: PromQL queries asked of a cluster's Prometheus
// during a stage's hold, each judged by a success condition (absolute bounds and a comparison
// with the same query at the deployment's start), measured count times every interval, and
// turned into a phase by failure limits, in the spirit of Argo Rollouts' AnalysisTemplate.
//
// The wire form (Template) is parsed and validated once, at the edge, into a typed Spec
// (durations parsed, defaults applied, the PromQL syntax checked); a deployment keeps the Spec
// it was created with. Run phases are pure functions of the stored measurements (Evaluate), so
// any replica can continue a run another one started.
package analysis

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/slipway-dev/slipway/internal/isoduration"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// Limits of a spec: a longer query, more args or measurements are mistakes.
const (
	MaxQueryLen   = 4096
	MaxArgs       = 32
	MaxCount      = 100
	MaxInterval   = time.Hour
	MinInterval   = time.Second
	defaultErrors = 4 // consecutiveErrorLimit when not given, as in Argo Rollouts
)

// Spec is a parsed, validated analysis.
type Spec struct {
	Name                  string
	Query                 string
	Condition             api.AnalysisCondition
	Interval              time.Duration
	Count                 int
	FailureLimit          int
	InconclusiveLimit     int
	ConsecutiveErrorLimit int
	// Args are the declared args; after Bind, every one has a value.
	Args []api.AnalysisArg
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
var argNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)

// Parse validates t and returns its Spec; the error says which field is wrong and why.
func Parse(t api.Analysis) (Spec, error) {
	s := Spec{Name: t.Name, Query: strings.TrimSpace(t.Query), Condition: t.SuccessCondition,
		Count: t.Count, FailureLimit: t.FailureLimit, InconclusiveLimit: t.InconclusiveLimit,
		ConsecutiveErrorLimit: defaultErrors, Interval: time.Minute}
	if !nameRE.MatchString(t.Name) {
		return Spec{}, invalid.Field("name", "%q: lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit", clip(t.Name))
	}
	if err := s.parseNumbers(t); err != nil {
		return Spec{}, err
	}
	if err := checkCondition(t.SuccessCondition); err != nil {
		return Spec{}, err
	}
	args, err := declaredArgs(t.Args)
	if err != nil {
		return Spec{}, err
	}
	s.Args = args
	if err := checkQuery(s.Query, s.Args); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// parseNumbers reads the interval, count and limits, applying the defaults.
func (s *Spec) parseNumbers(t api.Analysis) error {
	if t.Interval != "" {
		d, err := isoduration.Parse(t.Interval)
		if err != nil {
			return invalid.Field("interval", "%v", err)
		}
		if d < MinInterval || d > MaxInterval {
			return invalid.Field("interval", "%s: must be between PT1S and PT1H", t.Interval)
		}
		s.Interval = d
	}
	if s.Count == 0 {
		s.Count = 1
	}
	if s.Count < 1 || s.Count > MaxCount {
		return invalid.Field("count", "%d: must be between 1 and %d", t.Count, MaxCount)
	}
	if s.FailureLimit < 0 || s.InconclusiveLimit < 0 {
		return invalid.Field("failureLimit", "failureLimit and inconclusiveLimit must not be negative")
	}
	if t.ConsecutiveErrorLimit != nil {
		if *t.ConsecutiveErrorLimit < 0 {
			return invalid.Field("consecutiveErrorLimit", "must not be negative")
		}
		s.ConsecutiveErrorLimit = *t.ConsecutiveErrorLimit
	}
	return nil
}

func checkCondition(c api.AnalysisCondition) error {
	if !c.HasAbsolute() && !c.UsesBaseline() {
		return invalid.Field("successCondition", "give at least one of max, min, maxBaselineRatio, minBaselineRatio")
	}
	for name, v := range map[string]*float64{"max": c.Max, "min": c.Min, "maxBaselineRatio": c.MaxBaselineRatio, "minBaselineRatio": c.MinBaselineRatio} {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			return invalid.Field("successCondition."+name, "must be a finite number")
		}
	}
	for name, v := range map[string]*float64{"maxBaselineRatio": c.MaxBaselineRatio, "minBaselineRatio": c.MinBaselineRatio} {
		if v != nil && *v < 0 {
			return invalid.Field("successCondition."+name, "must not be negative")
		}
	}
	if c.Max != nil && c.Min != nil && *c.Min > *c.Max {
		return invalid.Field("successCondition", "min %g is above max %g: no value could pass", *c.Min, *c.Max)
	}
	return nil
}

// declaredArgs checks a template's arg declarations: valid, unique names that are not built-in,
// defaults that are safe in a PromQL string.
func declaredArgs(in []api.AnalysisArg) ([]api.AnalysisArg, error) {
	if len(in) > MaxArgs {
		return nil, invalid.Field("args", "at most %d", MaxArgs)
	}
	seen := map[string]bool{}
	out := make([]api.AnalysisArg, 0, len(in))
	for _, a := range in {
		switch {
		case !argNameRE.MatchString(a.Name):
			return nil, invalid.Field("args", "name %q: a letter, then letters, digits or '_'", clip(a.Name))
		case isBuiltin(a.Name):
			return nil, invalid.Field("args", "%q is a built-in argument (%s) and cannot be declared", a.Name, strings.Join(Builtins{}.names(), ", "))
		case seen[a.Name]:
			return nil, invalid.Field("args", "%q declared twice", a.Name)
		}
		seen[a.Name] = true
		if a.Value != nil {
			if err := CheckValue(a.Name, *a.Value); err != nil {
				return nil, invalid.Field("args", "%v", err)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// checkQuery checks that the query is present, that every placeholder names a built-in or a
// declared arg, and that the query is PromQL once rendered with the defaults (and "1" for the
// values only known later).
func checkQuery(q string, args []api.AnalysisArg) error {
	if q == "" {
		return invalid.Field("query", "required")
	}
	if len(q) > MaxQueryLen {
		return invalid.Field("query", "at most %d characters", MaxQueryLen)
	}
	vals := map[string]string{}
	for _, n := range (Builtins{}).names() {
		vals[n] = "1"
	}
	for _, a := range args {
		vals[a.Name] = "1"
		if a.Value != nil {
			vals[a.Name] = *a.Value
		}
	}
	rendered, err := render(q, vals)
	if err != nil {
		return invalid.Field("query", "%v", err)
	}
	if _, err := parser.ParseExpr(rendered); err != nil {
		return invalid.Field("query", "not valid PromQL: %v", err)
	}
	return nil
}

// Template is the wire form of s (what Parse reads back into s).
func (s Spec) Template() api.Analysis {
	limit := s.ConsecutiveErrorLimit
	return api.Analysis{Name: s.Name, Query: s.Query, SuccessCondition: s.Condition,
		Interval: isoduration.Format(s.Interval), Count: s.Count, FailureLimit: s.FailureLimit,
		InconclusiveLimit: s.InconclusiveLimit, ConsecutiveErrorLimit: &limit, Args: s.Args}
}

// MarshalJSON writes s in its wire form, so a deployment stores the spec it was created with.
func (s Spec) MarshalJSON() ([]byte, error) { return json.Marshal(s.Template()) }

// UnmarshalJSON reads and validates the wire form.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var t api.Analysis
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	p, err := Parse(t)
	if err != nil {
		return err
	}
	*s = p
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
