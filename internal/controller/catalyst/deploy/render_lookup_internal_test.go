package deploy

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLookupProxy_AllowsDiscoveryAndTheNamespaceOnly: what a renderer may ask the operator for,
// request by request, as an attacker's chart (or a renderer it took over) would ask.
func TestLookupProxy_AllowsDiscoveryAndTheNamespaceOnly(t *testing.T) {
	p := &lookupProxy{namespace: "env-a"}
	for _, tc := range []struct {
		method, target, refused string // refused is "" when allowed
	}{
		{"GET", "/api", ""},
		{"GET", "/apis", ""},
		{"GET", "/api/v1", ""},
		{"GET", "/apis/apps", ""},
		{"GET", "/apis/apps/v1", ""},
		{"GET", "/api/v1/namespaces/env-a/configmaps", ""},
		{"GET", "/api/v1/namespaces/env-a/secrets/db?resourceVersion=0", ""},
		{"GET", "/apis/apps/v1/namespaces/env-a/deployments/web", ""},
		{"GET", "/api/v1/namespaces/env-a/configmaps?labelSelector=a%3Db&limit=5", ""},
		{"POST", "/api/v1/namespaces/env-a/configmaps", "only reads"},
		{"DELETE", "/api/v1/namespaces/env-a/configmaps/x", "only reads"},
		{"GET", "/api/v1/namespaces/env-a/configmaps?watch=true", `"watch" is not allowed`},
		{"GET", "/api/v1/namespaces/env-b/secrets/db", "namespace env-b is not the environment's"},
		{"GET", "/apis/apps/v1/namespaces/kube-system/deployments", "namespace kube-system is not the environment's"},
		{"GET", "/api/v1/namespaces/env-a", "cluster-scoped"},
		{"GET", "/api/v1/namespaces", "cluster-scoped"},
		{"GET", "/api/v1/secrets", "every namespace"},
		{"GET", "/api/v1/nodes/n1", "cluster-scoped"},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin", "cluster-scoped"},
		{"GET", "/api/v1/namespaces/env-a/pods/web/log", "subresources"},
		{"GET", "/api/v1/namespaces/env-a/pods/web/exec", "subresources"},
		{"GET", "/api/v1/namespaces/env-a/../env-b/secrets", "not a path of the API"},
		{"GET", "/api/v1/namespaces/env-a%2F..%2Fenv-b/secrets", "escaped"},
		{"GET", "/version", "not a path of the API"},
		{"GET", "/metrics", "not a path of the API"},
		{"GET", "/healthz", "not a path of the API"},
	} {
		r := httptest.NewRequest(tc.method, "http://slipway-operator"+tc.target, nil)
		err := p.allowed(r)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s %s refused: %v", tc.method, tc.target, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s %s: %v, want refused saying %q", tc.method, tc.target, err, tc.refused)
		}
	}
}
