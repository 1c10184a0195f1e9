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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

const (
	catalystTeam    = "chaos"
	catalystProject = "app"
	gitUser         = "bot"
	gitPassword     = "chaos-git-password"
)

// TestChaos_Catalyst: Environments are created, each at a commit of its own whose image is not
// in the registry (so each one builds), and half of them deleted again at random moments, while
// the operator process is SIGKILLed repeatedly and the API server restarts once. Afterwards every
// remaining Environment is Ready, every deleted one and its namespace are gone, no build Job or
// copied Secret outlived its Environment, and no commit was built twice for one Environment.
func TestChaos_Catalyst(t *testing.T) {
	st := startSuite(t)
	sc, rnd, ctx, full, c, clock, kubeconfig := st.sc, st.rnd, st.ctx, st.full, st.c, st.clock, st.kubeconfig

	// The world: a git repository with the sample application, one commit per Environment, a
	// registry without their images, the team's Secrets (git credentials, one to copy).
	git := gittest.NewServer(t, gittest.WithBasicAuth(gitUser, gitPassword))
	repo := git.NewRepository(t, "org/app")
	commits := make([]string, sc.envs)
	for i := range commits {
		files := gittest.Files{"VERSION": []byte(fmt.Sprintf("%d\n", i))}
		if i == 0 {
			files = gittest.Merge(sampleApp(), files)
		}
		sha, err := repo.Commit(fmt.Sprintf("change %d", i), files)
		if err != nil {
			t.Fatal(err)
		}
		commits[i] = sha
	}
	reg := registrytest.StartDistribution(t)
	projNS := naming.ProjectNamespaceName(catalystTeam, catalystProject)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: catalystTeam}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: projNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-credentials", Namespace: catalystTeam},
			StringData: map[string]string{"username": gitUser, "password": gitPassword}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-config", Namespace: catalystTeam},
			StringData: map[string]string{"token": "chaos"}},
		&catalystv1alpha1.Project{
			ObjectMeta: metav1.ObjectMeta{Name: catalystProject, Namespace: catalystTeam},
			Spec: catalystv1alpha1.ProjectSpec{
				Source: catalystv1alpha1.ProjectSource{RepositoryURL: repo.URL, Branch: "main",
					SecretRef: &catalystv1alpha1.SecretReference{Name: "git-credentials"}},
				Deployment: catalystv1alpha1.DeploymentSpec{Type: catalystv1alpha1.DeploymentTypeManifest, Path: "deploy/manifests"},
				Registry:   &catalystv1alpha1.RegistrySpec{Repository: reg.Repository("org/app"), Insecure: true},
				Preview: catalystv1alpha1.PreviewSpec{Domain: "preview.example.dev",
					Service: catalystv1alpha1.ServiceTarget{Name: "app", Port: 80}},
				Resources: catalystv1alpha1.ProjectResources{DefaultQuota: &catalystv1alpha1.Quota{
					CPU: ptr.To(resource.MustParse("1")), Memory: ptr.To(resource.MustParse("2Gi"))}},
				SecretRefs: []catalystv1alpha1.SecretReference{{Name: "app-config"}},
			},
		},
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	// Build pods take 2-6 s, so kills find builds in flight.
	var hookMu sync.Mutex
	installPodHook(ctx, t, c, "chaos-catalyst-builds",
		&metav1.LabelSelector{MatchLabels: map[string]string{catalyst.LabelComponent: catalyst.ComponentBuild}},
		func(*corev1.Pod) podOutcome {
			hookMu.Lock()
			defer hookMu.Unlock()
			return podOutcome{duration: between(rnd, 2*time.Second, 6*time.Second)}
		})

	rec := &buildRecord{jobs: map[types.UID]buildSeen{}}
	owned, err := labels.NewRequirement(catalyst.LabelEnvironmentName, selection.Exists, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := startWatches(t, full.Config, map[client.Object]cache.ByObject{
		&batchv1.Job{}:   {Label: labels.SelectorFromSet(labels.Set{catalyst.LabelComponent: catalyst.ComponentBuild})},
		&corev1.Secret{}: {Label: labels.NewSelector().Add(*owned)},
	})
	w.observe(t, &batchv1.Job{}, rec.job)

	op := startOperator(ctx, t, kubeconfig, operatorConfig{name: "catalyst", controllers: "catalyst"})

	// Creations and deletions at random moments while the operator is being killed: the
	// Environments come one after the other over a bit longer than the kills take (each kill
	// waits up to a lease duration of 15 s for the restarted operator to lead), and each deleted
	// one goes 0-20 s after its creation: before its first reconcile, while it builds, or once
	// Ready. The last action is a creation (the last Environment stays), so the final kill,
	// just after it, finds a build in flight.
	names := make([]string, sc.envs)
	for i := range names {
		names[i] = fmt.Sprintf("pr-%03d", i)
	}
	created := make([]time.Duration, sc.envs)
	at := time.Duration(0)
	// A kill takes some 22 s (the lease wait and 2-12 s of work); the creations, 5/8 gap apart
	// on average, last a quarter longer than the kills, so the final kill follows them.
	gap := 2 * time.Duration(sc.envKills) * 22 * time.Second / time.Duration(sc.envs)
	var churn []envAction
	for i := range names {
		at += between(rnd, gap/4, gap)
		created[i] = at
		churn = append(churn, envAction{at: at, env: i})
	}
	last := created[sc.envs-1]
	for _, i := range rnd.Perm(sc.envs - 1)[:sc.envDeletes] {
		del := min(created[i]+between(rnd, 0, 20*time.Second), last-500*time.Millisecond)
		churn = append(churn, envAction{at: max(del, created[i]), env: i, delete: true})
	}
	sort.SliceStable(churn, func(a, b int) bool { return churn[a].at < churn[b].at })
	deleted := map[string]bool{}
	var churnErr error
	churning := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(churning)
		for _, a := range churn {
			sleep(ctx, time.Until(start.Add(a.at)))
			var err error
			if a.delete {
				err = deleteEnvironment(ctx, c, projNS, names[a.env])
				deleted[names[a.env]] = true
			} else {
				err = createEnvironment(ctx, c, projNS, names[a.env], commits[a.env], a.env)
			}
			if err != nil {
				churnErr = err
				return
			}
		}
	}()

	// Half the kills, the API server restart, all but one of the other kills; the last one comes
	// 0.2-2 s after the last creation or deletion, so it finds work in flight.
	firstKills := sc.envKills / 2
	kills := killAtRandom(ctx, t, rnd, clock, firstKills, func() *operatorProc { return op })
	sleep(ctx, between(rnd, 2*time.Second, 6*time.Second))
	down := restartAPIServer(ctx, t, full, clock)
	kills += killAtRandom(ctx, t, rnd, clock, sc.envKills-firstKills-1, func() *operatorProc { return op })
	<-churning
	if churnErr != nil {
		t.Fatal(churnErr)
	}
	sleep(ctx, between(rnd, 200*time.Millisecond, 2*time.Second))
	clock.mark()
	if err := op.crash(ctx); err != nil {
		t.Fatal(err)
	}
	kills++
	t.Logf("killed %s (SIGKILL) after the last change and started it again", op.Name)

	// Convergence: the remaining ones Ready at their commit, the deleted ones and their
	// namespaces gone.
	var remaining []string
	for _, n := range names {
		if !deleted[n] {
			remaining = append(remaining, n)
		}
	}
	envNamespaces := map[string]string{}
	for _, n := range names {
		envNamespaces[n] = naming.NamespaceName(catalystTeam, catalystProject, n)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, sc.converge)
	defer waitCancel()
	var pending []string
	for {
		pending = pending[:0]
		var list catalystv1alpha1.EnvironmentList
		if err := c.List(waitCtx, &list, client.InNamespace(projNS)); err != nil {
			pending = append(pending, err.Error())
		}
		byName := map[string]*catalystv1alpha1.Environment{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		for _, n := range remaining {
			e := byName[n]
			switch {
			case e == nil:
				pending = append(pending, n+" is missing")
			case e.Status.Phase != catalystv1alpha1.PhaseReady || e.Status.ObservedGeneration != e.Generation ||
				e.Status.ObservedCommit != e.Spec.Source.CommitSHA:
				pending = append(pending, fmt.Sprintf("%s is %s", n, e.Status.Phase))
			}
		}
		for n := range deleted {
			if byName[n] != nil {
				pending = append(pending, n+" still exists")
			}
			err := c.Get(waitCtx, client.ObjectKey{Name: envNamespaces[n]}, &corev1.Namespace{})
			if !apierrors.IsNotFound(err) {
				pending = append(pending, fmt.Sprintf("namespace of deleted %s is there (%v)", n, err))
			}
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-waitCtx.Done():
			sort.Strings(pending)
			t.Fatalf("the Environments did not converge within %s: %s", sc.converge, strings.Join(pending[:min(10, len(pending))], "; "))
		case <-time.After(2 * time.Second):
		}
	}
	converged := clock.since()
	t.Logf("%d Environments Ready, %d deleted with their namespaces", len(remaining), len(deleted))
	if n := op.unexpectedExits(); n > 0 {
		t.Errorf("the operator exited %d time(s) on its own", n)
	}

	// What must hold.
	sleep(ctx, 2*time.Second)
	dups := rec.duplicates()
	for _, d := range dups {
		t.Errorf("one commit built more than once for one Environment: %s", d)
	}
	orphans := orphansOf(ctx, t, c, deleted)
	for _, o := range orphans {
		t.Errorf("orphan: %s", o)
	}
	f := figures{suite: "Catalyst", scale: sc.name, objects: sc.envs, kills: kills, apiserverDown: down,
		duplicates: len(dups), lost: len(orphans), converged: converged, peakRSS: op.peakRSS()}
	f.add("Environments deleted", float64(len(deleted)), "deleted")
	f.add("build Jobs", float64(rec.count()), "build-jobs")
	f.add("orphaned build Jobs and Secrets", float64(len(orphans)), "orphans")
	report(t, f)
}

// envAction creates or deletes one Environment at a moment of the run.
type envAction struct {
	at     time.Duration
	env    int
	delete bool
}

func createEnvironment(ctx context.Context, c client.Client, ns, name, commit string, i int) error {
	e := &catalystv1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			naming.LabelTeam: catalystTeam, naming.LabelProject: catalystProject, naming.LabelEnvironment: name}},
		Spec: catalystv1alpha1.EnvironmentSpec{
			ProjectRef: catalystv1alpha1.ProjectReference{Name: catalystProject},
			Type:       catalystv1alpha1.EnvironmentTypeDevelopment,
			Source:     catalystv1alpha1.EnvironmentSource{CommitSHA: commit, Branch: "main", PRNumber: int64(1000 + i)},
			Config:     catalystv1alpha1.EnvironmentConfig{EnvVars: []catalystv1alpha1.EnvVar{{Name: "CHAOS", Value: "true"}}},
		},
	}
	return retryUnavailable(ctx, func() error {
		if err := c.Create(ctx, e); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Environment %s: %w", name, err)
		}
		return nil
	})
}

func deleteEnvironment(ctx context.Context, c client.Client, ns, name string) error {
	e := &catalystv1alpha1.Environment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	return retryUnavailable(ctx, func() error {
		if err := c.Delete(ctx, e); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Environment %s: %w", name, err)
		}
		return nil
	})
}

// retryUnavailable runs write again while the API server does not answer (its restart), as a
// user or a CI job would; any other error ends it.
func retryUnavailable(ctx context.Context, write func() error) error {
	for {
		err := write()
		if err == nil || !isUnavailable(err) || ctx.Err() != nil {
			return err
		}
		sleep(ctx, time.Second)
	}
}

// sampleApp is gittest's manifests and Dockerfile; its pods meet the restricted pod-security
// standard of environment namespaces.
func sampleApp() gittest.Files {
	return gittest.Merge(gittest.Manifests("deploy/manifests"), gittest.Dockerfile("Dockerfile"))
}

// orphansOf lists the build Jobs and the Secrets (copied into an environment namespace, or made
// for a build) that belong to a deleted Environment and still exist.
func orphansOf(ctx context.Context, t *testing.T, c client.Client, deleted map[string]bool) []string {
	t.Helper()
	var out []string
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.HasLabels{catalyst.LabelEnvironmentName}); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if deleted[j.Labels[catalyst.LabelEnvironmentName]] {
			out = append(out, fmt.Sprintf("Job %s/%s of deleted %s", j.Namespace, j.Name, j.Labels[catalyst.LabelEnvironmentName]))
		}
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.HasLabels{catalyst.LabelEnvironmentName}); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if deleted[s.Labels[catalyst.LabelEnvironmentName]] {
			out = append(out, fmt.Sprintf("Secret %s/%s of deleted %s", s.Namespace, s.Name, s.Labels[catalyst.LabelEnvironmentName]))
		}
	}
	sort.Strings(out)
	return out
}

// buildRecord is every build Job a watch saw.
type buildRecord struct {
	mu   sync.Mutex
	jobs map[types.UID]buildSeen
}

type buildSeen struct{ key, env, commit string }

func (r *buildRecord) job(o client.Object, _ bool) {
	j := o.(*batchv1.Job)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs[j.UID] = buildSeen{key: j.Namespace + "/" + j.Name,
		env:    j.Labels[catalyst.LabelEnvironmentNamespace] + "/" + j.Labels[catalyst.LabelEnvironmentName],
		commit: j.Annotations[catalyst.AnnotationCommit]}
}

func (r *buildRecord) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.jobs)
}

// duplicates lists every (Environment, commit) built by more than one Job.
func (r *buildRecord) duplicates() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	by := map[string][]string{}
	for _, j := range r.jobs {
		k := j.env + " @ " + j.commit
		by[k] = append(by[k], j.key)
	}
	var out []string
	for k, v := range by {
		if len(v) > 1 {
			out = append(out, fmt.Sprintf("%s: %v", k, v))
		}
	}
	sort.Strings(out)
	return out
}
