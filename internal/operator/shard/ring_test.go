package shard

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKey_PinLabelBeforeNamespace(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, "ns/team-a"},
		{map[string]string{KeyLabel: ""}, "ns/team-a"},
		{map[string]string{KeyLabel: "payments"}, "key/payments"},
	} {
		obj := &metav1.ObjectMeta{Namespace: "team-a", Labels: tc.labels}
		if got := Key(obj); got != tc.want {
			t.Errorf("Key(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

func TestPick_NoMembers(t *testing.T) {
	if got := Pick("ns/a", nil); got != "" {
		t.Fatalf("Pick with no members = %q, want none", got)
	}
}

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ns/team-%d", i)
	}
	return out
}

func TestPick_SpreadsEvenly(t *testing.T) {
	members := []string{"op-0", "op-1", "op-2", "op-3", "op-4"}
	count := map[string]int{}
	for _, k := range keys(10000) {
		count[Pick(k, members)]++
	}
	for _, m := range members {
		// 2,000 each on average; 10% either way is far beyond chance for a sound hash.
		if c := count[m]; c < 1800 || c > 2200 {
			t.Errorf("member %s owns %d of 10000 keys, want about 2000 (%v)", m, c, count)
		}
	}
}

func TestPick_MinimalMovement(t *testing.T) {
	before := []string{"op-0", "op-1", "op-2"}
	joined := []string{"op-0", "op-1", "op-2", "op-3"}
	left := []string{"op-0", "op-2"}
	moved := map[string]int{}
	for _, k := range keys(6000) {
		was := Pick(k, before)
		// A join moves only keys the new member wins; a leave only the leaver's keys.
		if now := Pick(k, joined); now != was {
			if now != "op-3" {
				t.Fatalf("key %s moved from %s to %s on op-3's join", k, was, now)
			}
			moved["join"]++
		}
		if now := Pick(k, left); now != was {
			if was != "op-1" {
				t.Fatalf("key %s moved from %s to %s on op-1's leave", k, was, now)
			}
			moved["leave"]++
		}
		// Order of the member list does not matter.
		if Pick(k, []string{"op-2", "op-0", "op-1"}) != was {
			t.Fatalf("key %s: the owner depends on the order of the members", k)
		}
	}
	// The joiner takes about a quarter, the leaver had about a third.
	if j := moved["join"]; j < 1300 || j > 1700 {
		t.Errorf("op-3's join moved %d of 6000 keys, want about 1500", j)
	}
	if l := moved["leave"]; l < 1800 || l > 2200 {
		t.Errorf("op-1's leave moved %d of 6000 keys, want about 2000", l)
	}
}
