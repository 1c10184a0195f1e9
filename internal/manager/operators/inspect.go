package operators

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// inspectConcurrency bounds how many versions one Inspect fetches at once.
const inspectConcurrency = 4

// VersionCRDs are the CRDs one chart version ships.
type VersionCRDs struct {
	Version Version
	CRDs    []*apiextensionsv1.CustomResourceDefinition
}

// Inspection is what registering an operator needs: the chart's versions, newest first, and the
// CRDs of each (same order).
type Inspection struct {
	Versions []Version
	CRDs     []VersionCRDs
}

// Inspect validates an operator's chart before registration and reads its schema history: it
// discovers the versions (see Discover), fetches every one and extracts its CRDs, in the span
// operator.validate. A version whose chart does not load or render is *invalid.Error for field
// "versions" (a filter can leave it out).
func (c *Charts) Inspect(ctx context.Context, ref ChartRef, filter string) (_ *Inspection, err error) {
	ctx, span := otel.Tracer("slipway/manager").Start(ctx, "operator.validate")
	span.SetAttributes(attribute.String("chart.repository", ref.Repository), attribute.String("chart.name", ref.Name))
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "operator validation failed")
		}
		span.End()
	}()

	versions, err := c.Discover(ctx, ref, filter)
	if err != nil {
		return nil, err
	}
	span.SetAttributes(attribute.Int("chart.versions", len(versions)))
	out := &Inspection{Versions: versions, CRDs: make([]VersionCRDs, len(versions))}
	errs := make([]error, len(versions))
	sem := make(chan struct{}, inspectConcurrency)
	var wg sync.WaitGroup
	for i, v := range versions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out.CRDs[i], errs[i] = c.inspectVersion(ctx, ref, v)
		}()
	}
	wg.Wait()
	// Report the first failure: one clear message beats a list of similar ones.
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return out, nil
}

func (c *Charts) inspectVersion(ctx context.Context, ref ChartRef, v Version) (VersionCRDs, error) {
	ch, err := c.FetchVersion(ctx, ref, v)
	if err != nil {
		if _, ok := invalid.As(err); ok || errors.Is(err, context.Canceled) {
			return VersionCRDs{}, err
		}
		return VersionCRDs{}, invalid.Reasoned("versions", "badChart", err, "chart %s %s does not load: %v; narrow the versions filter to leave it out", ref.Name, v.Version, shortError(err))
	}
	crds, err := ExtractCRDs(ch.Chart)
	if err != nil {
		return VersionCRDs{}, invalid.Reasoned("versions", "badChart", err, "chart %s %s: %v; narrow the versions filter to leave it out", ref.Name, v.Version, shortError(err))
	}
	return VersionCRDs{Version: v, CRDs: crds}, nil
}
