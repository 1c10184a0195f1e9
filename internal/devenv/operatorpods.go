package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/devimage"
)

// With the real node, make dev runs the operator as users do: its image (devimage, what make
// image builds) imported into the node, installed by its chart as the sample operator's release
// (SampleOperator in SampleOperatorNamespace at SampleInstalledVersion), before the samples, whose
// WebApp the release's admission webhooks admit. The manager's sample deployment then upgrades
// that release, rolling the real pods.
//
// The release runs the chart's single-Deployment form (one pod, every controller): make dev is a
// laptop's environment, where one operator process instead of three keeps memory and the
// upgrade's roll small; the chart's default per-controller form is proven on the real node by
// charts/realnode_test.go.

// startOperatorPods builds and imports the operator image, prepares the release namespace and
// installs the release; the install waits for its Deployment to be available.
func (e *Env) startOperatorPods(ctx context.Context, step func(string, ...any)) error {
	node := e.realNode()
	start := time.Now()
	img, err := e.operatorImage(ctx)
	if err != nil {
		return err
	}
	if err := node.ImportImages(ctx, devimage.OperatorRef, []v1.Image{img}); err != nil {
		return err
	}
	step("Built the operator image %s and imported it into the real node in %s", devimage.OperatorRef, time.Since(start).Round(100*time.Millisecond))
	if err := e.prepareOperatorNamespaces(ctx); err != nil {
		return err
	}
	dir, err := e.chartDir()
	if err != nil {
		return err
	}
	step("Installing the operator with its chart: release %s/%s %s (real pods, image %s)", SampleOperatorNamespace, SampleOperator,
		SampleInstalledVersion, devimage.OperatorRef)
	start = time.Now()
	rev, _, err := installSampleRelease(ctx, e.cp.Config, e.cp.Client, dir, e.sampleValues())
	if err != nil {
		return fmt.Errorf("%w\n%s", err, e.operatorPodsReport(context.WithoutCancel(ctx)))
	}
	e.releaseInstalled = true
	step("Operator pods Ready in %s (revision %d): %s", time.Since(start).Round(100*time.Millisecond), rev, strings.Join(e.operatorPods(ctx), ", "))
	return nil
}

// operatorImage builds the image from Options.OperatorBinary when given, else from ./cmd/operator.
func (e *Env) operatorImage(ctx context.Context) (v1.Image, error) {
	if e.opts.OperatorBinary != "" {
		return devimage.FromBinary(e.opts.OperatorBinary, "/operator", "slipway-operator")
	}
	return devimage.Operator(ctx)
}

// prepareOperatorNamespaces creates the operator's namespaces as config/ ships them (the release
// namespace at Pod Security restricted, Catalyst's build and deployer namespaces, which the
// sample values do not let the chart create), the release namespace annotated so that every pod
// of it runs on the real node.
func (e *Env) prepareOperatorNamespaces(ctx context.Context) error {
	namespaces, err := config.Namespaces()
	if err != nil {
		return err
	}
	for _, want := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: want.ObjectMeta}
		ns.ResourceVersion = ""
		if _, err := controllerutil.CreateOrUpdate(ctx, e.cp.Client, ns, func() error {
			ns.Labels = mergeMaps(ns.Labels, want.Labels)
			if ns.Name == SampleOperatorNamespace {
				ns.Annotations = mergeMaps(ns.Annotations, controlplane.RealNodeNamespaceAnnotations())
			}
			return nil
		}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", want.Name, err)
		}
	}
	return nil
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	maps.Copy(dst, src)
	return dst
}

// realNodeValues are the sample release's values for the real node: every controller (the
// admission webhooks served by the pod through their Service), the local image never pulled, and
// the API server at the node's gateway (no kube-proxy: the kubernetes Service's address leads
// nowhere from a pod).
func realNodeValues(apiserver string) map[string]any {
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(apiserver, "https://"))
	return map[string]any{
		"controllers":      []any{"werfbundle", "webapp", "catalyst"},
		"singleDeployment": true,
		"replicas":         1,
		"image": map[string]any{"repository": devimage.OperatorRepository, "tag": devimage.OperatorTag,
			"pullPolicy": string(corev1.PullNever)},
		"extraEnv": []any{
			map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": host},
			map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": port},
		},
		"catalyst": map[string]any{"buildNamespace": map[string]any{"create": false},
			"deployerNamespace": map[string]any{"create": false}},
		// Preview environments' namespaces send their pods to the node too (samplepods.go).
		"extraArgs": toAny(SampleOperatorArgs(true)),
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// operatorPods returns the release's pods as "name (IP)".
func (e *Env) operatorPods(ctx context.Context) []string {
	var pods corev1.PodList
	if err := e.cp.Client.List(ctx, &pods, client.InNamespace(SampleOperatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/instance": SampleOperator}); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("%s (%s)", p.Name, p.Status.PodIP))
	}
	return out
}

// operatorPodsReport says why the release's pods are not ready: each container's state, and a
// failed one's last log lines (the chart's FallbackToLogsOnError termination message).
func (e *Env) operatorPodsReport(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var pods corev1.PodList
	if err := e.cp.Client.List(ctx, &pods, client.InNamespace(SampleOperatorNamespace)); err != nil {
		return "listing the operator's pods: " + err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s on %q: %s\n", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, s := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  %s ready=%v restarts=%d\n", s.Name, s.Ready, s.RestartCount)
			if t := s.LastTerminationState.Terminated; t != nil {
				fmt.Fprintf(&b, "  last exit %d (%s):\n%s\n", t.ExitCode, t.Reason, t.Message)
			}
			if w := s.State.Waiting; w != nil {
				fmt.Fprintf(&b, "  waiting: %s %s\n", w.Reason, w.Message)
			}
		}
	}
	return b.String()
}

// printOperatorPods prints, in the ready banner, where the operator's pods answer.
func (e *Env) printOperatorPods(ctx context.Context, w io.Writer) {
	var pods corev1.PodList
	if err := e.cp.Client.List(ctx, &pods, client.InNamespace(SampleOperatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/instance": SampleOperator}); err != nil || len(pods.Items) == 0 {
		fmt.Fprintf(w, "  operator:   release %s/%s on the real node (its pods: %v)\n", SampleOperatorNamespace, SampleOperator, err)
		return
	}
	p := pods.Items[0]
	ip := p.Status.PodIP
	fmt.Fprintf(w, "  operator:   pod %s/%s (image %s): http://%s:8081/healthz  https://%s:8443/metrics (a token of a ServiceAccount bound to slipway-metrics-reader)\n",
		SampleOperatorNamespace, p.Name, devimage.OperatorRef, ip, ip)
	fmt.Fprintf(w, "  its log:    kubectl logs -n %s %s (the file: %s)\n", p.Namespace, p.Name, filepath.Join(e.realNode().Dir, "pod-logs",
		fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "operator", "0.log"))
}

// gatewayForwarder makes a service of the machine on 127.0.0.1 reachable from pods at the real
// node's gateway (the only address of the machine pods reach), on the same port: it copies each
// connection through. make dev's registry and git server stay on 127.0.0.1 for the user's tools.
type gatewayForwarder struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// forwardFromGateway listens on the gateway at addr's port and forwards to addr; it returns the
// gateway address.
func forwardFromGateway(gateway net.IP, addr string) (*gatewayForwarder, string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway.String(), port))
	if err != nil {
		return nil, "", fmt.Errorf("forwarding %s to the real node's pods: %w", addr, err)
	}
	f := &gatewayForwarder{ln: ln, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go f.serve(addr)
	return f, ln.Addr().String(), nil
}

func (f *gatewayForwarder) serve(to string) {
	defer f.wg.Done()
	for {
		in, err := f.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.DialTimeout("tcp", to, 5*time.Second)
		if err != nil {
			_ = in.Close()
			continue
		}
		f.track(in, out)
		f.wg.Add(1)
		go f.handle(in, out)
	}
}

func (f *gatewayForwarder) track(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		f.conns[c] = true
	}
}

// handle copies both ways until both sides have ended (each end closes the other's writing half,
// so a client that waits for EOF sees it), then closes both connections.
func (f *gatewayForwarder) handle(in, out net.Conn) {
	defer f.wg.Done()
	done := make(chan struct{}, 2)
	copyHalf := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go copyHalf(in, out)
	go copyHalf(out, in)
	<-done
	<-done
	_, _ = in.Close(), out.Close()
	f.mu.Lock()
	delete(f.conns, in)
	delete(f.conns, out)
	f.mu.Unlock()
}

// Close stops listening, closes every forwarded connection and waits for the copies to end.
func (f *gatewayForwarder) Close() error {
	if f == nil {
		return nil
	}
	err := f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
