//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/werfbundle"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

const (
	bundlesPerNamespace = 50
	bundlesPerRepo      = 50
	// failFirstPrefix names the bundles whose first deploy fails (their pods exit 1): their
	// failed Jobs must leave a log, and the upgrade must still bring them to Synced.
	failFirstPrefix = "fails-first-"
	firstTag        = "1.0.0"
	upgradeTag      = "1.1.0"
)

// TestChaos_WerfBundle: bundles make a first deploy, then upgrade to a newly pushed tag, while
// the operator process is SIGKILLed at random moments (and started again each time), the API
// server restarts once in the middle, and the registry answers with errors, resets, hangs, 429s,
// endless and slow bodies. The operator runs with its shipped status delay, so kills fall between a
// Job and the status write that records it. Afterwards every bundle is Synced on the new tag with
// no duplicate Job for any (bundle, revision), exactly one apply Job per bundle and tag, the first
// tag's before the new one's, lastAppliedTag never went backwards in any status a watch saw,
// every failed Job left its log, and every Job had its values Secret.
func TestChaos_WerfBundle(t *testing.T) {
	st := startSuite(t)
	sc, rnd, ctx, full, c, clock, kubeconfig := st.sc, st.rnd, st.ctx, st.full, st.c, st.clock, st.kubeconfig
	reg := registrytest.StartDistribution(t)
	repos := (sc.bundles + bundlesPerRepo - 1) / bundlesPerRepo
	for i := range repos {
		registrytest.PushBundle(t, reg.Host, repoPath(i), firstTag)
	}
	proxy := registrytest.NewFaultProxy(t, reg.URL)
	slow := newSlowBody(t, proxy.Host)

	// Every converge pod runs 1-4 s, so kills find Jobs in flight; first deploys of the
	// fails-first bundles fail.
	var hookMu sync.Mutex
	hook := installPodHook(ctx, t, c, "chaos-werfbundle-pods",
		&metav1.LabelSelector{MatchLabels: map[string]string{werfbundle.LabelComponent: werfbundle.ComponentValue}},
		func(p *corev1.Pod) podOutcome {
			hookMu.Lock()
			d := between(rnd, time.Second, 4*time.Second)
			hookMu.Unlock()
			fail := strings.HasPrefix(p.Labels[werfbundle.LabelBundleName], failFirstPrefix) && p.Annotations[werfbundle.AnnotationTag] == firstTag
			return podOutcome{fail: fail, duration: d}
		})

	rec := newBundleRecord()
	w := startWatches(t, full.Config, map[client.Object]cache.ByObject{
		&batchv1.Job{}:       {Label: labels.SelectorFromSet(labels.Set{werfbundle.LabelComponent: werfbundle.ComponentValue})},
		&corev1.Secret{}:     {Label: labels.SelectorFromSet(labels.Set{werfbundle.LabelComponent: werfbundle.ComponentValue})},
		&werfv1.WerfBundle{}: {},
	})
	w.observe(t, &werfv1.WerfBundle{}, rec.bundle)
	w.observe(t, &batchv1.Job{}, rec.job)
	w.observe(t, &corev1.Secret{}, rec.secret)

	// Namespaces with the converge ServiceAccount and a values ConfigMap (so every Job has a
	// values Secret), then the bundles.
	names := bundleNames(sc.bundles)
	nsCount := (sc.bundles + bundlesPerNamespace - 1) / bundlesPerNamespace
	testenv.Parallel(t, nsCount, 8, func(i int) error {
		ns := bundleNamespace(i)
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "werf-converge", Namespace: ns}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "values", Namespace: ns},
				Data: map[string]string{"values.yaml": "replicas: 2\nchaos: true\n"}},
		} {
			if err := c.Create(ctx, o); err != nil {
				return err
			}
		}
		return nil
	})
	testenv.Parallel(t, sc.bundles, 16, func(i int) error {
		return c.Create(ctx, &werfv1.WerfBundle{
			ObjectMeta: metav1.ObjectMeta{Name: names[i].Name, Namespace: names[i].Namespace},
			Spec: werfv1.WerfBundleSpec{
				Registry: werfv1.RegistrySpec{URL: slow.Host + "/" + repoPath(i/bundlesPerRepo), Insecure: true,
					PollInterval: &metav1.Duration{Duration: 20 * time.Second}},
				Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge",
					ValuesFrom: []werfv1.ValuesReference{{ConfigMapRef: &werfv1.ValuesSource{Name: "values"}}}},
			},
		})
	})

	op := startOperator(ctx, t, kubeconfig, operatorConfig{name: "werfbundle", controllers: "werfbundle"})
	// About one registry request in ten is faulted: bundles poll every 20 s, a burst comes every
	// 4-8 s.
	faults := startRegistryFaults(t, rnd, proxy, slow, max(1, sc.bundles/25))

	// First deploys: half the kills, then the API server restart while they are in flight.
	firstKills := sc.bundleKills / 2
	kills := killAtRandom(ctx, t, rnd, clock, firstKills, func() *operatorProc { return op })
	sleep(ctx, between(rnd, 2*time.Second, 8*time.Second))
	down := restartAPIServer(ctx, t, full, clock)
	// Registry faults go on, so a deployed bundle may be retrying a poll: its deploy is what
	// counts here.
	waitBundles(ctx, t, c, names, sc.converge, "the first deploys are done ("+firstTag+" applied, or failed for "+failFirstPrefix+"*)",
		func(b *werfv1.WerfBundle) bool {
			if strings.HasPrefix(b.Name, failFirstPrefix) {
				return b.Status.LastFailedRevision != ""
			}
			return b.Status.LastAppliedTag == firstTag
		})
	if n := op.unexpectedExits(); n > 0 {
		t.Errorf("the operator exited %d time(s) on its own (the API server restart must not need one)", n)
	}

	// The upgrade: a new tag in every repository, under the other half of the kills.
	for i := range repos {
		registrytest.PushBundle(t, reg.Host, repoPath(i), upgradeTag)
	}
	kills += killAtRandom(ctx, t, rnd, clock, sc.bundleKills-firstKills, func() *operatorProc { return op })
	faults.end()
	clock.mark()
	t.Logf("registry faults: %d bursts, %d slow bodies; proxy answered %v", faults.bursts.Load(), slow.hits.Load(), proxy.Stats().ByStatus)
	waitBundles(ctx, t, c, names, sc.converge, "every bundle is Synced on "+upgradeTag, func(b *werfv1.WerfBundle) bool {
		return b.Status.Phase == werfv1.PhaseSynced && b.Status.LastAppliedTag == upgradeTag && b.Status.ObservedGeneration == b.Generation
	})
	converged := clock.since()
	if n := op.unexpectedExits(); n > 0 {
		t.Errorf("the operator exited %d time(s) on its own", n)
	}

	// What must hold.
	// Let the recorders catch up with the last writes before reading them.
	sleep(ctx, 2*time.Second)
	dups := rec.duplicates()
	for _, d := range dups {
		t.Errorf("duplicate Jobs for one (bundle, revision): %s", d)
	}
	for _, b := range rec.backwards() {
		t.Errorf("lastAppliedTag moved backwards: %s", b)
	}
	// Each bundle deploys each tag once, in order: no Job made twice, lost or out of order by a
	// kill between a Job and the status write that records it.
	wrongDeploys := rec.deploys(names, firstTag, upgradeTag)
	for _, d := range wrongDeploys {
		t.Errorf("deploys: %s", d)
	}
	lostLogs := rec.lostFailedLogs(ctx, t, c, controlplane.OperatorNamespace)
	for _, l := range lostLogs {
		t.Errorf("failed Job without its log: %s", l)
	}
	noSecret := rec.jobsWithoutSecret(ctx, c)
	for _, j := range noSecret {
		t.Errorf("Job without its values Secret: %s", j)
	}
	failedJobs := rec.failedJobs()
	if want := countPrefix(names, failFirstPrefix); failedJobs < want {
		t.Errorf("%d failed Jobs, want at least %d (one per %s* bundle)", failedJobs, want, failFirstPrefix)
	}
	t.Logf("pods marked to fail by the test: %d", hook.failed.Load())

	f := figures{suite: "WerfBundle", scale: sc.name, objects: sc.bundles, kills: kills, apiserverDown: down,
		duplicates: len(dups), lost: len(lostLogs) + len(noSecret), converged: converged, peakRSS: op.peakRSS()}
	f.add("Jobs", float64(rec.jobCount()), "jobs")
	f.add("failed Jobs with their log", float64(failedJobs-len(lostLogs)), "failed-jobs-logged")
	f.add("backwards lastAppliedTag", float64(len(rec.backwards())), "backwards-tags")
	f.add("bundles whose apply Jobs are not one per tag in order", float64(len(wrongDeploys)), "wrong-deploys")
	f.add("registry fault bursts", float64(faults.bursts.Load()), "fault-bursts")
	report(t, f)
}

func repoPath(i int) string { return fmt.Sprintf("chaos/app-%d", i) }

func bundleNamespace(i int) string { return fmt.Sprintf("wb-%02d", i) }

// bundleNames: one bundle in ten fails its first deploy.
func bundleNames(n int) []types.NamespacedName {
	out := make([]types.NamespacedName, n)
	for i := range out {
		name := fmt.Sprintf("app-%03d", i)
		if i%10 == 3 {
			name = fmt.Sprintf("%s%03d", failFirstPrefix, i)
		}
		out[i] = types.NamespacedName{Namespace: bundleNamespace(i / bundlesPerNamespace), Name: name}
	}
	return out
}

func countPrefix(names []types.NamespacedName, prefix string) int {
	n := 0
	for _, k := range names {
		if strings.HasPrefix(k.Name, prefix) {
			n++
		}
	}
	return n
}

// waitBundles waits until every bundle satisfies done, listing them every 2 s; on timeout it
// fails with the ones that do not and their status.
func waitBundles(ctx context.Context, t *testing.T, c client.Client, names []types.NamespacedName, timeout time.Duration,
	what string, done func(*werfv1.WerfBundle) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	want := map[types.NamespacedName]bool{}
	for _, n := range names {
		want[n] = true
	}
	var pending []string
	for {
		var list werfv1.WerfBundleList
		if err := c.List(ctx, &list); err == nil {
			pending = pending[:0]
			seen := 0
			for i := range list.Items {
				b := &list.Items[i]
				key := client.ObjectKeyFromObject(b)
				if !want[key] {
					continue
				}
				seen++
				if !done(b) {
					pending = append(pending, fmt.Sprintf("%s (phase %s, tag %q, %s)", key, b.Status.Phase, b.Status.LastAppliedTag, b.Status.LastErrorMessage))
				}
			}
			if seen < len(want) {
				pending = append(pending, fmt.Sprintf("%d bundles missing", len(want)-seen))
			}
			if len(pending) == 0 {
				t.Logf("%s", what)
				return
			}
		}
		select {
		case <-ctx.Done():
			sort.Strings(pending)
			t.Fatalf("waiting until %s: %d not yet after %s, e.g. %s", what, len(pending), timeout, strings.Join(pending[:min(10, len(pending))], "; "))
		case <-time.After(2 * time.Second):
		}
	}
}

// bundleRecord is what the watches saw of the bundles, their Jobs and their Secrets.
type bundleRecord struct {
	mu sync.Mutex
	// tags: the last lastAppliedTag seen per bundle UID; back: every backwards move seen.
	tags map[types.UID]string
	back []string
	// jobs by UID.
	jobs map[types.UID]jobSeen
	// secrets: every Secret name ever seen (namespace/name).
	secrets map[string]bool
}

type jobSeen struct {
	key, bundle, kind, revision, tag string
	created                          time.Time
	secrets                          []string
	failed                           bool
}

func newBundleRecord() *bundleRecord {
	return &bundleRecord{tags: map[types.UID]string{}, jobs: map[types.UID]jobSeen{}, secrets: map[string]bool{}}
}

func (r *bundleRecord) bundle(o client.Object, _ bool) {
	b := o.(*werfv1.WerfBundle)
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, cur := r.tags[b.UID], b.Status.LastAppliedTag
	if prev != "" && (cur == "" || olderTag(cur, prev)) {
		r.back = append(r.back, fmt.Sprintf("%s/%s: %q after %q (resourceVersion %s)", b.Namespace, b.Name, cur, prev, b.ResourceVersion))
	}
	if cur != "" || prev == "" {
		r.tags[b.UID] = cur
	}
}

func olderTag(a, b string) bool {
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	if errA != nil || errB != nil {
		return a != b
	}
	return va.LessThan(vb)
}

func (r *bundleRecord) job(o client.Object, _ bool) {
	j := o.(*batchv1.Job)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.jobs[j.UID]
	s.key = j.Namespace + "/" + j.Name
	s.bundle = j.Labels[werfbundle.LabelBundleNamespace] + "/" + j.Labels[werfbundle.LabelBundleName]
	s.kind, s.revision, s.tag = j.Labels[werfbundle.LabelJobKind], j.Labels[werfbundle.LabelRevision], j.Annotations[werfbundle.AnnotationTag]
	s.created = j.CreationTimestamp.Time
	s.secrets = s.secrets[:0]
	for _, v := range j.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			s.secrets = append(s.secrets, j.Namespace+"/"+v.Secret.SecretName)
		}
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			s.failed = true
		}
	}
	r.jobs[j.UID] = s
}

func (r *bundleRecord) secret(o client.Object, _ bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[o.GetNamespace()+"/"+o.GetName()] = true
}

// duplicates lists every (bundle, kind, revision, tag) with more than one Job (distinct UIDs,
// whether or not they still exist).
func (r *bundleRecord) duplicates() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	by := map[string][]string{}
	for _, j := range r.jobs {
		k := strings.Join([]string{j.bundle, j.kind, j.revision, j.tag}, " ")
		by[k] = append(by[k], j.key)
	}
	var out []string
	for k, jobs := range by {
		if len(jobs) > 1 {
			out = append(out, fmt.Sprintf("%s: %v", k, jobs))
		}
	}
	sort.Strings(out)
	return out
}

// deploys checks every bundle's apply Jobs against the tags it was given, in order: exactly one Job
// per tag (none twice: a second Job for a revision; none lost: a tag polled but never deployed),
// created in the order of the tags (none backwards: an older tag deployed after a newer one).
func (r *bundleRecord) deploys(names []types.NamespacedName, tags ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	by := map[string][]jobSeen{}
	for _, j := range r.jobs {
		if j.kind == string(werfbundle.KindApply) {
			by[j.bundle] = append(by[j.bundle], j)
		}
	}
	var out []string
	for _, n := range names {
		jobs := by[n.String()]
		sort.Slice(jobs, func(a, b int) bool { return jobs[a].created.Before(jobs[b].created) })
		var got []string
		for _, j := range jobs {
			got = append(got, j.tag)
		}
		if strings.Join(got, " ") != strings.Join(tags, " ") {
			out = append(out, fmt.Sprintf("%s: apply Jobs for tags %v in order of creation, want %v", n, got, tags))
		}
	}
	return out
}

func (r *bundleRecord) backwards() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.back...)
}

func (r *bundleRecord) jobCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.jobs)
}

func (r *bundleRecord) failedJobs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, j := range r.jobs {
		if j.failed {
			n++
		}
	}
	return n
}

// lostFailedLogs lists the failed Jobs whose log ConfigMap (result failed) is not in the
// operator's namespace.
func (r *bundleRecord) lostFailedLogs(ctx context.Context, t *testing.T, c client.Client, opNS string) []string {
	t.Helper()
	r.mu.Lock()
	var failed []string
	for _, j := range r.jobs {
		if j.failed {
			failed = append(failed, j.key)
		}
	}
	r.mu.Unlock()
	var lost []string
	for _, key := range failed {
		name := "werf-log-" + key[strings.IndexByte(key, '/')+1:]
		var cm corev1.ConfigMap
		err := c.Get(ctx, client.ObjectKey{Namespace: opNS, Name: name}, &cm)
		switch {
		case apierrors.IsNotFound(err):
			lost = append(lost, key)
		case err != nil:
			t.Fatalf("reading the log of Job %s: %v", key, err)
		case cm.Labels[werfbundle.LabelLogResult] != "failed":
			lost = append(lost, fmt.Sprintf("%s (its log says %q)", key, cm.Labels[werfbundle.LabelLogResult]))
		}
	}
	sort.Strings(lost)
	return lost
}

// jobsWithoutSecret lists the Jobs naming a Secret that no watch ever saw and that does not
// exist now.
func (r *bundleRecord) jobsWithoutSecret(ctx context.Context, c client.Client) []string {
	r.mu.Lock()
	var missing []string
	var check []string
	for _, j := range r.jobs {
		for _, s := range j.secrets {
			if !r.secrets[s] {
				check = append(check, j.key+" -> "+s)
			}
		}
	}
	r.mu.Unlock()
	for _, jc := range check {
		s := jc[strings.Index(jc, " -> ")+4:]
		ns, name, _ := strings.Cut(s, "/")
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); apierrors.IsNotFound(err) {
			missing = append(missing, jc)
		}
	}
	sort.Strings(missing)
	return missing
}
