package werfbundle

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
)

func testBundle(name string) *werfv1.WerfBundle {
	return &werfv1.WerfBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"},
		Spec: werfv1.WerfBundleSpec{
			Registry: werfv1.RegistrySpec{URL: "ghcr.io/org/bundle"},
			Converge: werfv1.ConvergeSpec{ServiceAccountName: "werf-converge"},
		},
	}
}

func TestJobName_DeterministicShortAndDistinct(t *testing.T) {
	long := strings.Repeat("a", 253)
	seen := map[string]jobRequest{}
	for _, name := range []string{"app", long, "x-" + long[:70]} {
		b := testBundle(name)
		for _, req := range []jobRequest{
			{Kind: KindApply, Tag: "1.0.0", Revision: "r1"},
			{Kind: KindApply, Tag: "1.0.0", Revision: "r2"},
			{Kind: KindApply, Tag: "1.0.0", Revision: "r1", Nonce: "retry"},
			{Kind: KindApply, Tag: "0.9.0", Revision: "r0", RollbackOf: "r1"},
			{Kind: KindCheck, Tag: "1.0.0", Revision: "r1", Nonce: "t1"},
		} {
			n := jobName(b, req)
			if n != jobName(b, req) {
				t.Fatalf("jobName is not deterministic for %+v", req)
			}
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				t.Errorf("jobName %q: %v", n, errs)
			}
			if prev, dup := seen[n]; dup {
				t.Errorf("jobName %q for %+v and %+v", n, prev, req)
			}
			seen[n] = req
		}
	}
}

func TestRevision_ChangesWithWhatTheDeployDependsOn(t *testing.T) {
	b := testBundle("app")
	base := revision(b, "prod", "app", "1.0.0", "h1", "werf:2")
	for name, rev := range map[string]string{
		"tag":       revision(b, "prod", "app", "1.1.0", "h1", "werf:2"),
		"values":    revision(b, "prod", "app", "1.0.0", "h2", "werf:2"),
		"namespace": revision(b, "stage", "app", "1.0.0", "h1", "werf:2"),
		"release":   revision(b, "prod", "web", "1.0.0", "h1", "werf:2"),
		"image":     revision(b, "prod", "app", "1.0.0", "h1", "werf:3"),
	} {
		if rev == base {
			t.Errorf("a change of %s keeps the revision", name)
		}
	}
	if revision(b, "prod", "app", "1.0.0", "h1", "werf:2") != base {
		t.Error("revision is not deterministic")
	}
}

func TestBuildJob_CheckJobTreatsExitTwoAsAnswer(t *testing.T) {
	b := testBundle("app")
	j := buildJob(jobSpec{bundle: b, targetNS: "prod", release: "app", image: "werf", secretName: "s", backoff: 1, deadline: 60, repoForWerf: b.Spec.Registry.URL},
		jobRequest{Kind: KindCheck, Tag: "1.0.0", Revision: "r"})
	args := strings.Join(j.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.HasPrefix(args, "bundle plan ") || !strings.Contains(args, "--exit-code") {
		t.Errorf("check Job args: %s", args)
	}
	if *j.Spec.BackoffLimit != 0 || j.Spec.PodFailurePolicy == nil ||
		j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values[0] != driftExitCode {
		t.Errorf("check Job must fail at once on exit %d: %+v", driftExitCode, j.Spec)
	}
}

func TestBackoff_Schedule(t *testing.T) {
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 8 * time.Minute}
	for i, w := range want {
		if got := backoff(int32(i + 1)); got != w {
			t.Errorf("backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	for range 1000 {
		if d := jitter(time.Minute); d < 54*time.Second || d > 66*time.Second {
			t.Fatalf("jitter(1m) = %s, outside ±10%%", d)
		}
	}
}

func TestTailBytes_CutsAtALine(t *testing.T) {
	s := "first line\nsecond line\nthird line\n"
	if got := tailBytes(s, 15); got != "third line\n" {
		t.Errorf("tailBytes = %q", got)
	}
	if got := tailLines(s, 2, 1000); got != "second line\nthird line" {
		t.Errorf("tailLines = %q", got)
	}
}
