//go:build e2e

package webapp_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/controller/webapp"
	"github.com/slipway-dev/slipway/internal/operator"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestWebApp_FullControlPlane runs the operator against the full local control plane, where the
// Deployment controller, the scheduler and kwok make pods really become available, the
// EndpointSlice controller fills the Service and the garbage collector deletes what a WebApp owned.
// One WebApp goes through its life: Ready with 3 available replicas, scaled up through its spec and
// down through the scale subresource (Scaling, then Ready), a new image rolled out, then deleted.
func TestWebApp_FullControlPlane(t *testing.T) {
	full := testenv.New(t, testenv.Full)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := full.Client
	ns := "wa-e2e-" + rand.String(5)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	startOperator(ctx, t, full)
	phases := watchPhases(ctx, t, full, ns)

	app := &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       webappv1.WebAppSpec{Image: "nginx:1.25", Replicas: ptr.To[int32](3), Port: 8080, HealthCheckPath: "/"},
	}
	if err := c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	wait := func(t *testing.T, what string, cond func(*webappv1.WebApp) bool) *webappv1.WebApp {
		t.Helper()
		return testenv.WaitFor(ctx, t, c, client.ObjectKeyFromObject(app), what, cond)
	}
	readyWith := func(n int32) func(*webappv1.WebApp) bool {
		return func(a *webappv1.WebApp) bool {
			return a.Status.Phase == webappv1.PhaseReady && a.Status.ObservedGeneration == a.Generation &&
				a.Status.AvailableReplicas == n && a.Status.Replicas == n
		}
	}

	t.Run("ReachesReadyWithAvailableReplicas", func(t *testing.T) {
		got := wait(t, "web is Ready with 3 available replicas", readyWith(3))
		if s := kstatus(t, got); s != status.CurrentStatus {
			t.Errorf("kstatus = %s, want Current", s)
		}
		// WaitingForPods may pass between two reconciles unseen when pods are quick; the start and
		// the end are certain.
		if seen := phases.untilReady(ctx, 0); len(seen) < 2 || seen[0] != webappv1.PhaseReconciling || seen[len(seen)-1] != webappv1.PhaseReady {
			t.Errorf("phases %v, want Reconciling first and Ready last", seen)
		}
		if n := runningPods(ctx, t, c, ns, "", false); n != 3 {
			t.Errorf("%d running pods, want 3", n)
		}
		testenv.Eventually(ctx, t, "the Service has 3 ready endpoints", func() (bool, error) {
			return readyEndpoints(ctx, c, ns, "web") == 3, nil
		})
	})

	t.Run("ScalingShowsScalingThenReady", func(t *testing.T) {
		mark := phases.mark()
		patchSpec(ctx, t, c, app, func(a *webappv1.WebApp) { a.Spec.Replicas = ptr.To[int32](5) })
		wait(t, "web is Ready with 5 available replicas", readyWith(5))
		if seen := phases.untilReady(ctx, mark); !scaledThenReady(seen) {
			t.Errorf("phases after scaling up %v, want Scaling then Ready", seen)
		}

		// Down through the scale subresource, as kubectl scale or an autoscaler does.
		mark = phases.mark()
		scale := &autoscalingv1.Scale{}
		if err := c.SubResource("scale").Get(ctx, app, scale); err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = 2
		if err := c.SubResource("scale").Update(ctx, app, client.WithSubResourceBody(scale)); err != nil {
			t.Fatal(err)
		}
		wait(t, "web is Ready with 2 available replicas", readyWith(2))
		if seen := phases.untilReady(ctx, mark); !scaledThenReady(seen) {
			t.Errorf("phases after scaling down %v, want Scaling then Ready", seen)
		}
		testenv.Eventually(ctx, t, "2 pods run", func() (bool, error) { return runningPods(ctx, t, c, ns, "", false) == 2, nil })
	})

	t.Run("NewImageRollsOut", func(t *testing.T) {
		mark := phases.mark()
		patchSpec(ctx, t, c, app, func(a *webappv1.WebApp) { a.Spec.Image = "nginx:1.27" })
		got := wait(t, "web is Ready on the new image", func(a *webappv1.WebApp) bool {
			return readyWith(2)(a) && a.Status.UpdatedReplicas == 2
		})
		if seen := phases.untilReady(ctx, mark); len(seen) == 0 || slices.Contains(seen, webappv1.PhaseScaling) || seen[len(seen)-1] != webappv1.PhaseReady {
			t.Errorf("phases during the rollout %v, want no Scaling and Ready last", seen)
		}
		testenv.Eventually(ctx, t, "only pods of nginx:1.27 run", func() (bool, error) {
			return runningPods(ctx, t, c, ns, "nginx:1.27", false) == 2 && runningPods(ctx, t, c, ns, "", false) == 2, nil
		})
		if s := kstatus(t, got); s != status.CurrentStatus {
			t.Errorf("kstatus = %s, want Current", s)
		}
	})

	t.Run("DeletionCollectsDeploymentAndService", func(t *testing.T) {
		if err := c.Delete(ctx, app); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(app)
		testenv.Eventually(ctx, t, "the Deployment, the Service and the pods are gone", func() (bool, error) {
			errD := c.Get(ctx, key, &appsv1.Deployment{})
			errS := c.Get(ctx, key, &corev1.Service{})
			return apierrors.IsNotFound(errD) && apierrors.IsNotFound(errS) && runningPods(ctx, t, c, ns, "", true) == 0, nil
		})
	})
}

// startOperator runs the WebApp reconciler in a manager built like the operator's, as the
// operator's user with only the WebApp and common roles (operatorConfig), until the test ends.
func startOperator(ctx context.Context, t *testing.T, full *testenv.Env) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", GracefulShutdownTimeout: 10 * time.Second}
	mgr, err := operator.NewManager(ctx, operatorConfig(t, full), scheme.New(), opts, []operator.Controller{{
		Name: "webapp",
		Setup: func(_ context.Context, mgr ctrl.Manager, _ operator.Options) error {
			r := &webapp.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("webapp-e2e")}
			return r.SetupWithManager(mgr, controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4})
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// phaseLog records every phase the WebApps of a namespace pass through, from a watch: each status
// write is an event, so no phase is missed however briefly it lasts.
type phaseLog struct {
	mu     sync.Mutex
	phases []webappv1.Phase
}

func watchPhases(ctx context.Context, t *testing.T, full *testenv.Env, ns string) *phaseLog {
	t.Helper()
	wc, err := client.NewWithWatch(full.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &webappv1.WebAppList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	l := &phaseLog{}
	go func() {
		for ev := range w.ResultChan() {
			if a, ok := ev.Object.(*webappv1.WebApp); ok && a.Status.Phase != "" {
				l.mu.Lock()
				if n := len(l.phases); n == 0 || l.phases[n-1] != a.Status.Phase {
					l.phases = append(l.phases, a.Status.Phase)
				}
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *phaseLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.phases)
}

func (l *phaseLog) since(mark int) []webappv1.Phase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.phases[mark:])
}

// untilReady returns the phases seen since mark once the last is Ready, or what was seen after
// 30 s: the watch that records them may come a moment after the poll that saw Ready.
func (l *phaseLog) untilReady(ctx context.Context, mark int) []webappv1.Phase {
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := l.since(mark)
		if (len(seen) > 0 && seen[len(seen)-1] == webappv1.PhaseReady) || time.Now().After(deadline) || ctx.Err() != nil {
			return seen
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func scaledThenReady(seen []webappv1.Phase) bool {
	i := slices.Index(seen, webappv1.PhaseScaling)
	return i >= 0 && seen[len(seen)-1] == webappv1.PhaseReady && i < len(seen)-1
}

func patchSpec(ctx context.Context, t *testing.T, c client.Client, app *webappv1.WebApp, change func(*webappv1.WebApp)) {
	t.Helper()
	got := &webappv1.WebApp{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil {
		t.Fatal(err)
	}
	base := got.DeepCopy()
	change(got)
	if err := c.Patch(ctx, got, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
}

// runningPods counts the WebApp's running pods (of image, when set); with all, any pod counts.
func runningPods(ctx context.Context, t *testing.T, c client.Client, ns, image string, all bool) int {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{webapp.LabelInstance: "web"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if all || (p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil &&
			(image == "" || p.Spec.Containers[0].Image == image)) {
			n++
		}
	}
	return n
}

func readyEndpoints(ctx context.Context, c client.Client, ns, service string) int {
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return -1
	}
	n := 0
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && *e.Conditions.Ready {
				n++
			}
		}
	}
	return n
}
