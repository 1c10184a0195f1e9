package api

import "time"

// Analyses: the analysis written in a template or inline in a deployment request, the stored
// templates, a cluster's Prometheus and a deployment's analysis runs.

// Analysis is an analysis as the API reads and writes it: a stored template, or an inline
// analysis of a deployment request.
type Analysis struct {
	// Name names the analysis (and a stored template): lower-case letters, digits and '-'.
	Name string `json:"name"`
	// Query is the PromQL query, with {{placeholders}} for the built-in and declared args.
	Query string `json:"query"`
	// SuccessCondition is what a measurement's value must satisfy; every bound given must hold.
	SuccessCondition AnalysisCondition `json:"successCondition"`
	// Interval is the time between measurements (ISO 8601, default PT1M).
	Interval string `json:"interval,omitempty"`
	// Count is how many measurements the analysis takes (default 1).
	Count int `json:"count,omitempty"`
	// FailureLimit is how many Failed measurements are tolerated (default 0): one more fails it.
	FailureLimit int `json:"failureLimit,omitempty"`
	// InconclusiveLimit is how many Inconclusive measurements are tolerated (default 0).
	InconclusiveLimit int `json:"inconclusiveLimit,omitempty"`
	// ConsecutiveErrorLimit is how many Error measurements in a row are tolerated (default 4).
	ConsecutiveErrorLimit *int `json:"consecutiveErrorLimit,omitempty"`
	// Args are the template's own arguments, with optional defaults.
	Args []AnalysisArg `json:"args,omitempty"`
}

// AnalysisCondition bounds a measured value. Max and Min are absolute; the baseline ratios compare the
// value with the same query evaluated at the deployment's start (value ≤ MaxBaselineRatio ×
// baseline, value ≥ MinBaselineRatio × baseline).
type AnalysisCondition struct {
	Max              *float64 `json:"max,omitempty"`
	Min              *float64 `json:"min,omitempty"`
	MaxBaselineRatio *float64 `json:"maxBaselineRatio,omitempty"`
	MinBaselineRatio *float64 `json:"minBaselineRatio,omitempty"`
}

// UsesBaseline says whether the condition compares with the baseline.
func (c AnalysisCondition) UsesBaseline() bool {
	return c.MaxBaselineRatio != nil || c.MinBaselineRatio != nil
}

// HasAbsolute says whether the condition has an absolute bound.
func (c AnalysisCondition) HasAbsolute() bool { return c.Max != nil || c.Min != nil }

// AnalysisArg is a named argument: declared by a template (Value its default, nil for none) or given by
// a reference (Value the value).
type AnalysisArg struct {
	Name  string  `json:"name"`
	Value *string `json:"value,omitempty"`
}

// AnalysisRef is one entry of a deployment request's analyses: a stored template by name with args for
// its declared arguments, or an analysis written inline; Stages (Canary only) are the stage
// numbers (1 is the first, as the deployment's events name them) whose holds run it, default
// every stage with health checks.
type AnalysisRef struct {
	Template string        `json:"template,omitempty"`
	Args     []AnalysisArg `json:"args,omitempty"`
	Inline   *Analysis     `json:"inline,omitempty"`
	Stages   []int         `json:"stages,omitempty"`
}

// AnalysisTemplate is a stored analysis template: the analysis (internal/manager/analysis
// Template: query, successCondition, interval, count, limits, args) with its times.
type AnalysisTemplate struct {
	Name                  string            `json:"name"`
	Query                 string            `json:"query"`
	SuccessCondition      AnalysisCondition `json:"successCondition"`
	Interval              string            `json:"interval"`
	Count                 int               `json:"count"`
	FailureLimit          int               `json:"failureLimit"`
	InconclusiveLimit     int               `json:"inconclusiveLimit"`
	ConsecutiveErrorLimit int               `json:"consecutiveErrorLimit"`
	Args                  []AnalysisArg     `json:"args"`
	CreatedAt             time.Time         `json:"createdAt"`
	UpdatedAt             time.Time         `json:"updatedAt"`
}

// AnalysisTemplateList is a page of templates by name.
type AnalysisTemplateList struct {
	Items    []AnalysisTemplate `json:"items"`
	Continue string             `json:"continue,omitempty"`
}

// PrometheusRequest sets the Prometheus a cluster's analyses ask. The token, username and
// password are sealed and never shown again.
type PrometheusRequest struct {
	// URL is Prometheus's base URL (http or https), as the manager reaches it.
	URL string `json:"url"`
	// Auth is none (default), bearer (token) or basic (username and password).
	Auth     string `json:"auth,omitempty"`
	Token    string `json:"token,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	// CA is a PEM bundle trusted for an https URL instead of the system's roots.
	CA string `json:"ca,omitempty"`
}

// Prometheus is a cluster's Prometheus as the API shows it: never its secrets.
type Prometheus struct {
	Cluster   string    `json:"cluster"`
	URL       string    `json:"url"`
	Auth      string    `json:"auth"`
	CASet     bool      `json:"caSet"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// AnalysisRun is one analysis of a deployment on one cluster in one stage: its phase and every
// measurement taken, oldest first.
type AnalysisRun struct {
	Name     string `json:"name"`
	Template string `json:"template,omitempty" description:"the template it was copied from when the deployment was created; absent for an inline analysis"`
	Cluster  string `json:"cluster"`
	Stage    int    `json:"stage" description:"the stage (1 is the first) whose hold ran it"`
	Phase    string `json:"phase" description:"Running, Successful, Failed, Inconclusive or Error"`
	Message  string `json:"message"`
	// Count is how many measurements the analysis takes.
	Count        int                   `json:"count"`
	Measurements []AnalysisMeasurement `json:"measurements"`
}

// AnalysisMeasurement is one measurement: the query as sent, its value (absent when there was
// none: no data, NaN, an error), the value at the deployment's start, the verdict and why.
type AnalysisMeasurement struct {
	Query         string    `json:"query"`
	Value         *float64  `json:"value,omitempty"`
	BaselineValue *float64  `json:"baselineValue,omitempty"`
	Verdict       string    `json:"verdict" description:"Successful, Failed, Inconclusive or Error"`
	Message       string    `json:"message"`
	At            time.Time `json:"at"`
}
