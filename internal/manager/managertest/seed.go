package managertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// seed registers the clusters and the operator through the API as alice and, with deploy,
// deploys SeedVersion to every cluster (alice asks, bob approves), then waits until the clusters
// and the operator on each are Healthy.
func (m *Manager) seed(charts []charttest.ChartFiles, deploy bool) error {
	for _, c := range m.Clusters {
		req := api.ClusterRequest{Name: c.Name, Environment: c.Environment, Kubeconfig: string(c.Server.Kubeconfig)}
		if _, err := m.call("POST", "/api/v1/clusters", Alice, req, http.StatusCreated); err != nil {
			return fmt.Errorf("registering cluster %s: %w", c.Name, err)
		}
	}
	op := api.OperatorRequest{Name: m.Operator, Namespace: m.Operator,
		Chart: api.ChartRef{Repository: m.Repo.URL, Name: ChartName}, MigrationNotes: m.migrationNotes(charts)}
	if _, err := m.call("POST", "/api/v1/operators", Alice, op, http.StatusCreated); err != nil {
		return fmt.Errorf("registering operator %s: %w", m.Operator, err)
	}
	if err := m.waitClustersHealthy(time.Minute); err != nil {
		return err
	}
	if !deploy {
		return nil
	}
	r, err := m.call("POST", "/api/v1/deployments", Alice, map[string]any{"operator": m.Operator, "version": SeedVersion,
		"clusters": m.ClusterNames(), "strategy": "Direct"}, http.StatusAccepted)
	if err != nil {
		return fmt.Errorf("the seed deployment: %w", err)
	}
	if err := json.Unmarshal(r.Body, &m.Seed); err != nil {
		return err
	}
	if m.Seed, err = m.waitSeed(); err != nil {
		return err
	}
	return m.waitOperatorHealthy(time.Minute)
}

// waitSeed waits (4 minutes at most) for the seed deployment to complete, approving as bob what
// it asks: prod-1 asks production (a first install asks no versionUpgrade), and a cluster whose
// Widget CRD another manager of the test binary changed asks breakingCRD.
func (m *Manager) waitSeed() (api.Deployment, error) {
	deadline := time.Now().Add(4 * time.Minute)
	for {
		var dep api.Deployment
		r, err := m.call("GET", "/api/v1/deployments/"+m.Seed.ID, Alice, nil, http.StatusOK)
		if err != nil {
			return dep, err
		}
		if err := json.Unmarshal(r.Body, &dep); err != nil {
			return dep, err
		}
		switch {
		case dep.Status == "Completed":
			return dep, nil
		case slices.Contains(terminal, dep.Status) || time.Now().After(deadline):
			return dep, fmt.Errorf("the seed deployment %s is %s (%s), want Completed\nevents:\n%s", dep.ID, dep.Status, dep.Reason, m.eventText(dep.ID))
		case dep.Status == "WaitingApproval":
			if err := m.approvePending(dep.ID, Bob); err != nil {
				return dep, fmt.Errorf("approving the seed deployment: %w", err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// migrationNotes are notes on the Widget CRD for CompatibleVersion and BreakingVersion, when
// charts hold them (the default charts do): the Approvals page shows them inline.
func (m *Manager) migrationNotes(charts []charttest.ChartFiles) []api.MigrationNoteRequest {
	var notes []api.MigrationNoteRequest
	for _, files := range charts {
		var meta struct{ Name, Version string }
		if err := yaml.Unmarshal([]byte(files["Chart.yaml"]), &meta); err != nil || meta.Name != ChartName {
			continue
		}
		switch v := meta.Version; v {
		case CompatibleVersion:
			notes = append(notes, api.MigrationNoteRequest{CRD: WidgetCRD, Version: v,
				Text: "Adds `spec.replicas` and the colour **yellow**; existing Widgets need no change."})
		case BreakingVersion:
			notes = append(notes, api.MigrationNoteRequest{CRD: WidgetCRD, Version: v,
				Text: "Removes `spec.legacy`, makes `spec.count` a string, requires `spec.tls.secretName` and drops the colour " +
					"**blue**. From 1.1.0 it also drops `spec.replicas`, the colour **yellow** and `spec.size` above 100: " +
					"edit every Widget before upgrading.", URL: "https://slipway.example/docs/widgets-v2"})
		}
	}
	return notes
}

// waitClustersHealthy waits until every cluster's health is Healthy.
func (m *Manager) waitClustersHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		r, err := m.call("GET", "/api/v1/clusters?limit=1000", Alice, nil, http.StatusOK)
		if err != nil {
			return err
		}
		var list api.ClusterList
		if err := json.Unmarshal(r.Body, &list); err != nil {
			return err
		}
		healthy := 0
		for _, c := range list.Items {
			if c.Health == "Healthy" {
				healthy++
			}
		}
		if healthy == len(m.Clusters) && len(list.Items) == len(m.Clusters) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the clusters are not all Healthy within %s: %s", timeout, r.Body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitOperatorHealthy waits until the operator's health is Healthy on every cluster.
func (m *Manager) waitOperatorHealthy(timeout time.Duration) error {
	var oh struct {
		OverallHealth string
		Clusters      []struct{ ClusterName, Health string }
	}
	deadline := time.Now().Add(timeout)
	for {
		r, err := m.call("GET", "/api/v1/operators/"+m.Operator+"/health", Alice, nil, http.StatusOK)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(r.Body, &oh); err != nil {
			return err
		}
		healthy := 0
		for _, c := range oh.Clusters {
			if c.Health == "Healthy" {
				healthy++
			}
		}
		if oh.OverallHealth == "Healthy" && healthy == len(m.Clusters) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("operator %s is not Healthy on every cluster within %s: %s", m.Operator, timeout, r.Body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
