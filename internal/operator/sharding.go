package operator

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/slipway-dev/slipway/internal/operator/shard"
)

// Sharding says how a system shares its objects among the replicas when Options.Shards > 1 (see
// package shard): which kind is sharded and the label naming each object's shard. The Jobs the
// system makes for an object carry the same label, so each shard caches only its objects' Jobs.
type Sharding struct {
	// Object is the sharded kind (e.g. &WerfBundle{}).
	Object client.Object
	// Label names an object's shard, written by the assigner.
	Label string
	// Owned are the kinds the system makes for its objects (not Jobs) and labels with their
	// shard: each shard caches only its own.
	Owned []client.Object
}

// Sharded reports whether the replicas are shards (--shards > 1).
func (o Options) Sharded() bool { return o.Shards > 1 }

func bindShardFlags(fs *flag.FlagSet, o *Options) {
	fs.IntVar(&o.Shards, "shards", 1, "replicas sharing the objects (each a shard with a membership Lease; the leader assigns objects "+
		"to live shards by a label); 1: one replica reconciles everything, the others wait for the leader-election Lease")
	fs.StringVar(&o.ShardName, "shard-name", os.Getenv("POD_NAME"), "this replica's shard name, with --shards > 1 (default: $POD_NAME)")
}

// shardingOf returns the sharding of the selected systems with --shards > 1, nil without; an
// error when a selected system cannot be sharded or two shard by different labels.
func shardingOf(selected []Controller, opts Options) (*Sharding, error) {
	if !opts.Sharded() {
		return nil, nil
	}
	if opts.ShardName == "" {
		return nil, errors.New("--shards > 1 needs --shard-name (or $POD_NAME) to name this replica's shard")
	}
	if !opts.LeaderElect {
		return nil, errors.New("--shards > 1 needs --leader-elect: the leader alone assigns the objects to the shards")
	}
	if len(selected) != 1 || selected[0].Shard == nil {
		return nil, fmt.Errorf("--shards > 1 hosts one shardable controller alone (--controllers=werfbundle or --controllers=webapp); selected: %v", controllerNames(selected))
	}
	return selected[0].Shard, nil
}

// shardCache narrows the cache to this shard's objects and their Jobs.
func shardCache(o cache.Options, sh *Sharding, member string) cache.Options {
	mine := labels.Set{sh.Label: member}
	o.ByObject[sh.Object] = cache.ByObject{Label: labels.SelectorFromSet(mine)}
	jobs := o.ByObject[jobObject]
	jobs.Label = labels.SelectorFromSet(labels.Merge(labels.Set{ManagedByLabel: ManagedByValue}, mine))
	o.ByObject[jobObject] = jobs
	for _, obj := range sh.Owned {
		byObj := o.ByObject[obj]
		byObj.Label = labels.SelectorFromSet(mine)
		o.ByObject[obj] = byObj
	}
	return o
}

// addShardRunnables adds this replica's membership, its tracker of the members, and the
// assigner, which runs on the leader.
func addShardRunnables(mgr ctrl.Manager, sh *Sharding, ring string, opts Options) error {
	gvk, err := apiutil.GVKForObject(sh.Object, mgr.GetScheme())
	if err != nil {
		return err
	}
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	shard.Member.WithLabelValues(ring, opts.ShardName).Set(1)
	if err := mgr.Add(&shard.Membership{Client: direct, Namespace: opts.Namespace, Ring: ring, Member: opts.ShardName,
		Duration: opts.LeaseDuration, Renew: opts.RetryPeriod}); err != nil {
		return err
	}
	// Every replica tracks the members from its start, so the one that takes the assigner over
	// from a dead leader already knows the leader's membership Lease expired.
	tracker := &shard.Tracker{Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Namespace: opts.Namespace, Ring: ring, Every: opts.RetryPeriod / 2}
	if err := mgr.Add(tracker); err != nil {
		return err
	}
	return mgr.Add(&shard.Assigner{Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Client: direct, GVK: gvk, Label: sh.Label,
		Namespace: opts.Namespace, Ring: ring, Every: opts.RetryPeriod / 2, Workers: assignWorkers, Tracker: tracker,
		// At a start, wait until the tracker has watched for a Lease duration for the --shards members to be there.
		Expect: opts.Shards, Settle: opts.LeaseDuration})
}

// everyReplica runs a runnable on every replica, leader or not.
type everyReplica struct{ manager.Runnable }

func (everyReplica) NeedLeaderElection() bool { return false }

// onEveryReplica reports whether a runnable a sharded system adds runs on every shard: its
// controllers and the runnables that do not ask for the leader; one that says it needs the
// leader (a cluster-wide cleanup) keeps to the leader.
func onEveryReplica(r manager.Runnable) bool {
	if _, ok := r.(controller.Controller); ok {
		return true
	}
	_, asks := r.(manager.LeaderElectionRunnable)
	return !asks
}

// assignWorkers patch shard labels in parallel: each patch waits on the API server's round trip,
// and a shard's first share (or a dead shard's) is thousands of them at once.
const assignWorkers = 16
