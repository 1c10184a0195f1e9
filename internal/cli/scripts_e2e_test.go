//go:build e2e

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/slipway-dev/slipway/internal/cli/config"
	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/managertest"
)

// scriptUser is an Operator no other test acts as, so that a script can read the audit log for
// what it did (and did not) send.
const scriptUser = "carol"

// TestScripts runs testdata/script/*.txtar: `slipway` is this test binary run as a process (its
// main is Main), against the shared manager. Each script starts with SLIPWAY_CONFIG naming a
// contexts file with a context per user (alice and bob Admins, otto and carol Operators, vera a
// Viewer; alice current), and OPERATOR, SEED (the seed deployment's id), MANAGER (the URL), CA
// (the certificate file) and TOKEN_<USER> set. Its own commands:
//
//	exits CODE PROGRAM ARGS...   run PROGRAM, which must exit with CODE (stdout and stderr kept)
//	jsonenv NAME PATH            set NAME from stdout's JSON at PATH (dot-separated keys and indexes)
//	waitstatus ID STATUS         wait (3 minutes at most) until deployment ID has STATUS
//	waitapproval ID NAME         wait until deployment ID has a pending approval; its id into NAME
func TestScripts(t *testing.T) {
	m := managertest.Shared(t)
	carol, err := m.MintToken(scriptUser, 12*time.Hour, auth.Operator)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			path := filepath.Join(env.WorkDir, "slipway.yaml")
			cfg, err := config.Load(path)
			if err != nil {
				return err
			}
			for _, u := range append(slicesReversed(users), scriptUser) {
				tok := carol
				if u != scriptUser {
					tok = m.Token(u)
				}
				cfg.Upsert(config.Context{Name: u, Server: m.URL, CertificateAuthority: m.CAFile}, config.User{Name: u, Token: tok})
				env.Setenv("TOKEN_"+strings.ToUpper(u), tok)
			}
			cfg.CurrentContext = managertest.Alice
			if err := cfg.Save(); err != nil {
				return err
			}
			env.Setenv(config.EnvConfig, path)
			env.Setenv("OPERATOR", m.Operator)
			env.Setenv("SEED", m.Seed.ID)
			env.Setenv("MANAGER", m.URL)
			env.Setenv("CA", m.CAFile)
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":        cmdExits,
			"jsonenv":      cmdJSONEnv,
			"waitstatus":   func(ts *testscript.TestScript, neg bool, args []string) { cmdWaitStatus(ts, m, args) },
			"waitapproval": func(ts *testscript.TestScript, neg bool, args []string) { cmdWaitApproval(ts, m, args) },
		},
	})
}

func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM ARGS...")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not an exit code", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if code != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), code, want)
	}
}

func cmdJSONEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonenv NAME PATH")
	}
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
		ts.Fatalf("jsonenv: stdout is not JSON: %v", err)
	}
	for _, key := range strings.Split(args[1], ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(x) {
				ts.Fatalf("jsonenv: no element %q in a list of %d", key, len(x))
			}
			v = x[i]
		default:
			ts.Fatalf("jsonenv: %s: %q is not in a %T", args[1], key, v)
		}
	}
	s, ok := v.(string)
	if !ok {
		ts.Fatalf("jsonenv: %s is %v, not a string", args[1], v)
	}
	ts.Setenv(args[0], s)
}

// poll calls check every half second until it reports done, for 3 minutes at most.
func poll(ts *testscript.TestScript, what string, check func() (bool, string, error)) {
	deadline := time.Now().Add(3 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		done, state, err := check()
		if err != nil {
			ts.Fatalf("%s: %v", what, err)
		}
		if done {
			return
		}
		last = state
		time.Sleep(500 * time.Millisecond)
	}
	ts.Fatalf("%s: not within 3m (last: %s)", what, last)
}

func getJSON(m *managertest.Manager, path string, v any) error {
	r, err := m.Do(http.MethodGet, path, m.Token(managertest.Alice), nil)
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, r.Status, r.Body)
	}
	return json.Unmarshal(r.Body, v)
}

func cmdWaitStatus(ts *testscript.TestScript, m *managertest.Manager, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: waitstatus ID STATUS")
	}
	poll(ts, "deployment "+args[0]+" "+args[1], func() (bool, string, error) {
		var d api.Deployment
		if err := getJSON(m, "/api/v1/deployments/"+url.PathEscape(args[0]), &d); err != nil {
			return false, "", err
		}
		if d.Status == args[1] {
			return true, "", nil
		}
		switch {
		case d.RollbackRequested:
			// A finished deployment whose rollback was asked for keeps its status until the
			// engine takes the request up.
		case d.Status == "Failed" || d.Status == "Cancelled" || d.Status == "RolledBack" || d.Status == "Completed":
			return false, "", fmt.Errorf("ended %s: %s", d.Status, d.Reason)
		}
		return false, d.Status + ": " + d.Reason, nil
	})
}

func cmdWaitApproval(ts *testscript.TestScript, m *managertest.Manager, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: waitapproval ID NAME")
	}
	poll(ts, "a pending approval of "+args[0], func() (bool, string, error) {
		var l api.ApprovalList
		if err := getJSON(m, "/api/v1/approvals?deploymentId="+url.QueryEscape(args[0]), &l); err != nil {
			return false, "", err
		}
		if len(l.Items) > 0 {
			ts.Setenv(args[1], l.Items[0].ID)
			return true, "", nil
		}
		return false, "none yet", nil
	})
}
