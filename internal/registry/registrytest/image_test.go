package registrytest_test

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// A pushed image is a manifest the client finds; another tag of the same repository is not.
func TestPushImage_ManifestExists(t *testing.T) {
	reg := registrytest.StartDistribution(t)
	sha := "0123456789abcdef0123456789abcdef01234567"
	registrytest.PushImage(t, reg.Host, "org/app", sha)
	c := newClient(t)
	ctx := testContext(t)
	for _, tc := range []struct {
		tag  string
		want bool
	}{{sha, true}, {"ffffffffffffffffffffffffffffffffffffffff", false}} {
		got, err := c.ManifestExists(ctx, reg.Repository("org/app")+":"+tc.tag)
		if err != nil {
			t.Fatalf("ManifestExists(%s): %v", tc.tag, err)
		}
		if got != tc.want {
			t.Errorf("ManifestExists(%s) = %t, want %t", tc.tag, got, tc.want)
		}
	}
}
