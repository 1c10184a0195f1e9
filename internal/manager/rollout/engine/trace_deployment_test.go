package engine

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
	"github.com/slipway-dev/slipway/internal/manager/telemetry"
	"github.com/slipway-dev/slipway/internal/manager/telemetry/spantest"
)

// TestTrace_OneTracePerDeployment submits a Rolling deployment under a POST span and has a second
// replica take it over halfway: every operator.deploy span of both replicas is a child of the
// POST's span, in its trace. It replaces the global tracer provider, so it does not run in
// parallel.
func TestTrace_OneTracePerDeployment(t *testing.T) {
	rec := spantest.Record(t)
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "tr-1", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "tr-2", Environment: store.EnvironmentDev, Server: s[1]},
	}, func(c *Config) { c.HealthLoop = false })
	h.operator("traced", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))

	post, span := telemetry.Tracer().Start(context.Background(), "POST /api/v1/deployments")
	req, err := api.DecodeDeploymentRequest([]byte(`{"operator": "traced", "version": "1.0.0", "clusters": ["tr-1", "tr-2"],
		"strategy": "Rolling", "rollingConfig": {"validationPeriod": "PT3S"}}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := h.eng.Submit(post, req, "alice", "req-trace")
	span.End()
	if err != nil {
		t.Fatal(err)
	}
	if want := telemetry.TraceContext(post); d.TraceContext == "" || d.TraceContext != want {
		t.Fatalf("Submit stored trace context %q, want the request's %q", d.TraceContext, want)
	}
	h.start()
	h.wait(d.ID, "tr-1 validating", func(d *store.Deployment) bool { return clusterByName(d, "tr-1").Status == store.ClusterValidating })
	h.eng.Stop()
	before := len(deploySpans(rec.Ended(), d.ID))

	b := h.replica("replica-b")
	h.waitStatus(d.ID, store.DeploymentCompleted)
	b.Stop()

	steps := deploySpans(rec.Ended(), d.ID)
	if before < 2 || len(steps) <= before {
		t.Fatalf("%d operator.deploy spans before the takeover and %d after; want at least 2 and more", before, len(steps)-before)
	}
	postSC := span.SpanContext()
	for _, s := range steps {
		if s.SpanContext().TraceID() != postSC.TraceID() || s.Parent().SpanID() != postSC.SpanID() {
			t.Fatalf("operator.deploy (status %v) in trace %s under span %s, want trace %s under the POST's span %s",
				attr(s, "status"), s.SpanContext().TraceID(), s.Parent().SpanID(), postSC.TraceID(), postSC.SpanID())
		}
	}
	t.Logf("%d steps (%d by the replica that took over), one trace %s", len(steps), len(steps)-before, postSC.TraceID())
}

// deploySpans are the operator.deploy spans of deployment id.
func deploySpans(spans []sdktrace.ReadOnlySpan, id string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == telemetry.SpanOperatorDeploy && attr(s, "deployment") == id {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}
