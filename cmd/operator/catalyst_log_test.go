//go:build e2e

package main_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/naming"
	"github.com/slipway-dev/slipway/internal/controlplane"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/joblog/joblogtest"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
	"github.com/slipway-dev/slipway/internal/testenv"
	"github.com/slipway-dev/slipway/internal/testenv/operatorproc"
)

// failOnNode is a mutating admission webhook that sends the pods it is registered for to a log
// node and makes them fail there (kwok's controlplane.FailLabel): the operator binary builds its
// Jobs as it always does, only their pods behave like a build that breaks.
func failOnNode(ctx context.Context, t *testing.T, c client.Client, name string, selector *metav1.LabelSelector, node *joblogtest.LogNode) {
	t.Helper()
	patch, err := json.Marshal([]map[string]any{
		{"op": "add", "path": "/spec/nodeName", "value": node.Name},
		{"op": "add", "path": "/metadata/labels/" + strings.ReplaceAll(controlplane.FailLabel, "/", "~1"), "value": "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err == nil {
			err = json.Unmarshal(body, &review)
		}
		if err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("bad AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true,
			Patch: patch, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch)}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: name + ".test.slipway.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/mutate"),
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			ObjectSelector:          selector,
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := c.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cfg) })
}

// TestOperator_CatalystBuildFailureKeepsTheLogsLastLine runs the operator binary with the
// Catalyst controller on a full control plane, in both forms an install runs it: alone, as the
// default install's slipway-catalyst Deployment, under Catalyst's own roles (its Jobs, pods and
// logs a Role in the build namespace only, so its cache must watch Jobs there alone), and with
// every system in one process, as the chart's single Deployment, under the roles of all (WerfBundle
// watches Jobs in every namespace). In each, an Environment's image is not in the registry, so it
// is built; the build pod fails on a kwok node that serves its log (joblogtest.LogNode), a Kaniko
// log far longer than the 64 KiB read, its error on the last line. The Environment's BuildReady
// condition (BuildFailed) ends with that line: the operator created the Job, watched it and read
// the end of the log through the API server's pods/log as its RBAC user.
func TestOperator_CatalystBuildFailureKeepsTheLogsLastLine(t *testing.T) {
	operatorproc.Binary(t)
	full := testenv.New(t, testenv.Full)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	// The build pods' log: Kaniko's progress, then its error.
	const lastLine = `error building image: error building stage: failed to execute command: waiting for process to exit: exit status 2`
	var log strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&log, "INFO[%04d] RUN make build: cc -O2 -c src/module_%04d.c -o build/module_%04d.o ................. ok\n", i, i, i)
	}
	log.WriteString(lastLine + "\n")
	node := joblogtest.StartLogNode(t, full, catalyst.DefaultBuildNamespace)
	node.WriteLog(t, catalyst.DefaultBuildNamespace, log.String())
	failOnNode(ctx, t, full.Client, "catalyst-builds-fail", &metav1.LabelSelector{MatchLabels: map[string]string{catalyst.LabelComponent: catalyst.ComponentBuild}}, node)

	for _, form := range []struct {
		name, team  string
		controllers []string // the RBAC installed; none: every system's
		args        []string
	}{
		{"catalyst alone", "logs", []string{"catalyst"}, []string{"--controllers=catalyst"}},
		{"every system in one process", "logs-all", nil, []string{"--leader-election-id=slipway-single.slipway.dev",
			"--webhook-cert-mirror=true", "--webhook-cert-dns-names=localhost"}},
	} {
		t.Run(form.name, func(t *testing.T) {
			kubeconfig, err := full.InstallOperatorIdentity(ctx, filepath.Join(t.TempDir(), "operator.kubeconfig"), form.controllers...)
			if err != nil {
				t.Fatal(err)
			}
			environment := failingBuild(ctx, t, full.Client, form.team)
			p := operatorproc.Start(t, operatorproc.Binary(t), operatorproc.Options{
				Kubeconfig: kubeconfig,
				Args:       append([]string{"--namespace=" + controlplane.OperatorNamespace}, form.args...),
			})
			p.WaitReady(ctx, t)

			got := testenv.WaitFor(ctx, t, full.Client, client.ObjectKeyFromObject(environment), "the Environment's build failed",
				func(e *catalystv1alpha1.Environment) bool {
					b := buildReady(e)
					return b != nil && b.Reason == catalystv1alpha1.BuildFailedReason
				},
				func(e *catalystv1alpha1.Environment) string {
					return fmt.Sprintf("phase %s, BuildReady %+v", e.Status.Phase, buildReady(e))
				})
			msg := buildReady(got).Message
			if !strings.HasSuffix(msg, "\n"+lastLine) {
				t.Errorf("BuildReady message ends with %q, want the build log's last line %q", msg[max(0, len(msg)-200):], lastLine)
			}
			if !strings.Contains(msg, "build of "+got.Status.Image+" failed") {
				t.Errorf("BuildReady message %q does not say the build failed", msg)
			}
		})
	}
}

// failingBuild creates a team's Project, of a git repository and a registry of its own, and an
// Environment whose image is not in the registry, so the operator builds it, and returns the
// Environment.
func failingBuild(ctx context.Context, t *testing.T, c client.Client, team string) *catalystv1alpha1.Environment {
	t.Helper()
	const project, user, password = "app", "bot", "git-password"
	git := gittest.NewServer(t, gittest.WithBasicAuth(user, password))
	repo := git.NewRepository(t, "org/app")
	commit, err := repo.Commit("the application", gittest.Merge(gittest.Manifests("deploy/manifests"), gittest.Dockerfile("Dockerfile")))
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.StartDistribution(t)
	projNS := naming.ProjectNamespaceName(team, project)
	env := &catalystv1alpha1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: "pr-1", Namespace: projNS, Labels: map[string]string{
			naming.LabelTeam: team, naming.LabelProject: project, naming.LabelEnvironment: "pr-1"}},
		Spec: catalystv1alpha1.EnvironmentSpec{
			ProjectRef: catalystv1alpha1.ProjectReference{Name: project},
			Type:       catalystv1alpha1.EnvironmentTypeDevelopment,
			Source:     catalystv1alpha1.EnvironmentSource{CommitSHA: commit, Branch: "main", PRNumber: 1},
		},
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: projNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-credentials", Namespace: team},
			StringData: map[string]string{"username": user, "password": password}},
		&catalystv1alpha1.Project{
			ObjectMeta: metav1.ObjectMeta{Name: project, Namespace: team},
			Spec: catalystv1alpha1.ProjectSpec{
				Source: catalystv1alpha1.ProjectSource{RepositoryURL: repo.URL, Branch: "main",
					SecretRef: &catalystv1alpha1.SecretReference{Name: "git-credentials"}},
				Deployment: catalystv1alpha1.DeploymentSpec{Type: catalystv1alpha1.DeploymentTypeManifest, Path: "deploy/manifests"},
				Registry:   &catalystv1alpha1.RegistrySpec{Repository: reg.Repository("org/app"), Insecure: true},
				Preview:    catalystv1alpha1.PreviewSpec{Domain: "preview.example.dev", Service: catalystv1alpha1.ServiceTarget{Name: "app", Port: 80}},
				Resources: catalystv1alpha1.ProjectResources{DefaultQuota: &catalystv1alpha1.Quota{
					CPU: ptr.To(resource.MustParse("1")), Memory: ptr.To(resource.MustParse("2Gi"))}},
			},
		},
		env,
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

func buildReady(e *catalystv1alpha1.Environment) *metav1.Condition {
	for i := range e.Status.Conditions {
		if e.Status.Conditions[i].Type == catalystv1alpha1.BuildReadyCondition {
			return &e.Status.Conditions[i]
		}
	}
	return nil
}
