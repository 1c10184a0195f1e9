package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/slipway-dev/slipway"

// clientOnly are the manager packages the CLI may link: the wire contract and its error type.
var clientOnly = []string{module + "/internal/manager/api", module + "/internal/manager/invalid"}

// TestDeps_OnlyAClient: slipway decodes the manager's answers with the wire contract
// (internal/manager/api) and links none of the manager's own packages (server, engine, store,
// ...) nor Helm, which took the binary to 67 MB. It lists every forbidden package that came back.
func TestDeps_OnlyAClient(t *testing.T) {
	var forbidden []string
	for _, p := range deps(t, module+"/cmd/slipway") {
		manager := strings.HasPrefix(p, module+"/internal/manager/") && !slices.Contains(clientOnly, p)
		if manager || strings.HasPrefix(p, "helm.sh/") {
			forbidden = append(forbidden, p)
		}
	}
	if len(forbidden) > 0 {
		t.Fatalf("slipway links packages a client must not (import the types from internal/manager/api):\n  %s",
			strings.Join(forbidden, "\n  "))
	}
}

// heavyKube are the Kubernetes client packages the CLI's in-cluster verbs do without (a prefix
// covers its subpackages): controller-runtime's client (through its metrics, Prometheus's client
// and client-go's leader election, informers and listers), client-go's typed clientset and its
// scheme of every built-in API group, discovery (which links that scheme and the OpenAPI models),
// and cli-runtime (its kube flags link kustomize and kubectl's resource builder). With them the
// binary was 67, then 29.9 MB; the verbs use client-go's dynamic client with the resources they
// know, clientcmd for the kubeconfig flags and a core/v1 REST client for pod logs
// (internal/cli/kube.go, kubeflags.go): 16.8 MB.
var heavyKube = []string{"sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/kubernetes",
	"k8s.io/client-go/informers", "k8s.io/client-go/listers", "github.com/prometheus/",
	"k8s.io/client-go/discovery", "k8s.io/cli-runtime/", "sigs.k8s.io/kustomize/"}

// TestDeps_NoHeavyKubeClient: slipway links none of heavyKube. It lists every one that came back.
func TestDeps_NoHeavyKubeClient(t *testing.T) {
	var forbidden []string
	for _, p := range deps(t, module+"/cmd/slipway") {
		if slices.ContainsFunc(heavyKube, func(h string) bool { return p == h || strings.HasPrefix(p, strings.TrimSuffix(h, "/")+"/") }) {
			forbidden = append(forbidden, p)
		}
	}
	if len(forbidden) > 0 {
		t.Fatalf("slipway links Kubernetes client packages that make it big (use the dynamic client of internal/cli/kube.go):\n  %s",
			strings.Join(forbidden, "\n  "))
	}
}

// TestDeps_APIIsALeaf: the wire contract imports the standard library and small leaf packages
// only, so that whatever imports it (the CLI) stays small.
func TestDeps_APIIsALeaf(t *testing.T) {
	allowed := []string{module + "/internal/isoduration", module + "/internal/manager/invalid",
		"k8s.io/apimachinery/pkg/api/validate/content", "k8s.io/apimachinery/pkg/api/validate/constraints"}
	var extra []string
	for _, p := range deps(t, module+"/internal/manager/api") {
		if p != module+"/internal/manager/api" && !slices.Contains(allowed, p) {
			extra = append(extra, p)
		}
	}
	if len(extra) > 0 {
		t.Fatalf("internal/manager/api imports more than the standard library and %v:\n  %s", allowed, strings.Join(extra, "\n  "))
	}
}

// deps are the packages pkg links, outside the standard library (go list -deps).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the dependencies: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
