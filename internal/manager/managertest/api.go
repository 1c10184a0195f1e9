package managertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
)

// Response is one answer of the API.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it is not.
func (r *Response) JSON(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decoding %s: %v", r.Body, err)
	}
}

// Do sends a request to path with token (none when empty) and body (nil: none; []byte or a
// string as is; anything else as JSON) and reads the whole answer.
func (m *Manager) Do(method, path, token string, body any) (*Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, m.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := m.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, err
}

// call is Do as user ("": no token), with an error when the status is not want.
func (m *Manager) call(method, path, user string, body any, want int) (*Response, error) {
	token := ""
	if user != "" {
		token = m.Token(user)
	}
	r, err := m.Do(method, path, token, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if r.Status != want {
		return r, fmt.Errorf("%s %s as %s: status %d, want %d: %s", method, path, user, r.Status, want, r.Body)
	}
	return r, nil
}

// Must is Do as user (one of Users, or "" for no token), failing the test on a transport error or a status other
// than want.
func (m *Manager) Must(tb testing.TB, method, path, user string, body any, want int) *Response {
	tb.Helper()
	r, err := m.call(method, path, user, body, want)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Deploy posts a deployment request (an api.DeploymentRequest, a map or JSON text) as user: 202.
func (m *Manager) Deploy(tb testing.TB, user string, req any) api.Deployment {
	tb.Helper()
	var dep api.Deployment
	m.Must(tb, "POST", "/api/v1/deployments", user, req, http.StatusAccepted).JSON(tb, &dep)
	if dep.ID == "" {
		tb.Fatalf("POST /api/v1/deployments answered no id")
	}
	return dep
}

// Deployment is GET /api/v1/deployments/{id}.
func (m *Manager) Deployment(tb testing.TB, id string) api.Deployment {
	tb.Helper()
	var dep api.Deployment
	m.Must(tb, "GET", "/api/v1/deployments/"+id, Alice, nil, http.StatusOK).JSON(tb, &dep)
	return dep
}

// terminal are the statuses a deployment ends in.
var terminal = []string{"Completed", "RolledBack", "Failed", "Cancelled"}

// WaitStatus waits (polling every 200 ms) until the deployment's status is status and returns it;
// another final status, or timeout, fails the test with the deployment's events.
func (m *Manager) WaitStatus(tb testing.TB, id, status string, timeout time.Duration) api.Deployment {
	tb.Helper()
	dep, err := m.waitStatus(id, status, timeout)
	if err != nil {
		tb.Fatal(err)
	}
	return dep
}

// WaitFor waits (polling every 200 ms) until cond holds for the deployment and returns it;
// timeout fails the test, naming what.
func (m *Manager) WaitFor(tb testing.TB, id, what string, timeout time.Duration, cond func(api.Deployment) bool) api.Deployment {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		dep := m.Deployment(tb, id)
		if cond(dep) {
			return dep
		}
		if time.Now().After(deadline) {
			tb.Fatalf("deployment %s: %s not seen within %s: it is %s (%s)\nevents:\n%s", id, what, timeout, dep.Status, dep.Reason, m.eventText(id))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (m *Manager) waitStatus(id, status string, timeout time.Duration) (api.Deployment, error) {
	deadline := time.Now().Add(timeout)
	for {
		var dep api.Deployment
		r, err := m.call("GET", "/api/v1/deployments/"+id, Alice, nil, http.StatusOK)
		if err != nil {
			return dep, err
		}
		if err := json.Unmarshal(r.Body, &dep); err != nil {
			return dep, err
		}
		if dep.Status == status {
			return dep, nil
		}
		if slices.Contains(terminal, dep.Status) || time.Now().After(deadline) {
			return dep, fmt.Errorf("deployment %s is %s (%s), want %s\nevents:\n%s", id, dep.Status, dep.Reason, status, m.eventText(id))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Events is the deployment's whole history, page by page.
func (m *Manager) Events(tb testing.TB, id string) []api.DeploymentEvent {
	tb.Helper()
	evs, err := m.events(id)
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

func (m *Manager) events(id string) ([]api.DeploymentEvent, error) {
	var out []api.DeploymentEvent
	cont := ""
	for {
		path := "/api/v1/deployments/" + id + "/events?limit=500"
		if cont != "" {
			path += "&continue=" + url.QueryEscape(cont)
		}
		r, err := m.call("GET", path, Alice, nil, http.StatusOK)
		if err != nil {
			return out, err
		}
		var page api.DeploymentEventList
		if err := json.Unmarshal(r.Body, &page); err != nil {
			return out, err
		}
		out = append(out, page.Items...)
		if page.Continue == "" {
			return out, nil
		}
		cont = page.Continue
	}
}

// eventText is the deployment's history, one event a line, for failure messages.
func (m *Manager) eventText(id string) string {
	evs, err := m.events(id)
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %d %s %-20s %-10s %s\n", e.ID, e.Time.Format("15:04:05.000"), e.Type, e.Cluster, e.Message)
	}
	if err != nil {
		fmt.Fprintf(&b, "  (reading the events: %v)\n", err)
	}
	return b.String()
}

// Approvals are the deployment's approvals of status (pending, approved, rejected, expired, all).
func (m *Manager) Approvals(tb testing.TB, deploymentID, status string) []api.DeploymentApproval {
	tb.Helper()
	list, err := m.approvals(deploymentID, status)
	if err != nil {
		tb.Fatal(err)
	}
	return list
}

func (m *Manager) approvals(deploymentID, status string) ([]api.DeploymentApproval, error) {
	r, err := m.call("GET", "/api/v1/approvals?limit=1000&status="+status+"&deploymentId="+url.QueryEscape(deploymentID), Alice, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	var list api.ApprovalList
	if err := json.Unmarshal(r.Body, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ApproveAll waits (2 minutes at most) until the deployment waits for approval, then approves
// every pending approval of it as user, and returns how many it approved.
func (m *Manager) ApproveAll(tb testing.TB, deploymentID, user string) int {
	tb.Helper()
	n, err := m.approveAll(deploymentID, user)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func (m *Manager) approveAll(deploymentID, user string) (int, error) {
	if _, err := m.waitStatus(deploymentID, "WaitingApproval", 2*time.Minute); err != nil {
		return 0, err
	}
	pending, err := m.approvals(deploymentID, "pending")
	if err != nil {
		return 0, err
	}
	if len(pending) == 0 {
		return 0, fmt.Errorf("deployment %s waits for approval but has no pending approval", deploymentID)
	}
	return len(pending), m.approve(pending, user)
}

// approvePending approves the deployment's pending approvals, if any, as user.
func (m *Manager) approvePending(deploymentID, user string) error {
	pending, err := m.approvals(deploymentID, "pending")
	if err != nil {
		return err
	}
	return m.approve(pending, user)
}

func (m *Manager) approve(list []api.DeploymentApproval, user string) error {
	for _, a := range list {
		if _, err := m.call("POST", "/api/v1/approvals/"+a.ID+"/approve", user,
			api.DecisionRequest{Comment: "approved by the test harness"}, http.StatusOK); err != nil {
			return err
		}
	}
	return nil
}

// LoginLink runs `manager login-link` for subject with role and returns the one-time sign-in
// link it prints (<URL>/login#ticket=…).
func (m *Manager) LoginLink(tb testing.TB, subject string, role auth.Role) string {
	tb.Helper()
	r, err := m.Run("login-link", "--url", m.URL, "--subject", subject, "--role", string(role))
	if err != nil {
		tb.Fatal(err)
	}
	if r.Code != 0 {
		tb.Fatalf("manager login-link: exit %d: %s", r.Code, r.Stderr)
	}
	for _, line := range strings.Split(r.Stdout, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, m.URL+"/login#ticket=") {
			return line
		}
	}
	tb.Fatalf("manager login-link printed no %s/login#ticket=… line: %q", m.URL, r.Stdout)
	return ""
}
