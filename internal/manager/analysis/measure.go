package analysis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Verdict is a measurement's judgement.
type Verdict string

// Verdicts, as in Argo Rollouts.
const (
	Successful   Verdict = "Successful"
	Failed       Verdict = "Failed"
	Inconclusive Verdict = "Inconclusive"
	Error        Verdict = "Error"
)

// Measurement is one evaluation of an analysis.
type Measurement struct {
	// Query is the rendered query, as sent to Prometheus.
	Query string `json:"query"`
	// Value is the query's value now; nil when there was none (no data, several series, NaN,
	// an error).
	Value *float64 `json:"value"`
	// BaselineValue is the query's value at the deployment's start, for a condition that
	// compares with it.
	BaselineValue *float64 `json:"baselineValue,omitempty"`
	Verdict       Verdict  `json:"verdict"`
	// Message says why, with the values and the bounds.
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// Querier is the part of the PromQL API a measurement uses (v1.API).
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...v1.Option) (model.Value, v1.Warnings, error)
}

// Measure runs the rendered query at now (and at baselineAt when the condition compares with
// the baseline) and judges the value by cond.
func Measure(ctx context.Context, q Querier, query string, cond api.AnalysisCondition, baselineAt, now time.Time) Measurement {
	m := Measurement{Query: query, At: now.UTC()}
	v, why, err := scalarAt(ctx, q, query, now)
	if err != nil {
		m.Verdict, m.Message = Error, err.Error()
		return m
	}
	if why != "" {
		m.Verdict, m.Message = Inconclusive, why
		return m
	}
	m.Value = &v
	var base *float64
	var baseWhy string
	if cond.UsesBaseline() {
		b, why, err := scalarAt(ctx, q, query, baselineAt)
		if err != nil {
			m.Verdict, m.Message = Error, "baseline at "+baselineAt.UTC().Format(time.RFC3339)+": "+err.Error()
			return m
		}
		if why == "" {
			base, m.BaselineValue = &b, &b
		} else {
			baseWhy = "baseline at " + baselineAt.UTC().Format(time.RFC3339) + ": " + why
		}
	}
	m.Verdict, m.Message = Judge(cond, v, base, baseWhy)
	return m
}

// scalarAt is the query's one value at ts. A query that returns no data or NaN is not an
// error: why says so (Inconclusive). Several series, a failed request or a refused query are
// errors (Error).
func scalarAt(ctx context.Context, q Querier, query string, ts time.Time) (float64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, QueryTimeout)
	defer cancel()
	val, _, err := q.Query(ctx, query, ts, v1.WithTimeout(QueryTimeout))
	if err != nil {
		var apiErr *v1.Error
		if errors.As(err, &apiErr) {
			return 0, "", fmt.Errorf("prometheus refused the query (%s): %s", apiErr.Type, apiErr.Msg)
		}
		return 0, "", fmt.Errorf("prometheus: %w", err)
	}
	var f float64
	switch r := val.(type) {
	case model.Vector:
		switch len(r) {
		case 0:
			return 0, "the query returned no data", nil
		case 1:
			f = float64(r[0].Value)
		default:
			return 0, "", fmt.Errorf("the query returned %d series (%s); an analysis needs one value: aggregate it (sum, max, avg …)", len(r), seriesList(r))
		}
	case *model.Scalar:
		f = float64(r.Value)
	default:
		return 0, "", fmt.Errorf("the query returned a %s; an analysis needs an instant vector of one series or a scalar", val.Type())
	}
	if math.IsNaN(f) {
		return 0, "the query's value is NaN (e.g. 0/0: nothing counted in the window)", nil
	}
	return f, "", nil
}

func seriesList(v model.Vector) string {
	var parts []string
	for i, s := range v {
		if i == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, s.Metric.String())
	}
	return strings.Join(parts, ", ")
}

// Judge applies cond to value v and the baseline (nil when there is none; baseWhy says why).
// Every bound given must hold: a bound that fails makes the verdict Failed; a baseline ratio
// that cannot be judged (no baseline value, or a baseline of 0, where a ratio means nothing)
// makes it Inconclusive unless an absolute bound is given, which then decides alone.
func Judge(cond api.AnalysisCondition, v float64, base *float64, baseWhy string) (Verdict, string) {
	var fails, notes []string
	if cond.Max != nil && !(v <= *cond.Max) {
		fails = append(fails, fmt.Sprintf("%s > max %s", num(v), num(*cond.Max)))
	}
	if cond.Min != nil && !(v >= *cond.Min) {
		fails = append(fails, fmt.Sprintf("%s < min %s", num(v), num(*cond.Min)))
	}
	judged := cond.UsesBaseline() && base != nil && *base != 0
	switch {
	case judged:
		if r := cond.MaxBaselineRatio; r != nil && !(v <= *r**base) {
			fails = append(fails, fmt.Sprintf("%s > %s × baseline %s", num(v), num(*r), num(*base)))
		}
		if r := cond.MinBaselineRatio; r != nil && !(v >= *r**base) {
			fails = append(fails, fmt.Sprintf("%s < %s × baseline %s", num(v), num(*r), num(*base)))
		}
	case cond.UsesBaseline() && base == nil:
		notes = append(notes, baseWhy+": the baseline ratio is not judged")
	case cond.UsesBaseline():
		notes = append(notes, "baseline is 0: the baseline ratio is not judged")
	}
	if len(fails) > 0 {
		return Failed, strings.Join(append(fails, notes...), "; ")
	}
	if cond.UsesBaseline() && !judged && !cond.HasAbsolute() {
		return Inconclusive, fmt.Sprintf("value %s; %s", num(v), strings.Join(notes, "; "))
	}
	msg := "value " + num(v) + " within " + bounds(cond, base)
	if len(notes) > 0 {
		msg += "; " + strings.Join(notes, "; ")
	}
	return Successful, msg
}

func bounds(c api.AnalysisCondition, base *float64) string {
	var b []string
	if c.Max != nil {
		b = append(b, "max "+num(*c.Max))
	}
	if c.Min != nil {
		b = append(b, "min "+num(*c.Min))
	}
	if base != nil && *base != 0 {
		if c.MaxBaselineRatio != nil {
			b = append(b, fmt.Sprintf("max %s × baseline %s", num(*c.MaxBaselineRatio), num(*base)))
		}
		if c.MinBaselineRatio != nil {
			b = append(b, fmt.Sprintf("min %s × baseline %s", num(*c.MinBaselineRatio), num(*base)))
		}
	}
	return strings.Join(b, ", ")
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
