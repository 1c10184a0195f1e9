package werfbundle

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/registry"
)

var (
	registryPolls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_werfbundle_registry_polls_total",
		Help: "Registry tag-list polls by result: changed, unchanged (304 or the same tags), failed.",
	}, []string{"result"})
	registryRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slipway_werfbundle_registry_requests_total",
		Help: "HTTP requests made to registries by polls (pages, token exchanges).",
	})
	pollDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "slipway_werfbundle_registry_poll_duration_seconds",
		Help:    "Duration of registry tag-list polls, waiting for a slot included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	notModified = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slipway_werfbundle_registry_not_modified_total",
		Help: "Polls answered 304 Not Modified (no tag parsing).",
	})
	newTagsFound = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slipway_werfbundle_new_tags_total",
		Help: "New highest matching tags found.",
	})
	jobsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_werfbundle_jobs_created_total",
		Help: "Jobs created by kind: apply, check.",
	}, []string{"kind"})
	jobsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_werfbundle_jobs_finished_total",
		Help: "Finished Jobs by kind and result.",
	}, []string{"kind", "result"})
	jobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "slipway_werfbundle_job_duration_seconds",
		Help:    "Duration of finished Jobs, start to completion.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	}, []string{"kind", "result"})
	driftChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "slipway_werfbundle_drift_checks_total",
		Help: "Drift checks by result: clean, drift, error.",
	}, []string{"result"})
	driftCorrections = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "slipway_werfbundle_drift_corrections_total",
		Help: "Re-applies made to correct drift.",
	})
	backoffSeconds = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_werfbundle_registry_backoff_seconds",
		Help: "Current registry retry delay of a bundle that is backing off; absent when healthy.",
	}, []string{"namespace", "name"})
	bundlesByPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "slipway_werfbundle_phase",
		Help: "1 for the bundle's current phase; one series per bundle.",
	}, []string{"namespace", "name", "phase"})
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "slipway_werfbundle_reconcile_duration_seconds",
		Help:    "Reconcile duration, registry time included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
	// ReconcileWithoutRegistry is the reconcile duration minus the time spent in the registry.
	ReconcileWithoutRegistry = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "slipway_werfbundle_reconcile_excluding_registry_seconds",
		Help:    "Reconcile duration without the registry request.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	})
)

func init() {
	for _, r := range []string{pollResultChanged, pollResultUnchanged, pollResultFailed} {
		registryPolls.WithLabelValues(r)
	}
	metrics.Registry.MustRegister(registryPolls, registryRequests, pollDuration, notModified, newTagsFound,
		jobsCreated, jobsFinished, jobDuration, driftChecks, driftCorrections, backoffSeconds, bundlesByPhase,
		reconcileDuration, ReconcileWithoutRegistry)
}

// Values of the result label of slipway_werfbundle_registry_polls_total.
const (
	pollResultChanged   = "changed"   // the tag list differs from the last one seen
	pollResultUnchanged = "unchanged" // 304, or a full answer with the same tags
	pollResultFailed    = "failed"
)

// observePoll records a poll's duration and requests; stepPoll counts its result.
func observePoll(list registry.TagList, d time.Duration) {
	pollDuration.Observe(d.Seconds())
	registryRequests.Add(float64(list.Requests))
	if list.NotModified {
		notModified.Inc()
	}
}

// tagsDigest identifies a tag list whatever order the registry sent it in.
func tagsDigest(tags []string) string {
	sorted := slices.Sorted(slices.Values(tags))
	h := sha256.Sum256([]byte(strings.Join(sorted, "\n")))
	return hex.EncodeToString(h[:16])
}

func observeJob(kind JobKind, j *batchv1.Job, ok bool) {
	result := "succeeded"
	if !ok {
		result = "failed"
	}
	jobsFinished.WithLabelValues(string(kind), result).Inc()
	if j.Status.StartTime != nil {
		end := time.Now()
		if j.Status.CompletionTime != nil {
			end = j.Status.CompletionTime.Time
		}
		jobDuration.WithLabelValues(string(kind), result).Observe(end.Sub(j.Status.StartTime.Time).Seconds())
	}
}

func observeReconcile(s *scope, d time.Duration) {
	reconcileDuration.Observe(d.Seconds())
	ReconcileWithoutRegistry.Observe((d - s.registryTime).Seconds())
}

var phases = []werfv1.Phase{werfv1.PhaseSyncing, werfv1.PhaseSynced, werfv1.PhaseFailed}

// phaseGauge keeps one series per bundle, for its current phase, and a backoff series only while
// the bundle is backing off, so the metrics cost stays one series per bundle at scale.
func phaseGauge(b *werfv1.WerfBundle) {
	for _, p := range phases {
		if b.Status.Phase == p {
			bundlesByPhase.WithLabelValues(b.Namespace, b.Name, string(p)).Set(1)
		} else {
			bundlesByPhase.DeleteLabelValues(b.Namespace, b.Name, string(p))
		}
	}
	if b.Status.ConsecutiveFailures == 0 {
		backoffSeconds.DeleteLabelValues(b.Namespace, b.Name)
	}
}

// forgetMetrics drops a deleted bundle's series.
func forgetMetrics(key types.NamespacedName) {
	bundlesByPhase.DeletePartialMatch(prometheus.Labels{"namespace": key.Namespace, "name": key.Name})
	backoffSeconds.DeleteLabelValues(key.Namespace, key.Name)
}

// JobsCreatedTotal is the number of apply Jobs created by this process (benchmarks read it).
func JobsCreatedTotal() float64 {
	m := &dto.Metric{}
	if err := jobsCreated.WithLabelValues(string(KindApply)).Write(m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
