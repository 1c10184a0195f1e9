// Package shard shares the objects of one kind among the replicas of a controller, each a shard.
//
// Every shard holds a membership Lease (Membership) in the operator's namespace, renewed like the
// leader-election Lease; the live members are the Leases renewed within their duration. One
// assigner (Assigner, run by the replica that holds the leader-election Lease) watches the
// objects' metadata only and writes each object's owner into a label: the member that rendezvous
// hashing (Pick) gives for the object's key, its namespace or the value of the KeyLabel a user
// sets to keep objects together. Each shard's cache selects only the objects whose label names it,
// so its memory and its work are its share.
package shard

import (
	"hash/fnv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeyLabel, set by a user on an object, is hashed instead of the object's namespace: objects with
// the same key are always on the same shard.
const KeyLabel = "shard.slipway.dev/key"

// RingLabel marks the membership Leases of one ring (one sharded controller).
const RingLabel = "shard.slipway.dev/ring"

// Key is what an object is hashed by: its KeyLabel's value, else its namespace.
func Key(obj metav1.Object) string {
	if k := obj.GetLabels()[KeyLabel]; k != "" {
		return "key/" + k
	}
	return "ns/" + obj.GetNamespace()
}

// Pick returns the member that owns key, "" when there is none. It is rendezvous (highest random
// weight) hashing: each member scores hash(member, key) and the highest wins. When a member leaves
// only its objects move, each to the member that scored second; when one joins it takes exactly the
// objects it now wins, about 1/N of them, from every other member alike. It needs no ring of
// virtual nodes, and N is small (a Deployment's replicas), so O(N) per object is nothing.
func Pick(key string, members []string) string {
	var best string
	var bestScore uint64
	for _, m := range members {
		if s := score(m, key); best == "" || s > bestScore || (s == bestScore && m < best) {
			best, bestScore = m, s
		}
	}
	return best
}

func score(member, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return mix(h.Sum64())
}

// mix is a 64-bit finaliser (splitmix64): FNV's low bits vary too little between keys that differ
// only in their last characters (ns-1, ns-2, ...) for the highest score to spread evenly.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
