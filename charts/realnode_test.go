//go:build e2e

package charts_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/devimage"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestChart_OperatorRunsFromItsImageOnTheRealNode needs real containers: it is the only test in
// which the operator runs as users run it, from its image (devimage: make image's user, CA bundle,
// entrypoint) through the chart's default per-system Deployments, under Pod Security restricted
// with a read-only root file system, with the chart's probes, ports, Service selectors, mounted
// webhook certificate and ServiceAccount tokens. kwok would report every pod Running whatever the
// image or the chart did.
//
// The chart is installed as a user would (helm install, default values) but for the local image
// (imagePullPolicy Never, never pulled), one replica, and KUBERNETES_SERVICE_HOST/PORT pointed at
// the real node's gateway through extraEnv, as the node has no kube-proxy; the release namespace
// sends every pod to the real node (controlplane.RealNodeNamespaceAnnotations). The operator
// creates the webhook certificate itself (no cert-manager). It checks that every Deployment of the
// release is Available with its pods Running and Ready on the real node, never restarted and never
// failing a liveness probe once the kubelet has run it (and /healthz answers from the host at the
// pod's address); that every
// webhook of the release's webhook configurations answers through its Service (a denial with the
// webhook's own message, an admission or defaulting), and that no CRD has a conversion webhook
// that would go untested; and that each Deployment's metrics endpoint serves controller-runtime
// metrics over HTTPS to a ServiceAccount holding slipway-metrics-reader, at the pod's address.
func TestChart_OperatorRunsFromItsImageOnTheRealNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	start := time.Now()
	img, err := devimage.Operator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	built := time.Since(start)
	cp := realNodeControlPlane(ctx, t)
	node := cp.RealNodes()[0]
	importStart := time.Now()
	if err := node.ImportImages(ctx, devimage.OperatorRef, []v1.Image{img}); err != nil {
		t.Fatal(err)
	}
	t.Logf("operator image built in %s, imported in %s", built.Round(time.Millisecond), time.Since(importStart).Round(time.Millisecond))

	c := cp.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS,
		Labels:      map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
		Annotations: controlplane.RealNodeNamespaceAnnotations()}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(strings.TrimPrefix(cp.Config.Host, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	values := fmt.Sprintf(`image: {repository: %s, tag: %s, pullPolicy: Never}
replicas: 1
extraEnv:
- {name: KUBERNETES_SERVICE_HOST, value: %q}
- {name: KUBERNETES_SERVICE_PORT, value: %q}
`, devimage.OperatorRepository, devimage.OperatorTag, host, port)
	installStart := time.Now()
	rel := install(ctx, t, cp, values)
	deployments := waitReleaseAvailable(ctx, t, c, node.Name)
	t.Logf("chart installed, %d Deployments Available on the real node in %s", len(deployments), time.Since(installStart).Round(time.Millisecond))
	if rel.Info.Status != "deployed" {
		t.Fatalf("release status %s", rel.Info.Status)
	}

	checkReleaseWebhooks(ctx, t, c)
	checkNoConversionWebhooks(ctx, t, c)
	token := metricsReaderToken(ctx, t, c)
	for _, d := range deployments {
		pod := podOf(ctx, t, c, d)
		if got := httpStatus("http://" + net.JoinHostPort(pod.Status.PodIP, "8081") + "/healthz"); got != http.StatusOK {
			t.Errorf("%s: GET /healthz at the pod's address = %d", pod.Name, got)
		}
		checkMetrics(ctx, t, c, d.Name+"-metrics", token)
	}
	// Liveness: once each container has run past the probe's initial delay and one period, the
	// kubelet has probed it; a failed probe would be an Unhealthy event, three a restart.
	var pods []corev1.Pod
	for _, d := range deployments {
		pods = append(pods, podOf(ctx, t, c, d))
	}
	checkLiveness(ctx, t, c, pods)
	logOperatorMemory(t, pods)
}

// checkLiveness waits until the chart's liveness probe (initialDelaySeconds 15, periodSeconds 20)
// has run on every pod's container, then wants no failed liveness probe and no restart.
func checkLiveness(ctx context.Context, t *testing.T, c client.Client, pods []corev1.Pod) {
	t.Helper()
	const probed = 15*time.Second + 20*time.Second + 2*time.Second
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil {
				select {
				case <-time.After(time.Until(s.State.Running.StartedAt.Add(probed))):
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				}
			}
		}
	}
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(releaseNS)); err != nil {
		t.Fatal(err)
	}
	started := map[string]bool{}
	for _, e := range events.Items {
		if e.Reason == "Unhealthy" && strings.Contains(e.Message, "Liveness") {
			t.Errorf("%s: %s", e.InvolvedObject.Name, e.Message)
		}
		started[e.InvolvedObject.Name] = started[e.InvolvedObject.Name] || e.Reason == "Started"
	}
	// The kubelet's events arrive (so a probe failure would have been seen).
	for _, p := range pods {
		if !started[p.Name] {
			t.Errorf("no Started event of the kubelet for %s", p.Name)
		}
	}
	for _, p := range pods {
		var now corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(&p), &now); err != nil {
			t.Fatal(err)
		}
		for _, s := range now.Status.ContainerStatuses {
			if s.RestartCount != 0 || !s.Ready {
				t.Errorf("%s: container %s ready=%v, restarted %d times: %+v", now.Name, s.Name, s.Ready, s.RestartCount, s.LastTerminationState)
			}
		}
	}
}

// realNodeControlPlane starts a full control plane with its real node (kube-apiserver on the
// node's gateway, ServiceAccount tokens, webhooks called at their Service's endpoints) and the
// project's CRDs, stopped when the test ends.
func realNodeControlPlane(ctx context.Context, t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	crds, err := config.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	cp, err := controlplane.Start(ctx, controlplane.Options{Mode: controlplane.Full, LogDir: logDir, CRDs: crds,
		Scheme: scheme.New(), RealNode: &controlplane.RealNodeOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpPods(t, cp.Client)
			t.Logf("control-plane logs:\n%s", controlplane.LogTails(logDir, 40))
		}
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return cp
}

// waitReleaseAvailable waits until every Deployment of the release is Available with its pods
// Running and Ready on the real node, and returns them sorted by name.
func waitReleaseAvailable(ctx context.Context, t *testing.T, c client.Client, nodeName string) []appsv1.Deployment {
	t.Helper()
	var list appsv1.DeploymentList
	testenv.Eventually(ctx, t, "every Deployment of the release is Available on the real node", func() (bool, error) {
		if err := c.List(ctx, &list, client.InNamespace(releaseNS), client.MatchingLabels{"app.kubernetes.io/instance": releaseName}); err != nil {
			return false, err
		}
		if len(list.Items) == 0 {
			return false, fmt.Errorf("no Deployment")
		}
		for _, d := range list.Items {
			if d.Status.AvailableReplicas != 1 || d.Status.UpdatedReplicas != 1 {
				return false, fmt.Errorf("%s: %d available, %d updated", d.Name, d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
			}
			pod := podOf(ctx, t, c, d)
			if pod.Spec.NodeName != nodeName || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
				return false, fmt.Errorf("%s on %q, phase %s, IP %q", pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.PodIP)
			}
		}
		return true, nil
	})
	want := map[string]bool{"slipway-werfbundle": true, "slipway-webapp": true, "slipway-catalyst": true}
	for _, d := range list.Items {
		delete(want, d.Name)
	}
	if len(want) > 0 {
		t.Errorf("Deployments missing from the default release: %v", want)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// podOf returns the one pod of a Deployment.
func podOf(ctx context.Context, t *testing.T, c client.Client, d appsv1.Deployment) corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(d.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) != 1 {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s (%d pods)", d.Name, len(live))}}
	}
	return live[0]
}

// checkReleaseWebhooks calls every webhook of the release's webhook configurations through the
// API server, which reaches it at its Service's endpoints: each must answer with its own verdict.
// A webhook this test does not know fails it, so a new one gets a check here.
func checkReleaseWebhooks(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	team := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-web"}}
	if err := c.Create(ctx, team); err != nil {
		t.Fatal(err)
	}
	checks := map[string]func(){
		"mwebapp.slipway.dev": func() {
			w := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "defaulted", Namespace: team.Name},
				Spec: webappv1.WebAppSpec{Image: "registry.example/app:1.0"}}
			if err := c.Create(ctx, w, client.DryRunAll); err != nil {
				t.Fatalf("a valid WebApp (dry run): %v", err)
			}
			if w.Spec.Replicas == nil || w.Spec.Port == 0 || w.Spec.ServiceType == "" {
				t.Errorf("mwebapp.slipway.dev did not default the WebApp: %+v", w.Spec)
			}
		},
		"vwebapp.slipway.dev": func() {
			w := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "no-tag", Namespace: team.Name},
				Spec: webappv1.WebAppSpec{Image: "nginx"}}
			wantDenied(t, c.Create(ctx, w, client.DryRunAll), "vwebapp.slipway.dev", "tag or a digest")
		},
		"vwebapp-scale.slipway.dev": func() {
			w := &webappv1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "scaled", Namespace: team.Name},
				Spec: webappv1.WebAppSpec{Image: "registry.example/app:1.0"}}
			if err := c.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 101}}
			wantDenied(t, c.SubResource("scale").Update(ctx, w, client.WithSubResourceBody(scale)), "vwebapp-scale.slipway.dev", "spec.replicas")
			scale.Spec.Replicas = 2
			if err := c.SubResource("scale").Update(ctx, w, client.WithSubResourceBody(scale)); err != nil {
				t.Errorf("scaling a WebApp to 2: %v", err)
			}
		},
	}
	selector := client.MatchingLabels{"app.kubernetes.io/instance": releaseName}
	var names []string
	var mutating admissionregistrationv1.MutatingWebhookConfigurationList
	if err := c.List(ctx, &mutating, selector); err != nil {
		t.Fatal(err)
	}
	for _, m := range mutating.Items {
		for _, w := range m.Webhooks {
			names = append(names, w.Name)
		}
	}
	var validating admissionregistrationv1.ValidatingWebhookConfigurationList
	if err := c.List(ctx, &validating, selector); err != nil {
		t.Fatal(err)
	}
	for _, v := range validating.Items {
		for _, w := range v.Webhooks {
			names = append(names, w.Name)
		}
	}
	if len(names) == 0 {
		t.Fatal("the release has no webhook")
	}
	for _, name := range names {
		check, ok := checks[name]
		if !ok {
			t.Errorf("webhook %s of the release has no check in this test", name)
			continue
		}
		check()
	}
}

func wantDenied(t *testing.T, err error, webhook, message string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), `admission webhook "`+webhook+`" denied the request`) || !strings.Contains(err.Error(), message) {
		t.Errorf("want a denial by %s saying %q, got %v", webhook, message, err)
	}
}

// checkNoConversionWebhooks fails on a CRD converted by a webhook: none is today, and one would
// need its own check above.
func checkNoConversionWebhooks(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds.Items {
		if conv := crd.Spec.Conversion; conv != nil && conv.Strategy == apiextensionsv1.WebhookConverter {
			t.Errorf("CRD %s has a conversion webhook this test does not call", crd.Name)
		}
	}
}

// metricsReaderToken returns a token of a ServiceAccount bound to the chart's
// slipway-metrics-reader ClusterRole, as a Prometheus scraper would hold.
func metricsReaderToken(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: "default"}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "slipway-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// checkMetrics scrapes the metrics Service's endpoint at the pod's address, over HTTPS with the
// scraper's token (the operator's own certificate: not verified).
func checkMetrics(ctx context.Context, t *testing.T, c client.Client, service, token string) {
	t.Helper()
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(releaseNS), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		t.Fatal(err)
	}
	var addr string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, p := range s.Ports {
				if len(e.Addresses) > 0 && p.Port != nil {
					addr = net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port)))
				}
			}
		}
	}
	if addr == "" {
		t.Errorf("Service %s has no endpoint: %+v", service, slices.Items)
		return
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the operator's self-signed metrics certificate
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Errorf("scraping %s at %s: %v", service, addr, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "controller_runtime_reconcile_total") {
		t.Errorf("scraping %s at %s: %s, %d bytes, want controller_runtime metrics:\n%.400s", service, addr, resp.Status, len(body), body)
	}
}

// dumpPods logs every pod of the release namespace with its container states (a failed
// container's log tail is in its termination message: FallbackToLogsOnError).
func dumpPods(t *testing.T, c client.Client) {
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods, client.InNamespace(releaseNS)); err != nil {
		t.Logf("listing pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s on %q: %s %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		for _, s := range p.Status.ContainerStatuses {
			t.Logf("  container %s ready=%v restarts=%d state=%+v last=%+v", s.Name, s.Ready, s.RestartCount, s.State, s.LastTerminationState)
		}
	}
}

// logOperatorMemory logs the resident memory of each pod's operator process (the pods'
// containers are processes of this machine, in cgroups named after their pod's UID).
func logOperatorMemory(t *testing.T, pods []corev1.Pod) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmdline), "/operator\x00") {
			continue
		}
		cgroup, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		for _, p := range pods {
			if !strings.Contains(string(cgroup), "pod"+string(p.UID)) {
				continue
			}
			status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
			for _, line := range strings.Split(string(status), "\n") {
				if rss, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					t.Logf("pod %s, operator process %s: %s resident", p.Name, e.Name(), strings.TrimSpace(rss))
				}
			}
		}
	}
}
