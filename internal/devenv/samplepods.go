package devenv

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/ociimage"
	"github.com/slipway-dev/slipway/internal/sampleapp"
)

// The samples' pods on the real node (docs/development.md, "The samples on the real node"): with
// the node, the WebApp sample and the preview sample run the sample app (internal/sampleapp) as
// real containers instead of kwok's simulated nginx and build.
//
//   - WebApp: the image is imported into the node as sampleapp.Ref(SampleAppVersion); the
//     WebApp samples are applied with that image and $PORT set to their port, in namespaces
//     annotated with controlplane.RealNodeNamespaceAnnotations (every pod of them on the node).
//     config/samples keeps nginx, so it stays usable on a real cluster.
//   - Preview: the image is pushed to make dev's registry where the sample Project looks for the
//     commit's image (<repository>:<head>), so the Environment's build is skipped (ImageFound),
//     and the node pulls it from the registry over plain HTTP (AddInsecureRegistry). The operator
//     runs with --catalyst-namespace-annotation set to the node's annotations (SampleOperatorArgs),
//     so environment namespaces send their pods to the node.
//
// The status table then says how to reach one pod of each: `curl http://<pod IP>:<port>/`.

// SampleAppVersion is the version the sample app reports in make dev.
const SampleAppVersion = "dev"

// startSamplePods builds the sample app's image, imports it into the real node and pushes it to
// the registry (at registryAddr, where the sample Project's repository points once pinned; the
// node is told to pull from there). Nothing without the real node.
func (e *Env) startSamplePods(ctx context.Context, step func(string, ...any), registryAddr, head string) error {
	node := e.realNode()
	if node == nil {
		return nil
	}
	start := time.Now()
	img, err := sampleapp.Image(ctx, SampleAppVersion)
	if err != nil {
		return err
	}
	if err := node.ImportImages(ctx, sampleapp.Ref(SampleAppVersion), []v1.Image{img}); err != nil {
		return err
	}
	repo, err := sampleProjectRepository()
	if err != nil {
		return err
	}
	// Pushed through the registry's own address (loopback), named as the pinned Project names it.
	pushed := e.opts.RegistryAddr + "/" + repo + ":" + head
	if _, err := ociimage.Push(ctx, pushed, []v1.Image{img}, true); err != nil {
		return fmt.Errorf("pushing the sample app for the preview sample: %w", err)
	}
	if err := node.AddInsecureRegistry(registryAddr); err != nil {
		return err
	}
	step("Sample app %s built, imported into the real node and pushed as %s/%s:%s in %s", sampleapp.Ref(SampleAppVersion),
		registryAddr, repo, head[:min(len(head), 12)], time.Since(start).Round(100*time.Millisecond))
	return nil
}

// sampleProjectRepository is the repository path (after the registry's address) of the sample
// Project's images: org/app.
func sampleProjectRepository() (string, error) {
	objs, err := config.Samples()
	if err != nil {
		return "", err
	}
	for _, u := range objs {
		if u.GetKind() != "Project" || u.GroupVersionKind().Group != catalystv1alpha1.GroupVersion.Group {
			continue
		}
		repo, _, _ := unstructured.NestedString(u.Object, "spec", "registry", "repository")
		if path, ok := strings.CutPrefix(repo, DefaultRegistryAddr+"/"); ok {
			return path, nil
		}
		return "", fmt.Errorf("sample Project %s: registry.repository %q is not in make dev's registry %s", u.GetName(), repo, DefaultRegistryAddr)
	}
	return "", fmt.Errorf("config/samples holds no Project")
}

// SampleOperatorArgs are the operator's arguments make dev adds with the real node: every
// environment namespace carries the node's annotations, so previews run there.
func SampleOperatorArgs(realNode bool) []string {
	if !realNode {
		return nil
	}
	a := controlplane.RealNodeNamespaceAnnotations()
	var args []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		args = append(args, "--catalyst-namespace-annotation="+k+"="+a[k])
	}
	return args
}

// realNodeSamples points the WebApp samples at the sample app: image image, $PORT their port
// (80 when unset, the API's default), and their namespaces annotated for the real node (a
// Namespace object added when the samples have none).
func realNodeSamples(objs []*unstructured.Unstructured, image string) ([]*unstructured.Unstructured, error) {
	namespaces := map[string]bool{}
	for _, u := range objs {
		if u.GetKind() != "WebApp" || u.GroupVersionKind().Group != "webapp.slipway.dev" {
			continue
		}
		spec, _ := u.Object["spec"].(map[string]any)
		if spec == nil {
			return nil, fmt.Errorf("sample WebApp %s has no spec", u.GetName())
		}
		port := int64(80)
		switch p := spec["port"].(type) {
		case int64:
			port = p
		case float64: // as YAML decodes it
			port = int64(p)
		case nil:
		default:
			return nil, fmt.Errorf("sample WebApp %s: spec.port %v is not a number", u.GetName(), p)
		}
		env, _, err := unstructured.NestedSlice(u.Object, "spec", "env")
		if err != nil {
			return nil, fmt.Errorf("sample WebApp %s: %w", u.GetName(), err)
		}
		env = append(withoutEnv(env, sampleapp.EnvPort), map[string]any{"name": sampleapp.EnvPort, "value": strconv.FormatInt(port, 10)})
		if err := unstructured.SetNestedSlice(u.Object, env, "spec", "env"); err != nil {
			return nil, err
		}
		if err := unstructured.SetNestedField(u.Object, image, "spec", "image"); err != nil {
			return nil, err
		}
		namespaces[u.GetNamespace()] = true
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" && u.GroupVersionKind().Group == "" && namespaces[u.GetName()] {
			a := u.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			maps.Copy(a, controlplane.RealNodeNamespaceAnnotations())
			u.SetAnnotations(a)
			delete(namespaces, u.GetName())
		}
	}
	var added []*unstructured.Unstructured
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns)
		u.SetAnnotations(controlplane.RealNodeNamespaceAnnotations())
		added = append(added, u)
	}
	return append(added, objs...), nil
}

func withoutEnv(env []any, name string) []any {
	out := env[:0:0]
	for _, e := range env {
		if m, ok := e.(map[string]any); !ok || m["name"] != name {
			out = append(out, e)
		}
	}
	return out
}

// SampleAddress is where one ready pod of a sample is reached from the machine.
type SampleAddress struct {
	// Kind, Namespace and Name are the sample's (WebApp or Environment).
	Kind, Namespace, Name string
	// Addr is "<pod IP>:<port>" of a ready endpoint of the Service the WebApp makes, or of the
	// Service the preview's Ingress routes to; URL is the preview's (an Environment's) URL.
	Addr, URL string
}

// SampleAddresses says how to reach one ready pod of each WebApp and Environment sample on the
// real node; the samples whose pods are not ready yet are left out. Pods have no other address
// from the machine: no kube-proxy serves ClusterIPs, no ingress controller the preview's host.
func (e *Env) SampleAddresses(ctx context.Context) []SampleAddress {
	n := e.realNode()
	if n == nil {
		return nil
	}
	var out []SampleAddress
	for _, s := range e.samples {
		a := SampleAddress{Kind: s.gvk.Kind, Namespace: s.namespace, Name: s.name}
		ns, svc := s.namespace, s.name
		switch {
		case s.gvk.Kind == "WebApp":
		case s.gvk.Kind == "Environment" && s.gvk.Group == catalystv1alpha1.GroupVersion.Group:
			env := &catalystv1alpha1.Environment{}
			if err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, env); err != nil || env.Status.Namespace == "" {
				continue
			}
			ns, svc, a.URL = env.Status.Namespace, e.previewService(ctx, env), env.Status.URL
		default:
			continue
		}
		if a.Addr = readyEndpoint(ctx, e.cp.Client, ns, svc, n); a.Addr != "" {
			out = append(out, a)
		}
	}
	return out
}

// reachRows are the status rows of SampleAddresses: `curl http://<pod IP>:<port>/`.
func (e *Env) reachRows(ctx context.Context) []string {
	var rows []string
	for _, a := range e.SampleAddresses(ctx) {
		row := fmt.Sprintf("Reach\t%s\t%s\treal pod\tcurl http://%s/", a.Namespace, a.Name, a.Addr)
		if a.URL != "" {
			row += "  (what " + a.URL + " routes to)"
		}
		rows = append(rows, row)
	}
	return rows
}

// previewService is the Service the Environment's Ingress routes to: its Project's
// spec.preview.service.name, defaulting to the Project's name.
func (e *Env) previewService(ctx context.Context, env *catalystv1alpha1.Environment) string {
	p := &catalystv1alpha1.Project{}
	team := env.Labels["catalyst.dev/team"]
	if err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: team, Name: env.Spec.ProjectRef.Name}, p); err == nil && p.Spec.Preview.Service.Name != "" {
		return p.Spec.Preview.Service.Name
	}
	return env.Spec.ProjectRef.Name
}

// readyEndpoint is "ip:port" of a ready endpoint of the Service on the real node, or "".
func readyEndpoint(ctx context.Context, c client.Client, ns, svc string, n *controlplane.RealNode) string {
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: svc}); err != nil {
		return ""
	}
	for _, s := range list.Items {
		if len(s.Ports) == 0 || s.Ports[0].Port == nil {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(ep.Addresses) > 0 && n.Subnet.Contains(net.ParseIP(ep.Addresses[0])) {
				return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*s.Ports[0].Port)))
			}
		}
	}
	return ""
}
