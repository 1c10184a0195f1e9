package devenv

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// managerAPI is a small client of the manager's REST API: the few calls make dev makes.
type managerAPI struct {
	base   string
	client *http.Client
}

func newManagerAPI(base string, tlsConfig *tls.Config) *managerAPI {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	return &managerAPI{base: base, client: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// apiError is an error answer: its status and the manager's one error body.
type apiError struct {
	Status int
	Body   api.Error
}

func (e *apiError) Error() string {
	msg := e.Body.Message
	if e.Body.Details != nil {
		if d, err := json.Marshal(e.Body.Details); err == nil && string(d) != "null" && string(d) != "{}" {
			msg += " " + string(d)
		}
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Body.Code, msg)
}

// call sends in (when not nil) as JSON with token (when not empty) and decodes a 2xx answer into
// out (when not nil); any other answer is an *apiError naming the request.
func (a *managerAPI) call(ctx context.Context, method, path, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &apiError{Status: resp.StatusCode}
		if json.Unmarshal(data, &e.Body) != nil || e.Body.Message == "" {
			e.Body.Code, e.Body.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
		}
		return fmt.Errorf("%s %s: %w", method, path, e)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, path, err)
		}
	}
	return nil
}

// registerCluster registers the cluster of the kubeconfig file as name in environment Dev, then
// has the manager check its health at once; it returns the cluster as checked.
func (a *managerAPI) registerCluster(ctx context.Context, token, name, kubeconfigFile string) (api.Cluster, error) {
	kubeconfig, err := os.ReadFile(kubeconfigFile)
	if err != nil {
		return api.Cluster{}, err
	}
	var c api.Cluster
	req := api.ClusterRequest{Name: name, Environment: "Dev", Kubeconfig: string(kubeconfig)}
	if err := a.call(ctx, http.MethodPost, "/api/v1/clusters", token, req, &c); err != nil {
		return c, fmt.Errorf("registering the control plane with the manager: %w", err)
	}
	var h api.ClusterHealth
	if err := a.call(ctx, http.MethodGet, "/api/v1/clusters/"+url.PathEscape(name)+"/health?refresh=true", token, nil, &h); err != nil {
		return c, fmt.Errorf("checking the health of cluster %s: %w", name, err)
	}
	c.Health = h.Health
	if h.Reason != "" {
		c.HealthReason = h.Reason
	}
	if h.KubernetesVersion != "" {
		c.KubernetesVersion = h.KubernetesVersion
	}
	if c.Health != "Healthy" {
		return c, fmt.Errorf("the manager finds cluster %s %s: %s", name, c.Health, c.HealthReason)
	}
	return c, nil
}

// registerOperator registers the sample operator with its chart in repository and the values a
// deployment that gives none gets: the sample release's (the real node's need its local image).
func (a *managerAPI) registerOperator(ctx context.Context, token, repository string, defaultValues map[string]any) (api.Operator, error) {
	var op api.Operator
	values, err := json.Marshal(defaultValues)
	if err != nil {
		return op, err
	}
	req := api.OperatorRequest{Name: SampleOperator, Namespace: SampleOperatorNamespace,
		Chart: api.ChartRef{Repository: repository, Name: SampleOperator}, DefaultValues: values}
	if err := a.call(ctx, http.MethodPost, "/api/v1/operators", token, req, &op); err != nil {
		return op, fmt.Errorf("registering the operator %s with the manager: %w", SampleOperator, err)
	}
	return op, nil
}

// createDeployment submits a Direct deployment, health checks on, of the sample operator at
// version with values to cluster.
func (a *managerAPI) createDeployment(ctx context.Context, token, cluster, version string, values map[string]any) (api.Deployment, error) {
	var d api.Deployment
	raw, err := json.Marshal(values)
	if err != nil {
		return d, err
	}
	req := api.DeploymentRequest{Operator: SampleOperator, Version: version, Clusters: []string{cluster}, Values: raw,
		Strategy: api.StrategyDirect, DirectConfig: &api.DirectConfig{}}
	if err := a.call(ctx, http.MethodPost, "/api/v1/deployments", token, req, &d); err != nil {
		return d, fmt.Errorf("submitting the sample deployment of %s %s: %w", SampleOperator, version, err)
	}
	return d, nil
}

// statusRows lists the manager's clusters and operators as rows of the status table
// (KIND, NAMESPACE, NAME, STATUS, MESSAGE).
func (a *managerAPI) statusRows(ctx context.Context, token string) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rows []string
	var clusters api.ClusterList
	if err := a.call(ctx, http.MethodGet, "/api/v1/clusters?limit=20", token, nil, &clusters); err != nil {
		rows = append(rows, fmt.Sprintf("manager/Cluster\t\t\t<error>\t%s", shorten(err.Error())))
	}
	for _, c := range clusters.Items {
		msg := c.Environment + ", Kubernetes " + c.KubernetesVersion
		if c.HealthReason != "" {
			msg += ": " + c.HealthReason
		}
		rows = append(rows, fmt.Sprintf("manager/Cluster\t\t%s\t%s\t%s", c.Name, c.Health, shorten(msg)))
	}
	var operators api.OperatorList
	if err := a.call(ctx, http.MethodGet, "/api/v1/operators?limit=20", token, nil, &operators); err != nil {
		rows = append(rows, fmt.Sprintf("manager/Operator\t\t\t<error>\t%s", shorten(err.Error())))
	}
	for _, o := range operators.Items {
		rows = append(rows, fmt.Sprintf("manager/Operator\t%s\t%s\t%d versions\t%s", o.Namespace, o.Name, len(o.Versions),
			shorten(strings.Join(o.Versions, ", "))))
	}
	return rows
}

// deploymentRows are the status table's rows of the deployment id (one, then one per cluster)
// and of the operator's health (one per cluster it was checked on).
func (a *managerAPI) deploymentRows(ctx context.Context, token, id string) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rows []string
	var d api.Deployment
	if err := a.call(ctx, http.MethodGet, "/api/v1/deployments/"+url.PathEscape(id), token, nil, &d); err != nil {
		rows = append(rows, fmt.Sprintf("manager/Deployment\t\t%s\t<error>\t%s", id, shorten(err.Error())))
	} else {
		msg := fmt.Sprintf("%s %s %s", d.Strategy, d.Operator, d.Version)
		if d.Reason != "" {
			msg += ": " + d.Reason
		}
		rows = append(rows, fmt.Sprintf("manager/Deployment\t\t%s\t%s\t%s", d.ID, d.Status, shorten(msg)))
		for _, c := range d.Clusters {
			msg := fmt.Sprintf("%s/%s revision %d", c.Namespace, c.Release, c.HelmRevision)
			if c.Message != "" {
				msg += ": " + c.Message
			}
			rows = append(rows, fmt.Sprintf("manager/DeploymentCluster\t%s\t%s\t%s\t%s", c.Namespace, c.Name, c.Status, shorten(msg)))
		}
	}
	var h api.OperatorHealth
	if err := a.call(ctx, http.MethodGet, "/api/v1/operators/"+url.PathEscape(SampleOperator)+"/health", token, nil, &h); err != nil {
		return append(rows, fmt.Sprintf("manager/OperatorHealth\t\t%s\t<error>\t%s", SampleOperator, shorten(err.Error())))
	}
	if len(h.Clusters) == 0 {
		return append(rows, fmt.Sprintf("manager/OperatorHealth\t\t%s\t%s\tnot checked yet", SampleOperator, h.OverallHealth))
	}
	for _, c := range h.Clusters {
		rows = append(rows, fmt.Sprintf("manager/OperatorHealth\t%s\t%s\t%s\t%s", c.ClusterName, h.OperatorName, c.Health, shorten(healthSummary(c))))
	}
	return rows
}

// healthSummary is one cluster's health in a line: each part's health and what it looked at,
// then the first message of a part that is not Healthy.
func healthSummary(c api.OperatorHealthCheck) string {
	s := fmt.Sprintf("pods %s %d/%d Ready; webhooks %s %s %d/%d; CRs %s %s %d/%d Ready", c.Pods.Health,
		c.ControllerPods, c.Pods.Total, c.Webhooks.Health, c.WebhookStatus, c.Webhooks.Healthy,
		c.Webhooks.Total, c.CRDs.Health, c.CRDReconciliation, c.CRDs.Ready, c.CRDs.Resources)
	for _, p := range []struct {
		health   api.HealthState
		messages []string
	}{{c.Pods.Health, c.Pods.Messages}, {c.Webhooks.Health, c.Webhooks.Messages}, {c.CRDs.Health, c.CRDs.Messages}} {
		if p.health != api.Healthy && len(p.messages) > 0 {
			return s + " (" + p.messages[0] + ")"
		}
	}
	return s
}

// shorten cuts a status message to 80 characters.
func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
