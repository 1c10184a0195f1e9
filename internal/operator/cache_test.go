package operator_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/scheme"
)

// TestManager_CachesJobsOnlyWhereTheSystemsReadThem runs managers against the real API server
// with a labelled Job in two namespaces. Systems that all say where they read Jobs (a build
// namespace; none) get a Job cache of that namespace alone: it syncs for a user whose Jobs rule is
// a Role in that namespace only, as Catalyst's is, finds the Job there and refuses another
// namespace. One system that reads Jobs everywhere (WerfBundle, in the single-Deployment form)
// makes the cache span every namespace again.
func TestManager_CachesJobsOnlyWhereTheSystemsReadThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	suffix := rand.String(5)
	builds, other := "builds-"+suffix, "other-"+suffix
	for _, ns := range []string{builds, other} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, managedJob(ns)); err != nil {
			t.Fatal(err)
		}
	}
	// A user that may read Jobs in the build namespace alone.
	user := "job-reader-" + suffix
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "jobs", Namespace: builds},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "jobs", Namespace: builds},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "jobs"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}},
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	path, err := env.UserKubeconfig(filepath.Join(t.TempDir(), "user.kubeconfig"), user, "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	userCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}

	inBuilds := func() []string { return []string{builds} }
	none := func() []string { return nil }
	t.Run("build namespace alone", func(t *testing.T) {
		c := startManager(ctx, t, userCfg, []operator.Controller{jobReader("catalyst", inBuilds), jobReader("webapp", none)})
		if got := cachedJobs(ctx, t, c, builds); got != 1 {
			t.Errorf("%d Jobs cached in %s, want its 1", got, builds)
		}
		err := c.List(ctx, &batchv1.JobList{}, client.InNamespace(other))
		if err == nil || !strings.Contains(err.Error(), "unknown namespace") {
			t.Errorf("listing the cached Jobs of %s: %v, want the cache to refuse a namespace it does not hold", other, err)
		}
	})
	t.Run("every namespace", func(t *testing.T) {
		c := startManager(ctx, t, env.Config, []operator.Controller{jobReader("werfbundle", nil), jobReader("catalyst", inBuilds)})
		for _, ns := range []string{builds, other} {
			if got := cachedJobs(ctx, t, c, ns); got != 1 {
				t.Errorf("%d Jobs cached in %s, want its 1", got, ns)
			}
		}
	})
}

// managedJob is a Job the operator's cache holds (labelled as slipway's); nothing runs it.
func managedJob(ns string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "build", Namespace: ns, Labels: map[string]string{operator.ManagedByLabel: operator.ManagedByValue}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "build", Image: "busybox"}},
		}}},
	}
}

// jobReader is a system that reads Jobs where namespaces says (nil: every namespace).
func jobReader(name string, namespaces func() []string) operator.Controller {
	return operator.Controller{Name: name, JobNamespaces: namespaces,
		Setup: func(context.Context, ctrl.Manager, operator.Options) error { return nil }}
}

// startManager starts a manager of controllers as cfg's user until the test ends, and returns
// its cached client once the Job informer has synced.
func startManager(ctx context.Context, t *testing.T, cfg *rest.Config, controllers []operator.Controller) client.Client {
	t.Helper()
	mctx, stop := context.WithCancel(ctx)
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Namespace: "slipway-system",
		GracefulShutdownTimeout: 5 * time.Second, SkipControllerNameValidation: true, QPS: -1}
	mgr, err := operator.NewManager(mctx, cfg, scheme.New(), opts, controllers)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if _, err := mgr.GetCache().GetInformer(ctx, &batchv1.Job{}); err != nil {
		t.Fatalf("the Job informer: %v", err)
	}
	// Until the cache has started and the informer listed: a watch the user may not make never
	// syncs, and the test's deadline fails it.
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatalf("the Job informer did not sync: %v", ctx.Err())
	}
	return mgr.GetClient()
}

func cachedJobs(ctx context.Context, t *testing.T, c client.Client, ns string) int {
	t.Helper()
	var list batchv1.JobList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing the cached Jobs of %s: %v", ns, err)
	}
	return len(list.Items)
}
