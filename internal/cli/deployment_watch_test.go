package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/cli/client"
	"github.com/slipway-dev/slipway/internal/cli/iostreams"
	"github.com/slipway-dev/slipway/internal/cli/watchview"
	"github.com/slipway-dev/slipway/internal/manager/api"
)

// TestWatchOutcome: how a watch ended decides the exit code: the deployment's outcome, the
// deadline (--timeout), Ctrl-C, or the manager's refusal.
func TestWatchOutcome(t *testing.T) {
	expired, cancelExpired := context.WithTimeout(context.Background(), -time.Second)
	defer cancelExpired()
	stopped, stop := context.WithCancel(context.Background())
	stop()
	live := context.Background()
	refused := &client.APIError{StatusCode: 401, Body: api.Error{Message: "the token expired"}}
	cases := []struct {
		name   string
		ctx    context.Context
		status string
		err    error
		code   int
		msg    string
	}{
		{"completed", live, "Completed", nil, ExitOK, ""},
		{"failed", live, "Failed", nil, ExitError, "deployment d1 ended Failed: why"},
		{"rolled back", live, "RolledBack", nil, ExitError, "deployment d1 ended RolledBack: why"},
		{"cancelled", live, "Cancelled", nil, ExitCancelled, "cancelled"},
		{"timeout", expired, "Deploying", context.DeadlineExceeded, ExitPending,
			"deployment d1 is still Deploying after --timeout 5m0s; follow it again with: slipway deployment watch d1"},
		{"a request's own timeout", live, "Deploying", context.DeadlineExceeded, ExitError, "context deadline exceeded"},
		{"Ctrl-C", stopped, "Deploying", context.Canceled, ExitCancelled, "cancelled"},
		{"refused", live, "Deploying", refused, ExitAuth, "the token expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _, errOut := iostreams.Test()
			o := NewWatchOptions(NewFactory(ios, func(string) string { return "" }))
			d := &api.Deployment{ID: "d1", Status: tc.status, Reason: "why"}
			err := o.outcome(tc.ctx, "d1", d, tc.err)
			if code := ExitCode(err); code != tc.code {
				t.Errorf("exit %d, want %d (err %v)", code, tc.code, err)
			}
			if (err == nil) != (tc.msg == "") || (err != nil && err.Error() != tc.msg) {
				t.Errorf("error %v, want %q", err, tc.msg)
			}
			if tc.status == "Cancelled" && !strings.Contains(errOut.String(), "deployment d1 was cancelled: why") {
				t.Errorf("a cancelled deployment's message: %q", errOut.String())
			}
		})
	}
}

// TestWatchMode: --progress wins; otherwise -o json is json, a terminal tty, else plain; -o
// yaml and a bad --progress are refused.
func TestWatchMode(t *testing.T) {
	cases := []struct {
		progress, output string
		tty              bool
		want             watchview.Mode
		err              string
	}{
		{"", "table", true, watchview.ModeTTY, ""},
		{"", "table", false, watchview.ModePlain, ""},
		{"auto", "json", true, watchview.ModeJSON, ""},
		{"plain", "json", true, watchview.ModePlain, ""},
		{"TTY", "table", false, watchview.ModeTTY, ""},
		{"", "yaml", true, "", "-o yaml does not go with watching"},
		{"fancy", "table", true, "", "must be auto, tty, plain or json"},
	}
	for _, tc := range cases {
		ios, _, _, _ := iostreams.Test()
		ios.SetStdoutTTY(tc.tty)
		f := NewFactory(ios, func(string) string { return "" })
		f.Global.Output = tc.output
		o := NewWatchOptions(f)
		var err error
		if tc.progress != "" {
			err = o.progress.Set(tc.progress)
		}
		var mode watchview.Mode
		if err == nil {
			mode, err = o.Mode()
		}
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--progress %q -o %s: %v, want an error with %q", tc.progress, tc.output, err, tc.err)
		case tc.err == "" && (err != nil || mode != tc.want):
			t.Errorf("--progress %q -o %s (terminal %v): %q, %v; want %q", tc.progress, tc.output, tc.tty, mode, err, tc.want)
		}
	}
	var flagErr *FlagError
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.Global.Output = "yaml"
	if _, err := NewWatchOptions(f).Mode(); !errors.As(err, &flagErr) {
		t.Errorf("-o yaml is %T, want a usage error", err)
	}
}
