package crds

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
)

// TestDigest_IgnoresWhatTheServerSets: a CRD read back from a cluster (resourceVersion,
// generation, status) has the digest of the CRD as the chart ships it, and revisions that
// differ have different digests.
func TestDigest_IgnoresWhatTheServerSets(t *testing.T) {
	seen := map[string]charttest.Level{}
	for _, level := range []charttest.Level{charttest.Base, charttest.Compatible, charttest.Breaking} {
		shipped, err := Digest(charttest.Widget(level))
		if err != nil {
			t.Fatal(err)
		}
		served := charttest.Widget(level)
		served.ResourceVersion, served.Generation, served.UID = "42", 3, "0b8d"
		served.Status.AcceptedNames = served.Spec.Names
		got, err := Digest(served)
		if err != nil {
			t.Fatal(err)
		}
		if got != shipped {
			t.Errorf("level %d: served %s, shipped %s", level, got, shipped)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("levels %d and %d share digest %s", other, level, got)
		}
		seen[got] = level
	}
}
