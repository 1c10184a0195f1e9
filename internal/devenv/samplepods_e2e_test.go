//go:build e2e

package devenv_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/devenv"
	"github.com/slipway-dev/slipway/internal/sampleapp"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// checkSamplesServeOnTheRealNode: with the real node, the WebApp sample and the preview sample run
// the sample app as real containers, and each answers HTTP, with its greeting, its pod's name and
// the sample app's version, at the address the status view prints (curl http://<pod IP>:<port>/);
// the preview's image was found in the registry, so no build ran; a new GREETING rolls the
// WebApp's pods.
func checkSamplesServeOnTheRealNode(ctx context.Context, t *testing.T, env *devenv.Env, c client.Client) {
	t.Helper()
	want := map[string]string{
		"WebApp webapp-demo/hello":              "hello from make dev from hello-",
		"Environment my-team-my-project/pr-123": "hello from preview pr-123 from app-",
	}
	testenv.Eventually(ctx, t, "the WebApp and preview samples answer at their pods' addresses", func() (bool, error) {
		got := map[string]string{}
		for _, a := range env.SampleAddresses(ctx) {
			got[a.Kind+" "+a.Namespace+"/"+a.Name] = answer("http://" + a.Addr + "/")
		}
		for k, prefix := range want {
			if !strings.HasPrefix(got[k], prefix) || !strings.HasSuffix(got[k], ", version "+devenv.SampleAppVersion+"\n") {
				return false, fmt.Errorf("%s answers %q, want %q...%q (all: %v)", k, got[k], prefix, ", version "+devenv.SampleAppVersion, got)
			}
		}
		return true, nil
	})
	// A change rolls the WebApp's pods on the node, after the preview has pulled the same image
	// from the registry (the kubelet must still take the imported name as present).
	var app webappv1.WebApp
	if err := c.Get(ctx, client.ObjectKey{Namespace: "webapp-demo", Name: "hello"}, &app); err != nil {
		t.Fatal(err)
	}
	base := app.DeepCopy()
	for i := range app.Spec.Env {
		if app.Spec.Env[i].Name == sampleapp.EnvGreeting {
			app.Spec.Env[i].Value = "hello again"
		}
	}
	if err := c.Patch(ctx, &app, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "the WebApp sample's new pods answer the new greeting", func() (bool, error) {
		for _, a := range env.SampleAddresses(ctx) {
			if a.Kind == "WebApp" {
				got := answer("http://" + a.Addr + "/")
				return strings.HasPrefix(got, "hello again from hello-"), fmt.Errorf("%s answers %q", a.Addr, got)
			}
		}
		return false, fmt.Errorf("no ready pod of the WebApp sample")
	})
	var e catalystv1.Environment
	if err := c.Get(ctx, client.ObjectKey{Namespace: "my-team-my-project", Name: "pr-123"}, &e); err != nil {
		t.Fatal(err)
	}
	for _, cond := range e.Status.Conditions {
		if cond.Type == catalystv1.BuildReadyCondition && cond.Reason != catalystv1.ImageFoundReason {
			t.Errorf("the preview sample's BuildReady is %s, want %s (the sample app pushed at the commit's tag)", cond.Reason, catalystv1.ImageFoundReason)
		}
	}
}

// answer is the body at url, or the error.
func answer(url string) string {
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(url)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return string(body)
}
