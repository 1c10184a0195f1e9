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

// apiError is the manager's one error shape.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

func (e *apiError) Error() string {
	msg := e.Message
	if e.Details != nil {
		if d, err := json.Marshal(e.Details); err == nil && string(d) != "null" && string(d) != "{}" {
			msg += " " + string(d)
		}
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, msg)
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
		if json.Unmarshal(data, e) != nil || e.Message == "" {
			e.Code, e.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
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

// The API's objects, as far as make dev reads them (internal/manager/server/types.go).
type (
	apiCluster struct {
		Name              string `json:"name"`
		Environment       string `json:"environment"`
		KubernetesVersion string `json:"kubernetesVersion"`
		Health            string `json:"health"`
		HealthReason      string `json:"healthReason,omitempty"`
		Reason            string `json:"reason,omitempty"` // the health endpoint's name for it
	}
	apiChart struct {
		Repository string `json:"repository"`
		Name       string `json:"name"`
	}
	apiOperator struct {
		ID        string   `json:"id,omitempty"`
		Name      string   `json:"name"`
		Namespace string   `json:"namespace"`
		Chart     apiChart `json:"chart"`
		Versions  []string `json:"versions,omitempty"`
	}
)

// registerCluster registers the cluster of the kubeconfig file as name in environment Dev, then
// has the manager check its health at once; it returns the cluster as checked.
func (a *managerAPI) registerCluster(ctx context.Context, token, name, kubeconfigFile string) (apiCluster, error) {
	kubeconfig, err := os.ReadFile(kubeconfigFile)
	if err != nil {
		return apiCluster{}, err
	}
	var c apiCluster
	req := map[string]string{"name": name, "environment": "Dev", "kubeconfig": string(kubeconfig)}
	if err := a.call(ctx, http.MethodPost, "/api/v1/clusters", token, req, &c); err != nil {
		return c, fmt.Errorf("registering the control plane with the manager: %w", err)
	}
	var h apiCluster
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

// registerOperator registers the sample operator with its chart in repository.
func (a *managerAPI) registerOperator(ctx context.Context, token, repository string) (apiOperator, error) {
	req := apiOperator{Name: SampleOperator, Namespace: SampleOperatorNamespace, Chart: apiChart{Repository: repository, Name: SampleOperator}}
	var op apiOperator
	if err := a.call(ctx, http.MethodPost, "/api/v1/operators", token, req, &op); err != nil {
		return op, fmt.Errorf("registering the operator %s with the manager: %w", SampleOperator, err)
	}
	return op, nil
}

// statusRows lists the manager's clusters and operators as rows of the status table
// (KIND, NAMESPACE, NAME, STATUS, MESSAGE).
func (a *managerAPI) statusRows(ctx context.Context, token string) []string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var rows []string
	var clusters struct{ Items []apiCluster }
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
	var operators struct{ Items []apiOperator }
	if err := a.call(ctx, http.MethodGet, "/api/v1/operators?limit=20", token, nil, &operators); err != nil {
		rows = append(rows, fmt.Sprintf("manager/Operator\t\t\t<error>\t%s", shorten(err.Error())))
	}
	for _, o := range operators.Items {
		rows = append(rows, fmt.Sprintf("manager/Operator\t%s\t%s\t%d versions\t%s", o.Namespace, o.Name, len(o.Versions),
			shorten(strings.Join(o.Versions, ", "))))
	}
	return rows
}

// shorten cuts a status message to 80 characters.
func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
