//go:build e2e

package catalyst_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/scheme"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// BenchmarkAdmission_PolicyLatency measures what Catalyst's admission policies cost each write,
// from the API server's own metrics: a deploy-like batch (per round a ConfigMap, a Secret, a
// ClusterIP Service, a Deployment, an Ingress for the environment's host and a RoleBinding,
// created, then the Deployment and the ConfigMap updated: 8 writes; ADMISSION_BENCH_ROUNDS
// rounds, default 100) is written into an environment namespace by a user bound to cluster-admin there,
// on a kube-apiserver of its own, once without the policies and once with them. Reported, from
// apiserver_admission_step_admission_duration_seconds_summary (the validating admission step
// of each request, all validating plugins, server-side quantiles) the p50 and p99 of creates and
// updates, and from apiserver_admission_controller_admission_duration_seconds the mean time of
// the ValidatingAdmissionPolicy plugin per write. The difference between the two runs is what
// the policies add.
//
// Run with make bench BENCH=Admission TEST_PKGS=./internal/controller/catalyst/.
func BenchmarkAdmission_PolicyLatency(b *testing.B) {
	rounds := testenv.Sizes(b, "ADMISSION_BENCH_ROUNDS", 100)[0]
	for _, policies := range []bool{false, true} {
		b.Run(fmt.Sprintf("policies=%t", policies), func(b *testing.B) {
			for range b.N {
				benchAdmission(b, policies, rounds)
			}
		})
	}
}

func benchAdmission(b *testing.B, policies bool, rounds int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cp := testenv.New(b, testenv.Light)
	if policies {
		if err := cp.InstallAdmissionPolicies(ctx); err != nil {
			b.Fatal(err)
		}
	}
	ns := "pr-1-bench"
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels:      map[string]string{catalyst.LabelEnvironmentNamespace: "team-app"},
		Annotations: catalyst.PolicyParams(admissionProject(), admissionHost, "")}}
	// cluster-admin: a light control plane has no controller-manager to aggregate admin's rules.
	rb := roleBinding(ns, "tenant-admin", "cluster-admin", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"})
	for _, o := range []client.Object{nsObj, rb} {
		if err := cp.Client.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	path, err := cp.UserKubeconfig(filepath.Join(b.TempDir(), "tenant.kubeconfig"), "tenant", "system:authenticated")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	tenant, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	testenv.Eventually(ctx, b, "the tenant's RoleBinding is in force", func() (bool, error) {
		err := tenant.Create(ctx, service(ns, "probe", corev1.ServiceTypeClusterIP), client.DryRunAll)
		return err == nil, nil
	})
	if policies {
		testenv.Eventually(ctx, b, "the policies are enforced", func() (bool, error) {
			err := tenant.Create(ctx, service(ns, "probe", corev1.ServiceTypeNodePort), client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), "(rule service-type)"), nil
		})
	}
	before := scrape(b, cp.Config)
	b.ResetTimer()
	for i := range rounds {
		writeRound(ctx, b, tenant, ns, i)
	}
	b.StopTimer()
	report(b, before, scrape(b, cp.Config), rounds*8)
}

// writeRound is one round of the batch: six creates, two updates.
func writeRound(ctx context.Context, b *testing.B, c client.Client, ns string, i int) {
	name := fmt.Sprintf("app-%d", i)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"k": "v"}}
	dep := deploymentWith(ns, name, corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, nil)
	ing := withAnnotation(validIngress(ns, name), "nginx.ingress.kubernetes.io/rewrite-target", "/")
	for _, o := range []client.Object{
		cm,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{"k": "v"}},
		service(ns, name, corev1.ServiceTypeClusterIP),
		dep,
		ing,
		roleBinding(ns, name, "view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns}),
	} {
		if err := c.Create(ctx, o); err != nil {
			b.Fatalf("creating %T %s: %v", o, name, err)
		}
	}
	dep.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
	cm.Data["k"] = "w"
	for _, o := range []client.Object{dep, cm} {
		if err := c.Update(ctx, o); err != nil {
			b.Fatalf("updating %T %s: %v", o, name, err)
		}
	}
}

// scrape reads the API server's /metrics.
func scrape(b *testing.B, cfg *rest.Config) map[string]*dto.MetricFamily {
	b.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	return families
}

// report reports the validating step's quantiles per operation and the policy plugin's mean
// time per write (its sum and count between the two scrapes).
func report(b *testing.B, before, after map[string]*dto.MetricFamily, writes int) {
	b.Helper()
	for _, op := range []string{"CREATE", "UPDATE"} {
		m := series(after["apiserver_admission_step_admission_duration_seconds_summary"],
			map[string]string{"type": "validate", "operation": op, "rejected": "false"})
		if m == nil {
			b.Fatalf("no validating admission step summary for %s", op)
		}
		for _, q := range m.GetSummary().GetQuantile() {
			if q.GetQuantile() == 0.5 || q.GetQuantile() == 0.99 {
				b.ReportMetric(q.GetValue()*1e6, fmt.Sprintf("%s-p%g-µs", strings.ToLower(op), q.GetQuantile()*100))
			}
		}
	}
	var sum, count float64
	for _, op := range []string{"CREATE", "UPDATE"} {
		match := map[string]string{"name": "ValidatingAdmissionPolicy", "type": "validate", "operation": op, "rejected": "false"}
		a := series(after["apiserver_admission_controller_admission_duration_seconds"], match)
		o := series(before["apiserver_admission_controller_admission_duration_seconds"], match)
		if a == nil {
			continue
		}
		sum += a.GetHistogram().GetSampleSum()
		count += float64(a.GetHistogram().GetSampleCount())
		if o != nil {
			sum -= o.GetHistogram().GetSampleSum()
			count -= float64(o.GetHistogram().GetSampleCount())
		}
	}
	if count < float64(writes) {
		b.Fatalf("the policy plugin ran %v times for %d writes", count, writes)
	}
	b.ReportMetric(sum/count*1e6, "policy-plugin-mean-µs")
	b.ReportMetric(float64(writes), "writes")
}

// series is the metric of family f whose labels include match, nil if none.
func series(f *dto.MetricFamily, match map[string]string) *dto.Metric {
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		if testenv.HasLabels(m, match) {
			return m
		}
	}
	return nil
}
