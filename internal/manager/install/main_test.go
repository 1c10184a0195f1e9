package install

import (
	"context"
	"strings"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// env is the package's control plane: etcd, kube-apiserver, controller-manager, scheduler and
// kwok, so the operator's Deployment becomes Available.
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Full, func(e *testenv.Env) { env = e }) }

const chartName = "widget-operator"

var widgets = schema.GroupVersionResource{Group: charttest.Group, Version: "v1alpha1", Resource: "widgets"}

// loadChart builds charttest's operator chart at version, changed by edit, and loads it as
// operators.Charts.Fetch would.
func loadChart(tb testing.TB, version string, level charttest.Level, edit func(charttest.ChartFiles), opts ...charttest.Option) *chart.Chart {
	tb.Helper()
	files := charttest.OperatorChart(chartName, version, level, opts...)
	if edit != nil {
		edit(files)
	}
	archive, err := charttest.Archive(files)
	if err != nil {
		tb.Fatal(err)
	}
	ch, err := operators.LoadArchive(archive)
	if err != nil {
		tb.Fatal(err)
	}
	return ch
}

// unschedulable puts a nodeSelector no node matches on the chart's pod template: the scheduler
// leaves its pods Pending (Unschedulable), so the Deployment never becomes Available.
func unschedulable(files charttest.ChartFiles) {
	files["templates/deployment.yaml"] = strings.Replace(files["templates/deployment.yaml"],
		"      serviceAccountName:", "      nodeSelector:\n        slipway.dev/no-such-node: \"true\"\n      serviceAccountName:", 1)
}

func clients(tb testing.TB) (kubernetes.Interface, dynamic.Interface) {
	tb.Helper()
	kc, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		tb.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		tb.Fatal(err)
	}
	return kc, dc
}

// operatorDeployment is the chart's Deployment of release name.
func operatorDeployment(tb testing.TB, kc kubernetes.Interface, namespace, name string) *appsv1.Deployment {
	tb.Helper()
	d, err := kc.AppsV1().Deployments(namespace).Get(context.Background(), name+"-"+chartName, metav1.GetOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func wantInvalid(tb testing.TB, err error, field, reason string) {
	tb.Helper()
	e, ok := invalid.As(err)
	if !ok || e.Field != field || (reason != "" && e.Reason != reason) {
		tb.Fatalf("error %v, want *invalid.Error for field %s reason %s", err, field, reason)
	}
}

func testContext(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}
