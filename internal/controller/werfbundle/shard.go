package werfbundle

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/operator"
)

// A shard relabels the Jobs of a bundle moved to it.
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=patch

// ShardLabel names the shard a WerfBundle is assigned to (with --shards > 1, see docs/werfbundle.md
// "Shards"); the bundle's Jobs carry it too, so each shard caches its bundles' Jobs alone.
const ShardLabel = werfv1.ShardLabel

// jobAdoptionWait is how long a reconcile that relabelled Jobs moved from another shard waits for
// the cache to show them (their watch events requeue it sooner).
const jobAdoptionWait = 2 * time.Second

// jobsAdopted counts the Jobs a shard took over from the shard a bundle was on before: path
// "create" when its Job create met the other's Job (AlreadyExists), "list" when the status named a
// Job its cache lacked.
var jobsAdopted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "slipway_werfbundle_shard_jobs_adopted_total",
	Help: "Jobs a shard took over from the shard their bundle was on before, by how it found them.",
}, []string{"path"})

func init() { metrics.Registry.MustRegister(jobsAdopted) }

// sharding is what the operator needs to shard WerfBundles.
var sharding = &operator.Sharding{Object: &werfv1.WerfBundle{}, Label: ShardLabel}

// shardJobs keeps a shard's view of its bundles' Jobs whole across handovers. A bundle moved here
// may have Jobs labelled for the shard it came from, which this shard's cache does not hold: the
// first reconcile that misses a Job the status names lists them from the API server and relabels
// them (once per bundle and status: checked holds the last status checked of each bundle in this
// shard's cache, so it stays as large as the cache), and a Job create that meets an existing
// Job (AlreadyExists: the deterministic name, made by the previous shard) adopts it instead of
// failing. Nil on an unsharded operator: nothing changes then.
type shardJobs struct {
	reader  client.Reader
	writer  client.Client
	checked sync.Map // types.NamespacedName → checkKey
}

type checkKey struct {
	uid                  types.UID
	active, lastFinished string
}

// label puts the bundle's shard on a Job it is about to create.
func (sj *shardJobs) label(b *werfv1.WerfBundle, job *batchv1.Job) {
	if s := b.Labels[ShardLabel]; sj != nil && s != "" {
		job.Labels[ShardLabel] = s
	}
}

// gone reports whether a bundle the cache does not hold is gone from the API server too; on a
// shard it may only have moved to another shard, and its Jobs must then be left alone.
func (sj *shardJobs) gone(ctx context.Context, key types.NamespacedName) (bool, error) {
	if sj == nil {
		return true, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(werfv1.GroupVersion.WithKind("WerfBundle"))
	err := sj.reader.Get(ctx, key, m)
	if apierrors.IsNotFound(err) {
		sj.checked.Delete(key)
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("checking whether WerfBundle %s moved to another shard: %w", key, err)
	}
	sj.checked.Delete(key)
	return false, nil
}

// adopt relabels the bundle's Jobs the cache missed when the status names a Job the cached list
// lacks; it reports whether it relabelled any (the cache then shows them shortly, and the
// reconcile should wait for it rather than act on a partial list).
func (sj *shardJobs) adopt(ctx context.Context, b *werfv1.WerfBundle, targetNS string, cached []batchv1.Job) (bool, error) {
	shard := b.Labels[ShardLabel]
	if sj == nil || shard == "" || (b.Status.ActiveJob == "" && b.Status.LastFinishedJob == "") {
		return false, nil
	}
	name := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	state := checkKey{uid: b.UID, active: b.Status.ActiveJob, lastFinished: b.Status.LastFinishedJob}
	if last, ok := sj.checked.Load(name); (ok && last == state) || (named(cached, b.Status.ActiveJob) && named(cached, b.Status.LastFinishedJob)) {
		return false, nil
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("JobList"))
	if err := sj.reader.List(ctx, &list, client.InNamespace(targetNS), client.MatchingLabels{
		LabelComponent: ComponentValue, LabelBundleNamespace: b.Namespace, LabelBundleName: b.Name,
	}); err != nil {
		return false, fmt.Errorf("listing the Jobs of a bundle moved to this shard: %w", err)
	}
	moved := false
	for i := range list.Items {
		if list.Items[i].Labels[ShardLabel] != shard {
			if err := sj.relabel(ctx, &list.Items[i], shard); err != nil {
				return false, err
			}
			jobsAdopted.WithLabelValues("list").Inc()
			moved = true
		}
	}
	sj.checked.Store(name, state)
	return moved, nil
}

// named reports whether name is empty or one of jobs.
func named(jobs []batchv1.Job, name string) bool {
	if name == "" {
		return true
	}
	for i := range jobs {
		if jobs[i].Name == name {
			return true
		}
	}
	return false
}

func (sj *shardJobs) relabel(ctx context.Context, m *metav1.PartialObjectMetadata, shard string) error {
	patch := client.MergeFrom(m.DeepCopy())
	m.Labels[ShardLabel] = shard
	if err := sj.writer.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("moving Job %s/%s to shard %s: %w", m.Namespace, m.Name, shard, err)
	}
	return nil
}

// existing reads the Job a create found already there: from the cache, or, on a shard, from the
// API server when the previous shard made it, relabelled for this one. It is the deploy this
// request asked for, already made: the caller goes on as if its create had succeeded.
func (r *Reconciler) existing(ctx context.Context, b *werfv1.WerfBundle, job *batchv1.Job) error {
	key := client.ObjectKeyFromObject(job)
	err := r.Get(ctx, key, job)
	if r.shard == nil || !apierrors.IsNotFound(err) {
		return err
	}
	if err := r.APIReader.Get(ctx, key, job); err != nil {
		return err
	}
	if s := b.Labels[ShardLabel]; s != "" && job.Labels[ShardLabel] != s {
		m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: *job.ObjectMeta.DeepCopy()}
		if err := r.shard.relabel(ctx, m, s); err != nil {
			return err
		}
		jobsAdopted.WithLabelValues("create").Inc()
		job.Labels[ShardLabel] = s
	}
	return nil
}
