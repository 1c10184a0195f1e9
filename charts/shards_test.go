package charts_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestChart_ShardsMakeEachReplicaAShard: shards: 1 (the default) keeps the WerfBundle and WebApp
// Deployments as before (replicas, one leader); shards: N runs N replicas of each, each told it is
// a shard (--shards=N) and named by its pod; Catalyst's does not change; shards with a single
// Deployment or without leader election is refused.
func TestChart_ShardsMakeEachReplicaAShard(t *testing.T) {
	for _, tc := range []struct {
		values   string
		replicas int32
		arg      string
	}{
		{"", 3, "--shards=1"},
		{"shards: 4", 4, "--shards=4"},
	} {
		objs := render(t, tc.values)
		for _, d := range deployments(t, objs) {
			c := d.Spec.Template.Spec.Containers[0]
			hasShards := slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--shards=") })
			podName := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
				return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
			})
			if d.Name == "slipway-catalyst" {
				if hasShards || *d.Spec.Replicas != 3 {
					t.Errorf("values %q: %s has %d replicas and --shards %t, want 3 and none", tc.values, d.Name, *d.Spec.Replicas, hasShards)
				}
				continue
			}
			if *d.Spec.Replicas != tc.replicas || !slices.Contains(c.Args, tc.arg) || !podName {
				t.Errorf("values %q: %s has %d replicas, args %v, POD_NAME %t; want %d, %s and the pod's name",
					tc.values, d.Name, *d.Spec.Replicas, c.Args, podName, tc.replicas, tc.arg)
			}
		}
	}
	if _, err := renderErr(t, "singleDeployment: true\nshards: 2"); err == nil || !strings.Contains(err.Error(), "singleDeployment: false") {
		t.Errorf("shards with singleDeployment rendered (err %v), want a refusal naming singleDeployment", err)
	}
	if _, err := renderErr(t, "leaderElection: {enabled: false}\nshards: 2"); err == nil || !strings.Contains(err.Error(), "leaderElection.enabled") {
		t.Errorf("shards without leader election rendered (err %v), want a refusal naming leaderElection.enabled", err)
	}
}
