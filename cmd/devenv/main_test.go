package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/devenv"
)

func TestWebhookPortFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		args      []string
		want      int
		wantErr   string
	}{
		{name: "unset", want: 0},
		{name: "from the variable", env: "9555", want: 9555},
		{name: "the flag wins", env: "9555", args: []string{"--webhook-port=9666"}, want: 9666},
		{name: "not a number", env: "nine", wantErr: devenv.EnvWebhookPort + `="nine" is not a port number`},
		{name: "out of range", env: "70000", wantErr: "is not a port number (0-65535)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(devenv.EnvWebhookPort, tc.env)
			fs := flag.NewFlagSet("up", flag.ContinueOnError)
			var opts devenv.Options
			fs.IntVar(&opts.WebhookPort, "webhook-port", 0, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := webhookPortFromEnv(fs, &opts)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case opts.WebhookPort != tc.want:
				t.Fatalf("port %d, want %d", opts.WebhookPort, tc.want)
			}
		})
	}
}
