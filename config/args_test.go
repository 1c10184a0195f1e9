package config_test

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/slipway-dev/slipway/internal/operator/command"
)

// TestKustomize_ArgsAreFlagsTheOperatorAccepts builds config/default (the manager, its receiver
// and everything else `kubectl apply -k config/default` installs) and parses the operator
// container's arguments with the operator's own flag set (internal/operator/command, as
// cmd/operator does): an unknown flag, a value the flag refuses, or an argument that is not a
// flag fails.
func TestKustomize_ArgsAreFlagsTheOperatorAccepts(t *testing.T) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "default")
	if err != nil {
		t.Fatalf("kustomize build config/default: %v", err)
	}
	var deployments []*appsv1.Deployment
	namespaces := map[string]bool{}
	for _, r := range res.Resources() {
		if r.GetKind() == "Namespace" {
			namespaces[r.GetName()] = true
		}
		if r.GetKind() != "Deployment" {
			continue
		}
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m, d, true); err != nil {
			t.Fatalf("Deployment %s: %v", r.GetName(), err)
		}
		deployments = append(deployments, d)
	}
	if len(deployments) != 1 || deployments[0].Name != "slipway-operator" {
		t.Fatalf("config/default holds %d Deployments, want the one slipway-operator", len(deployments))
	}
	d := deployments[0]
	var args []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", d.Namespace))
	}
	fs, flags := command.NewFlagSet("operator", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	if err := command.Parse(fs, args); err != nil {
		t.Fatalf("the operator refuses the arguments of config/manager/manager.yaml %q: %v", args, err)
	}
	if _, err := flags.Options.Select(flags.Controllers); err != nil {
		t.Errorf("--controllers: %v", err)
	}
	// What the manifests' comments and builds.yaml promise.
	for name, want := range map[string]string{
		"namespace":                       "slipway-system",
		"catalyst-build-namespace":        "slipway-builds",
		"werfbundle-webhook-bind-address": "",
		"webhook-cert-dir":                "/tmp/k8s-webhook-server/serving-certs",
	} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"namespace", "catalyst-build-namespace"} {
		if ns := fs.Lookup(name).Value.String(); !namespaces[ns] {
			t.Errorf("--%s=%s names a namespace config/default does not create", name, ns)
		}
	}
}
