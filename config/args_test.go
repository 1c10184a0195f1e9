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

	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/operator/command"
)

// TestKustomize_ArgsAreFlagsTheOperatorAccepts builds config/default (the Deployments, the
// receiver and everything else `kubectl apply -k config/default` installs) and parses each
// operator container's arguments with the operator's own flag set (internal/operator/command, as
// cmd/operator does): an unknown flag, a value the flag refuses, or an argument that is not a
// flag fails. There is one Deployment per controller, each running that controller alone, as its
// own ServiceAccount, with a Lease of its own.
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
	controllers, err := config.Controllers()
	if err != nil {
		t.Fatal(err)
	}
	if len(deployments) != len(controllers) {
		t.Fatalf("config/default holds %d Deployments, want one per controller (%v)", len(deployments), controllers)
	}
	leases := map[string]bool{}
	for _, d := range deployments {
		system := strings.TrimPrefix(d.Name, "slipway-")
		var args []string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			args = append(args, strings.ReplaceAll(a, "$(POD_NAMESPACE)", d.Namespace))
		}
		fs, flags := command.NewFlagSet("operator", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		if err := command.Parse(fs, args); err != nil {
			t.Fatalf("the operator refuses the arguments of %s %q: %v", d.Name, args, err)
		}
		selected, err := flags.Options.Select(flags.Controllers)
		if err != nil {
			t.Errorf("%s: --controllers: %v", d.Name, err)
		}
		if len(selected) != 1 || selected[0].Name != system {
			t.Errorf("%s runs %v, want %s alone", d.Name, flags.Options.Controllers, system)
		}
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != d.Name {
			t.Errorf("%s runs as %s, want its own ServiceAccount %s", d.Name, sa, d.Name)
		}
		lease := fs.Lookup("leader-election-id").Value.String()
		if leases[lease] {
			t.Errorf("%s: Lease %s is another Deployment's", d.Name, lease)
		}
		leases[lease] = true
		// What the manifests' comments and builds.yaml promise.
		want := map[string]string{"namespace": "slipway-system", "leader-election-id": d.Name + ".slipway.dev"}
		switch system {
		case "catalyst":
			want["catalyst-build-namespace"] = "slipway-builds"
			// The build Jobs' fetch and push containers run the operator's own image.
			want["catalyst-build-helper-image"] = d.Spec.Template.Spec.Containers[0].Image
			want["catalyst-deployer-namespace"] = "slipway-catalyst-deployers"
		case "werfbundle":
			want["werfbundle-webhook-bind-address"] = ""
			want["werfbundle-webhook-secret-file"] = "/etc/slipway/receiver/secret"
		case "webapp":
			want["webhook-cert-dir"] = "/tmp/k8s-webhook-server/serving-certs"
		}
		for name, want := range want {
			if got := fs.Lookup(name).Value.String(); got != want {
				t.Errorf("%s: --%s = %q, want %q", d.Name, name, got, want)
			}
		}
		for _, name := range []string{"namespace", "catalyst-build-namespace", "catalyst-deployer-namespace"} {
			if ns := fs.Lookup(name).Value.String(); !namespaces[ns] {
				t.Errorf("%s: --%s=%s names a namespace config/default does not create", d.Name, name, ns)
			}
		}
	}
}
