package operator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestShardingOf_RefusesWhatCannotBeSharded(t *testing.T) {
	sh := &Sharding{Object: &corev1.ConfigMap{}, Label: "shard.slipway.dev/test"}
	sharded, plain := Controller{Name: "a", Shard: sh}, Controller{Name: "b"}
	for _, tc := range []struct {
		name     string
		selected []Controller
		opts     Options
		want     *Sharding
		err      string
	}{
		{"one replica: no sharding", []Controller{sharded}, Options{Shards: 1, ShardName: "p", LeaderElect: true}, nil, ""},
		{"sharded", []Controller{sharded}, Options{Shards: 3, ShardName: "p", LeaderElect: true}, sh, ""},
		{"no name", []Controller{sharded}, Options{Shards: 3, LeaderElect: true}, nil, "--shard-name"},
		{"no leader election", []Controller{sharded}, Options{Shards: 3, ShardName: "p"}, nil, "--leader-elect"},
		{"not shardable", []Controller{plain}, Options{Shards: 3, ShardName: "p", LeaderElect: true}, nil, "one shardable controller alone"},
		{"two systems", []Controller{sharded, plain}, Options{Shards: 3, ShardName: "p", LeaderElect: true}, nil, "one shardable controller alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shardingOf(tc.selected, tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one about %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("shardingOf = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestShardCache_SelectsTheShardsObjectsAndJobs(t *testing.T) {
	sh := &Sharding{Object: &corev1.ConfigMap{}, Label: "shard.slipway.dev/test"}
	o := shardCache(cacheOptions(nil), sh, "p-1")
	objSel := o.ByObject[sh.Object].Label
	jobSel := o.ByObject[jobObject].Label
	for _, tc := range []struct {
		sel  labels.Selector
		set  labels.Set
		want bool
	}{
		{objSel, labels.Set{sh.Label: "p-1"}, true},
		{objSel, labels.Set{sh.Label: "p-2"}, false},
		{objSel, labels.Set{}, false},
		{jobSel, labels.Set{sh.Label: "p-1", ManagedByLabel: ManagedByValue}, true},
		{jobSel, labels.Set{sh.Label: "p-2", ManagedByLabel: ManagedByValue}, false},
		{jobSel, labels.Set{sh.Label: "p-1"}, false},
	} {
		if got := tc.sel.Matches(tc.set); got != tc.want {
			t.Errorf("%s matches %v = %t, want %t", tc.sel, tc.set, got, tc.want)
		}
	}
	if o.ByObject[jobObject].Transform == nil {
		t.Error("the Jobs' transform was lost")
	}
}
