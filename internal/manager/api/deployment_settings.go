package api

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/isoduration"
	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Defaults for omitted fields of the strategy configs.
const (
	DefaultInitialPercentage   = 10.0
	DefaultIncrementPercentage = 20.0
	DefaultEvaluationPeriod    = 5 * time.Minute
	DefaultSuccessThreshold    = 0.95 // a fraction: 95 % of a stage's clusters healthy
	DefaultValidationPeriod    = 5 * time.Minute
	DefaultGreenSuffix         = "-green"
	// DefaultBakeWindow is manager serve's --bake-window: a request's bakeWindow left out.
	DefaultBakeWindow = 15 * time.Minute
	// MaxParallelClusters bounds directConfig.parallelClusters.
	MaxParallelClusters = 1000
	// MaxCanaryStages bounds canaryConfig.stages.
	MaxCanaryStages = 100
)

// CanaryConfig is canaryConfig. Percentages are of the deployment's clusters, 0-100
// (exclusive of 0). SuccessThreshold is the share of a stage's clusters that must be healthy at
// the end of its evaluation period, as a percentage (95) or a fraction (0.95): a value up to 1 is
// a fraction, above 1 a percentage, so 1 means 100 %.
//
// The stages are the design's three: initialPercentage, initialPercentage +
// incrementPercentage, then 100 (fewer when one of them reaches 100). Stages lists them
// instead, each the cumulative percentage of the clusters done once that stage passed:
// [10, 30, 50, 100] is four stages. Its percentages rise strictly, each 0 < p ≤ 100, the last
// 100. initialPercentage and incrementPercentage may be given beside it only when they describe
// its first two entries (initialPercentage = stages[0], incrementPercentage = stages[1] −
// stages[0]), so the design's JSON with a stages list added stays valid as long as the list
// starts as the design's does; anything else is a conflict (400).
type CanaryConfig struct {
	InitialPercentage   *float64  `json:"initialPercentage,omitempty"`
	IncrementPercentage *float64  `json:"incrementPercentage,omitempty"`
	EvaluationPeriod    string    `json:"evaluationPeriod,omitempty"`
	SuccessThreshold    *float64  `json:"successThreshold,omitempty"`
	Stages              []float64 `json:"stages,omitempty"`
}

// BlueGreenConfig is blueGreenConfig. BlueNamespace is the namespace where blue (the running
// version) is: when given, the deployment fails in planning unless the operator's live release
// on every target cluster is in it; left out, blue is wherever the operator runs. GreenNamespace
// is where the new one is installed (default: BlueNamespace, or the operator's namespace, +
// "-green"; a green that would land in blue's namespace goes to the other one of the two). AutoSwitch (default true) switches once the green install validated; false waits
// for POST /deployments/{id}/switch.
type BlueGreenConfig struct {
	BlueNamespace    string `json:"blueNamespace,omitempty"`
	GreenNamespace   string `json:"greenNamespace,omitempty"`
	ValidationPeriod string `json:"validationPeriod,omitempty"`
	AutoSwitch       *bool  `json:"autoSwitch,omitempty"`
}

// RollingConfig is rollingConfig. ClusterOrder names target clusters in the order to deploy;
// targets it leaves out follow in the default order (by environment Dev → Staging → Production,
// then by name). PauseBetweenClusters defaults to none.
type RollingConfig struct {
	ClusterOrder         []string `json:"clusterOrder,omitempty"`
	ValidationPeriod     string   `json:"validationPeriod,omitempty"`
	PauseBetweenClusters string   `json:"pauseBetweenClusters,omitempty"`
}

// DirectConfig is directConfig. ParallelClusters (≥ 1) limits how many clusters install at
// once (default: all); SkipHealthChecks skips the health validation after the installs.
type DirectConfig struct {
	ParallelClusters *int `json:"parallelClusters,omitempty"`
	SkipHealthChecks bool `json:"skipHealthChecks,omitempty"`
}

// CanarySettings is a resolved canaryConfig: defaults applied, SuccessThreshold a fraction in (0, 1].
type CanarySettings struct {
	InitialPercentage   float64
	IncrementPercentage float64
	EvaluationPeriod    time.Duration
	SuccessThreshold    float64
	// Stages are the cumulative percentages of the stages, rising strictly to 100:
	// canaryConfig.stages as given, or initial, initial + increment and 100 (one or two of
	// them when those reach 100).
	Stages []float64
}

// BlueGreenSettings is a resolved blueGreenConfig; namespaces left empty mean the defaults, which need
// the operator's namespace (Namespaces).
type BlueGreenSettings struct {
	BlueNamespace    string
	GreenNamespace   string
	ValidationPeriod time.Duration
	AutoSwitch       bool
}

// RollingSettings is a resolved rollingConfig.
type RollingSettings struct {
	ClusterOrder         []string
	ValidationPeriod     time.Duration
	PauseBetweenClusters time.Duration
}

// DirectSettings is a resolved directConfig; ParallelClusters 0 means all at once.
type DirectSettings struct {
	ParallelClusters int
	SkipHealthChecks bool
}

// Resolve applies the defaults and checks the fields; c may be nil (all defaults). Errors name
// "canaryConfig.<field>".
func (c *CanaryConfig) Resolve() (CanarySettings, error) {
	out := CanarySettings{DefaultInitialPercentage, DefaultIncrementPercentage, DefaultEvaluationPeriod, DefaultSuccessThreshold, nil}
	if c == nil {
		out.Stages = designStages(out.InitialPercentage, out.IncrementPercentage)
		return out, nil
	}
	var err error
	if out.InitialPercentage, err = percentage("canaryConfig.initialPercentage", c.InitialPercentage, DefaultInitialPercentage); err != nil {
		return out, err
	}
	if out.IncrementPercentage, err = percentage("canaryConfig.incrementPercentage", c.IncrementPercentage, DefaultIncrementPercentage); err != nil {
		return out, err
	}
	if out.EvaluationPeriod, err = period("canaryConfig.evaluationPeriod", c.EvaluationPeriod, DefaultEvaluationPeriod); err != nil {
		return out, err
	}
	if t := c.SuccessThreshold; t != nil {
		switch {
		case !(*t > 0): // also NaN
			return out, invalid.Reasoned("canaryConfig.successThreshold", "range", nil, "must be greater than 0 (a percentage such as 95, or a fraction such as 0.95), not %v", *t)
		case *t > 100:
			return out, invalid.Reasoned("canaryConfig.successThreshold", "range", nil, "must be at most 100 (percent), not %v", *t)
		case *t <= 1:
			out.SuccessThreshold = *t
		default:
			out.SuccessThreshold = *t / 100
		}
	}
	if c.Stages == nil {
		out.Stages = designStages(out.InitialPercentage, out.IncrementPercentage)
		return out, nil
	}
	if out.Stages, err = c.listedStages(); err != nil {
		return out, err
	}
	out.InitialPercentage, out.IncrementPercentage = out.Stages[0], 0
	if len(out.Stages) > 1 {
		out.IncrementPercentage = out.Stages[1] - out.Stages[0]
	}
	return out, nil
}

// designStages are the design's three stages: initial, initial + increment, everything.
func designStages(initial, increment float64) []float64 {
	out := []float64{initial}
	if next := initial + increment; initial < 100 && next < 100 {
		out = append(out, next)
	}
	if initial < 100 {
		out = append(out, 100)
	}
	return out
}

// stageTolerance absorbs floating-point error when increments are compared with the list.
const stageTolerance = 1e-9

// listedStages checks canaryConfig.stages, and initialPercentage and incrementPercentage
// against it.
func (c *CanaryConfig) listedStages() ([]float64, error) {
	s := c.Stages
	switch {
	case len(s) == 0:
		return nil, invalid.Reasoned("canaryConfig.stages", "required", nil, "must list at least one percentage (the last one 100), or be left out")
	case len(s) > MaxCanaryStages:
		return nil, invalid.Reasoned("canaryConfig.stages", "range", nil, "at most %d stages, not %d", MaxCanaryStages, len(s))
	}
	for i, p := range s {
		field := fmt.Sprintf("canaryConfig.stages[%d]", i)
		switch {
		case !(p > 0 && p <= 100):
			return nil, invalid.Reasoned(field, "range", nil, "must be a percentage greater than 0 and at most 100, not %v", p)
		case i > 0 && p <= s[i-1]:
			return nil, invalid.Reasoned(field, "order", nil, "must be greater than the stage before it (%v): each entry is the share of the clusters done once that stage passed, not %v", s[i-1], p)
		}
	}
	if last := s[len(s)-1]; last != 100 {
		return nil, invalid.Reasoned(fmt.Sprintf("canaryConfig.stages[%d]", len(s)-1), "range", nil, "the last stage must be 100 (every cluster), not %v", last)
	}
	if p := c.InitialPercentage; p != nil && math.Abs(*p-s[0]) > stageTolerance {
		return nil, invalid.Reasoned("canaryConfig.initialPercentage", "conflict", nil, "is %v but stages starts at %v: give the stages list alone, or an initialPercentage equal to its first entry", *p, s[0])
	}
	if p := c.IncrementPercentage; p != nil {
		if len(s) < 2 {
			return nil, invalid.Reasoned("canaryConfig.incrementPercentage", "conflict", nil, "stages has a single stage, there is nothing to increment: leave incrementPercentage out")
		}
		if math.Abs(*p-(s[1]-s[0])) > stageTolerance {
			return nil, invalid.Reasoned("canaryConfig.incrementPercentage", "conflict", nil, "is %v but stages goes from %v to %v: give the stages list alone, or an incrementPercentage equal to its second entry minus its first", *p, s[0], s[1])
		}
	}
	return slices.Clone(s), nil
}

// Resolve applies the defaults and checks the fields; c may be nil. Errors name
// "blueGreenConfig.<field>".
func (c *BlueGreenConfig) Resolve() (BlueGreenSettings, error) {
	out := BlueGreenSettings{ValidationPeriod: DefaultValidationPeriod, AutoSwitch: true}
	if c == nil {
		return out, nil
	}
	for _, ns := range []struct{ field, v string }{{"blueGreenConfig.blueNamespace", c.BlueNamespace}, {"blueGreenConfig.greenNamespace", c.GreenNamespace}} {
		if ns.v == "" {
			continue
		}
		if errs := content.IsDNS1123Label(ns.v); len(errs) > 0 {
			return out, invalid.Reasoned(ns.field, "format", nil, "%q is not a DNS-1123 label: %s", clip(ns.v), strings.Join(errs, "; "))
		}
	}
	if c.BlueNamespace != "" && c.BlueNamespace == c.GreenNamespace {
		return out, invalid.Reasoned("blueGreenConfig.greenNamespace", "conflict", nil, "must differ from blueNamespace (%q): green is where the new version goes next to blue", c.BlueNamespace)
	}
	out.BlueNamespace, out.GreenNamespace = c.BlueNamespace, c.GreenNamespace
	var err error
	if out.ValidationPeriod, err = period("blueGreenConfig.validationPeriod", c.ValidationPeriod, DefaultValidationPeriod); err != nil {
		return out, err
	}
	if c.AutoSwitch != nil {
		out.AutoSwitch = *c.AutoSwitch
	}
	return out, nil
}

// Namespaces returns blue and green for an operator installed into operatorNamespace: blue
// defaults to operatorNamespace, green to blue + "-green" (cut to 63 characters). An error
// (*invalid.Error on "blueGreenConfig.greenNamespace") if they end up equal or green is not a
// DNS-1123 label.
func (b BlueGreenSettings) Namespaces(operatorNamespace string) (blue, green string, err error) {
	blue, green = b.BlueNamespace, b.GreenNamespace
	if blue == "" {
		blue = operatorNamespace
	}
	if green == "" {
		base := blue
		if len(base)+len(DefaultGreenSuffix) > content.DNS1123LabelMaxLength {
			base = strings.TrimRight(base[:content.DNS1123LabelMaxLength-len(DefaultGreenSuffix)], "-")
		}
		green = base + DefaultGreenSuffix
	}
	if errs := content.IsDNS1123Label(green); len(errs) > 0 {
		return blue, green, invalid.Reasoned("blueGreenConfig.greenNamespace", "format", nil, "%q is not a DNS-1123 label: %s", clip(green), strings.Join(errs, "; "))
	}
	if blue == green {
		return blue, green, invalid.Reasoned("blueGreenConfig.greenNamespace", "conflict", nil, "must differ from the blue namespace %q", blue)
	}
	return blue, green, nil
}

// Resolve applies the defaults and checks the periods; c may be nil. ClusterOrder is checked
// against the targets by Resolve. Errors name "rollingConfig.<field>".
func (c *RollingConfig) Resolve() (RollingSettings, error) {
	out := RollingSettings{ValidationPeriod: DefaultValidationPeriod}
	if c == nil {
		return out, nil
	}
	out.ClusterOrder = c.ClusterOrder
	var err error
	if out.ValidationPeriod, err = period("rollingConfig.validationPeriod", c.ValidationPeriod, DefaultValidationPeriod); err != nil {
		return out, err
	}
	if out.PauseBetweenClusters, err = period("rollingConfig.pauseBetweenClusters", c.PauseBetweenClusters, 0); err != nil {
		return out, err
	}
	return out, nil
}

// Resolve applies the defaults and checks the fields; c may be nil. Errors name
// "directConfig.<field>".
func (c *DirectConfig) Resolve() (DirectSettings, error) {
	if c == nil {
		return DirectSettings{}, nil
	}
	out := DirectSettings{SkipHealthChecks: c.SkipHealthChecks}
	if p := c.ParallelClusters; p != nil {
		if *p < 1 || *p > MaxParallelClusters {
			return out, invalid.Reasoned("directConfig.parallelClusters", "range", nil, "must be between 1 and %d, not %d", MaxParallelClusters, *p)
		}
		out.ParallelClusters = *p
	}
	return out, nil
}

func percentage(field string, v *float64, def float64) (float64, error) {
	if v == nil {
		return def, nil
	}
	if !(*v > 0 && *v <= 100) {
		return 0, invalid.Reasoned(field, "range", nil, "must be a percentage greater than 0 and at most 100, not %v", *v)
	}
	return *v, nil
}

func period(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, invalid.Reasoned(field, "format", err, "must be an ISO 8601 duration such as PT5M: %v", err)
	}
	if d < 0 {
		return 0, invalid.Reasoned(field, "range", nil, "must not be negative, not %s", clip(s))
	}
	if d > MaxPeriod {
		return 0, invalid.Reasoned(field, "range", nil, "must be at most %s (%s), not %s", FormatDuration(MaxPeriod), MaxPeriod, clip(s))
	}
	return d, nil
}

// Settings are a strategy and its config resolved: defaults applied, periods parsed. Exactly the
// field of Strategy is set.
type Settings struct {
	Strategy  Strategy
	Canary    *CanarySettings
	BlueGreen *BlueGreenSettings
	Rolling   *RollingSettings
	Direct    *DirectSettings
}

// ResolveBakeWindow is the request's bakeWindow, or def when it gives none: an ISO 8601
// duration from 0 (none) to MaxPeriod, kept to the millisecond as the store keeps it; errors
// name "bakeWindow".
func (r *DeploymentRequest) ResolveBakeWindow(def time.Duration) (time.Duration, error) {
	d, err := period("bakeWindow", r.BakeWindow, def)
	return d.Round(time.Millisecond), err
}

// ResolveSettings checks the strategy and resolves its config: a config of another strategy is a
// conflict. It is the part of Resolve that needs no clusters (the CLI checks a request with it
// before sending it); rollingConfig.clusterOrder is checked against the targets by Resolve.
func ResolveSettings(r *DeploymentRequest) (Settings, error) {
	s := Settings{Strategy: r.Strategy}
	if r.Strategy == "" {
		return s, &invalid.Error{Field: "strategy", Reason: "required", Message: "required: one of Canary, BlueGreen, Rolling, Direct"}
	}
	if !r.Strategy.Valid() {
		return s, invalid.Reasoned("strategy", "invalid", nil, "must be one of Canary, BlueGreen, Rolling, Direct, not %q", clip(string(r.Strategy)))
	}
	for _, c := range []struct {
		field   string
		s       Strategy
		present bool
	}{
		{"canaryConfig", StrategyCanary, r.CanaryConfig != nil},
		{"blueGreenConfig", StrategyBlueGreen, r.BlueGreenConfig != nil},
		{"rollingConfig", StrategyRolling, r.RollingConfig != nil},
		{"directConfig", StrategyDirect, r.DirectConfig != nil},
	} {
		if c.present && c.s != r.Strategy {
			return s, invalid.Reasoned(c.field, "conflict", nil, "belongs to strategy %s, but the strategy is %s", c.s, r.Strategy)
		}
	}
	var err error
	switch r.Strategy {
	case StrategyCanary:
		s.Canary, err = resolved(r.CanaryConfig.Resolve())
	case StrategyBlueGreen:
		s.BlueGreen, err = resolved(r.BlueGreenConfig.Resolve())
	case StrategyRolling:
		s.Rolling, err = resolved(r.RollingConfig.Resolve())
	case StrategyDirect:
		s.Direct, err = resolved(r.DirectConfig.Resolve())
	}
	return s, err
}

func resolved[T any](v T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// MaxPeriod bounds every period of a request (evaluationPeriod, validationPeriod,
// pauseBetweenClusters, bakeWindow): a deployment that holds a stage for more than a day is a
// mistake.
const MaxPeriod = 24 * time.Hour

// ParseDuration reads an ISO 8601 duration as the design writes them ("PT5M", "PT30S",
// "PT1H30M", "P1D", "PT0.5S", "P1W"): isoduration.Parse. The bound (MaxPeriod) is the caller's.
func ParseDuration(s string) (time.Duration, error) { return isoduration.Parse(s) }

// FormatDuration writes d as an ISO 8601 duration that ParseDuration reads back: isoduration.Format.
func FormatDuration(d time.Duration) string { return isoduration.Format(d) }

// clip shortens a value quoted in an error message (as package request does).
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
