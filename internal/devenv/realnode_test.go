package devenv

import (
	"os"
	"strings"
	"testing"
)

// $SLIPWAY_REAL_NODE turns make dev's real node on or off; unset, root decides; anything else
// is refused naming the variable.
func TestRealNodeDefault_FromTheVariable(t *testing.T) {
	for _, tc := range []struct {
		env     string
		on      bool
		why     string
		wantErr string
	}{
		{env: "0", on: false, why: "off (SLIPWAY_REAL_NODE=0)"},
		{env: "false", on: false, why: "off (SLIPWAY_REAL_NODE=false)"},
		{env: "1", on: true, why: "on (SLIPWAY_REAL_NODE=1)"},
		{env: "yes please", wantErr: `SLIPWAY_REAL_NODE="yes please": want 1 or 0`},
		{env: "", on: os.Geteuid() == 0},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(EnvRealNode, tc.env)
			on, why, err := RealNodeDefault()
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case on != tc.on || tc.why != "" && why != tc.why:
				t.Errorf("on %v (%s), want %v (%s)", on, why, tc.on, tc.why)
			case tc.env == "" && !on && !strings.Contains(why, "not root"):
				t.Errorf("off without saying why: %q", why)
			}
		})
	}
}
