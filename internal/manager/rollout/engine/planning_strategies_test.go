package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/install"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// threeDev registers the fleet's first three servers as Dev clusters a, b and c.
func threeDev(t *testing.T, prefix string) []target {
	s := servers(t, 3)
	return []target{
		{Name: prefix + "-a", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: prefix + "-b", Environment: store.EnvironmentDev, Server: s[1]},
		{Name: prefix + "-c", Environment: store.EnvironmentDev, Server: s[2]},
	}
}

// TestPlanning_DirectParallelClustersBound: Direct with parallelClusters 2 over three clusters
// never has more than two installs in flight, as the deployment's own history records them
// (an install is in flight from its cluster.installing event to its cluster.installed).
func TestPlanning_DirectParallelClustersBound(t *testing.T) {
	h := newHarness(t, threeDev(t, "par"), nil)
	h.operator("parallel", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "parallel", "version": "1.0.0", "clusters": ["par-a", "par-b", "par-c"], "strategy": "Direct",
		"directConfig": {"parallelClusters": 2}}`)
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	inFlight, most, installed := map[string]bool{}, 0, 0
	for _, e := range h.events(d.ID) {
		switch e.Type {
		case "cluster.installing":
			inFlight[e.Cluster] = true
		case "cluster.installed", "cluster.failed":
			if !inFlight[e.Cluster] {
				t.Errorf("%s on %s without cluster.installing before it", e.Type, e.Cluster)
			}
			delete(inFlight, e.Cluster)
			installed++
		}
		most = max(most, len(inFlight))
	}
	if most > 2 || installed != 3 {
		t.Fatalf("at most %d installs in flight (want ≤ 2), %d installed (want 3):\n%s", most, installed, h.eventLog(d.ID))
	}
	for _, c := range d.Clusters {
		if c.Status != store.ClusterHealthy || c.HelmRevision != 1 {
			t.Errorf("cluster %s: %+v, want healthy at revision 1", c.ClusterName, c)
		}
	}
}

// TestPlanning_RollingClusterOrder: Rolling with a clusterOrder other than the default
// (par-a, par-b, par-c by name) installs the clusters in that order, one after the other.
func TestPlanning_RollingClusterOrder(t *testing.T) {
	h := newHarness(t, threeDev(t, "ord"), nil)
	h.operator("ordered", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	order := []string{"ord-c", "ord-a", "ord-b"}
	d := h.submit(`{"operator": "ordered", "version": "1.0.0", "clusters": ["ord-a", "ord-b", "ord-c"], "strategy": "Rolling",
		"rollingConfig": {"clusterOrder": ["ord-c", "ord-a"], "validationPeriod": "PT0S"}}`)
	d = h.waitStatus(d.ID, store.DeploymentCompleted)
	evs := h.events(d.ID)
	var installing []string
	for _, e := range evs {
		if e.Type == "cluster.installing" {
			installing = append(installing, e.Cluster)
		}
	}
	if !slices.Equal(installing, order) {
		t.Fatalf("installs in the order %v, want %v:\n%s", installing, order, h.eventLog(d.ID))
	}
	for i := 1; i < len(order); i++ {
		passed, err := eventIndex(evs, "cluster.installed", order[i-1])
		if err != nil {
			t.Fatalf("%s: %v", order[i-1], err)
		}
		next, _ := eventIndex(evs, "cluster.installing", order[i])
		if next < passed {
			t.Errorf("%s started before %s was installed:\n%s", order[i], order[i-1], h.eventLog(d.ID))
		}
	}
	for i, name := range order {
		if c := clusterByName(d, name); c.Stage != i || c.Status != store.ClusterHealthy {
			t.Errorf("cluster %s: %+v, want healthy at stage %d", name, c, i)
		}
	}
}

// TestPlanning_ValuesByEnvironment: values apply everywhere and valuesByEnvironment merges over
// them on the clusters of its environment only; the Helm release of each cluster holds its
// environment's values and the rendered Deployment uses them.
func TestPlanning_ValuesByEnvironment(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "vals-dev", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "vals-stage", Environment: store.EnvironmentStaging, Server: s[1]},
	}, nil)
	h.operator("valued", charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible))
	h.start()
	d := h.submit(`{"operator": "valued", "version": "1.0.0", "environments": ["Dev", "Staging"], "strategy": "Direct",
		"values": {"image": "registry.example/widget-operator:all", "replicas": 1},
		"valuesByEnvironment": {"Staging": {"image": "registry.example/widget-operator:staging"}}}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	for cluster, image := range map[string]string{
		"vals-dev":   "registry.example/widget-operator:all",
		"vals-stage": "registry.example/widget-operator:staging",
	} {
		rel, err := install.Status(context.Background(), h.admin[cluster], "valued", "op-valued")
		if err != nil {
			t.Fatal(err)
		}
		if rel.Values["image"] != image || fmt.Sprint(rel.Values["replicas"]) != "1" {
			t.Errorf("%s: release values %v, want image %s and replicas 1", cluster, rel.Values, image)
		}
		kc, err := kubernetes.NewForConfig(h.admin[cluster])
		if err != nil {
			t.Fatal(err)
		}
		dep, err := kc.AppsV1().Deployments("op-valued").Get(context.Background(), "valued-"+chartName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := containerImage(dep); got != image {
			t.Errorf("%s: the Deployment runs %s, want %s", cluster, got, image)
		}
	}
}

// TestPlanning_ValuesByEnvironmentEnableASubchart: a subchart that one environment's values
// enable and another's leave off is installed on that environment's clusters only, whichever
// cluster installs first. Each install loads the chart anew: Helm drops a disabled subchart from
// the chart it installs, and a chart shared with the next install had lost it there too.
func TestPlanning_ValuesByEnvironmentEnableASubchart(t *testing.T) {
	s := servers(t, 2)
	h := newHarness(t, []target{
		{Name: "sub-dev", Environment: store.EnvironmentDev, Server: s[0]},
		{Name: "sub-stage", Environment: store.EnvironmentStaging, Server: s[1]},
	}, nil)
	files := charttest.OperatorChart(chartName, "1.0.0", charttest.Compatible)
	files["Chart.yaml"] += "dependencies:\n- name: extra\n  version: 0.1.0\n  condition: extra.enabled\n"
	files["values.yaml"] += "extra:\n  enabled: false\n"
	files["charts/extra/Chart.yaml"] = "apiVersion: v2\nname: extra\nversion: 0.1.0\n"
	files["charts/extra/templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata: {}\n"
	h.operator("subbed", files)
	h.start()
	d := h.submit(`{"operator": "subbed", "version": "1.0.0", "clusters": ["sub-dev", "sub-stage"], "strategy": "Direct",
		"directConfig": {"parallelClusters": 1}, "valuesByEnvironment": {"Staging": {"extra": {"enabled": true}}}}`)
	h.waitStatus(d.ID, store.DeploymentCompleted)
	for cluster, want := range map[string]bool{"sub-dev": false, "sub-stage": true} {
		kc, err := kubernetes.NewForConfig(h.admin[cluster])
		if err != nil {
			t.Fatal(err)
		}
		_, err = kc.CoreV1().ConfigMaps("op-subbed").Get(context.Background(), "subbed-extra", metav1.GetOptions{})
		if got := err == nil; got != want || (err != nil && !apierrors.IsNotFound(err)) {
			t.Errorf("%s: the subchart's ConfigMap present %v (%v), want %v", cluster, got, err, want)
		}
	}
}

func containerImage(d *appsv1.Deployment) string {
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}
