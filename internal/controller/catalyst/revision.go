package catalyst

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
)

// deployRevision identifies one deploy: the commit, the image and a hash of everything else
// that goes into it (the Project's deployment settings and policy, the host, the environment's variables,
// the namespace and the release). A change to any of them redeploys.
func deployRevision(env *catalystv1alpha1.Environment, project *catalystv1alpha1.Project, ns, image, host string) string {
	d := project.Spec.Deployment
	h := sha256.New()
	fmt.Fprintf(h, "type=%s\npath=%s\nimage=%s\nhost=%s\nns=%s\nrelease=%s\n", d.Type, d.Path, image, host, ns, project.Name)
	if d.Values != nil {
		fmt.Fprintf(h, "values=%s\n", d.Values.Raw)
	}
	// What the deploy may do and hold: a Project that allows more retries a refused commit.
	fmt.Fprintf(h, "clusterRole=%s\nallowed=%v\ndenied=%v\nclusterRoles=%q\n", d.ClusterRole, d.AllowedKinds, d.DeniedKinds, d.AllowedClusterRoles)
	for _, e := range env.Spec.Config.EnvVars {
		fmt.Fprintf(h, "env=%q=%q\n", e.Name, e.Value)
	}
	sum := hex.EncodeToString(h.Sum(nil))[:16]
	commit := env.Spec.Source.CommitSHA
	if len(commit) > 12 {
		commit = commit[:12]
	}
	return commit + "/" + sum
}
