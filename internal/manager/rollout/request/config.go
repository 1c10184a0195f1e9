package request

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// Defaults for omitted fields of the strategy configs.
const (
	DefaultInitialPercentage   = 10.0
	DefaultIncrementPercentage = 20.0
	DefaultEvaluationPeriod    = 5 * time.Minute
	DefaultSuccessThreshold    = 0.95 // a fraction: 95 % of a stage's clusters healthy
	DefaultValidationPeriod    = 5 * time.Minute
	DefaultGreenSuffix         = "-green"
	// MaxParallelClusters bounds directConfig.parallelClusters.
	MaxParallelClusters = 1000
)

// CanaryConfig is canaryConfig. Percentages are of the deployment's clusters, 0-100
// (exclusive of 0). SuccessThreshold is the share of a stage's clusters that must be healthy at
// the end of its evaluation period, as a percentage (95) or a fraction (0.95): a value up to 1 is
// a fraction, above 1 a percentage, so 1 means 100 %.
type CanaryConfig struct {
	InitialPercentage   *float64 `json:"initialPercentage,omitempty"`
	IncrementPercentage *float64 `json:"incrementPercentage,omitempty"`
	EvaluationPeriod    string   `json:"evaluationPeriod,omitempty"`
	SuccessThreshold    *float64 `json:"successThreshold,omitempty"`
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

// Canary is a resolved canaryConfig: defaults applied, SuccessThreshold a fraction in (0, 1].
type Canary struct {
	InitialPercentage   float64
	IncrementPercentage float64
	EvaluationPeriod    time.Duration
	SuccessThreshold    float64
}

// BlueGreen is a resolved blueGreenConfig; namespaces left empty mean the defaults, which need
// the operator's namespace (Namespaces).
type BlueGreen struct {
	BlueNamespace    string
	GreenNamespace   string
	ValidationPeriod time.Duration
	AutoSwitch       bool
}

// Rolling is a resolved rollingConfig.
type Rolling struct {
	ClusterOrder         []string
	ValidationPeriod     time.Duration
	PauseBetweenClusters time.Duration
}

// Direct is a resolved directConfig; ParallelClusters 0 means all at once.
type Direct struct {
	ParallelClusters int
	SkipHealthChecks bool
}

// Resolve applies the defaults and checks the fields; c may be nil (all defaults). Errors name
// "canaryConfig.<field>".
func (c *CanaryConfig) Resolve() (Canary, error) {
	out := Canary{DefaultInitialPercentage, DefaultIncrementPercentage, DefaultEvaluationPeriod, DefaultSuccessThreshold}
	if c == nil {
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
	return out, nil
}

// Resolve applies the defaults and checks the fields; c may be nil. Errors name
// "blueGreenConfig.<field>".
func (c *BlueGreenConfig) Resolve() (BlueGreen, error) {
	out := BlueGreen{ValidationPeriod: DefaultValidationPeriod, AutoSwitch: true}
	if c == nil {
		return out, nil
	}
	for _, ns := range []struct{ field, v string }{{"blueGreenConfig.blueNamespace", c.BlueNamespace}, {"blueGreenConfig.greenNamespace", c.GreenNamespace}} {
		if ns.v == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns.v); len(errs) > 0 {
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
func (b BlueGreen) Namespaces(operatorNamespace string) (blue, green string, err error) {
	blue, green = b.BlueNamespace, b.GreenNamespace
	if blue == "" {
		blue = operatorNamespace
	}
	if green == "" {
		base := blue
		if len(base)+len(DefaultGreenSuffix) > validation.DNS1123LabelMaxLength {
			base = strings.TrimRight(base[:validation.DNS1123LabelMaxLength-len(DefaultGreenSuffix)], "-")
		}
		green = base + DefaultGreenSuffix
	}
	if errs := validation.IsDNS1123Label(green); len(errs) > 0 {
		return blue, green, invalid.Reasoned("blueGreenConfig.greenNamespace", "format", nil, "%q is not a DNS-1123 label: %s", clip(green), strings.Join(errs, "; "))
	}
	if blue == green {
		return blue, green, invalid.Reasoned("blueGreenConfig.greenNamespace", "conflict", nil, "must differ from the blue namespace %q", blue)
	}
	return blue, green, nil
}

// Resolve applies the defaults and checks the periods; c may be nil. ClusterOrder is checked
// against the targets by Validate. Errors name "rollingConfig.<field>".
func (c *RollingConfig) Resolve() (Rolling, error) {
	out := Rolling{ValidationPeriod: DefaultValidationPeriod}
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
func (c *DirectConfig) Resolve() (Direct, error) {
	if c == nil {
		return Direct{}, nil
	}
	out := Direct{SkipHealthChecks: c.SkipHealthChecks}
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
