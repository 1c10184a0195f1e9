package access

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/registry"
)

// TestKey_EverySettingCounts: each setting a client depends on changes the key (a CA or a
// credential change must never be served the old client), and equal settings give equal keys.
func TestKey_EverySettingCounts(t *testing.T) {
	base := registry.Options{Credentials: registry.Credentials{Username: "bot", Password: "pw"}, CACert: []byte("ca-1"), UserAgent: "slipway"}
	changes := map[string]func(*registry.Options){
		"CA":            func(o *registry.Options) { o.CACert = []byte("ca-2") },
		"no CA":         func(o *registry.Options) { o.CACert = nil },
		"password":      func(o *registry.Options) { o.Credentials.Password = "pw2" },
		"username":      func(o *registry.Options) { o.Credentials.Username = "bot2" },
		"token":         func(o *registry.Options) { o.Credentials.Token = "tok" },
		"insecure":      func(o *registry.Options) { o.Insecure = true },
		"user agent":    func(o *registry.Options) { o.UserAgent = "other" },
		"timeout":       func(o *registry.Options) { o.Timeout = time.Second },
		"body limit":    func(o *registry.Options) { o.MaxBodyBytes = 1 },
		"page size":     func(o *registry.Options) { o.PageSize = 5 },
		"field shifted": func(o *registry.Options) { o.Credentials.Username, o.Credentials.Password = "botp", "w" },
	}
	same := base
	same.CACert = []byte("ca-1")
	if Key(base) != Key(same) {
		t.Fatal("equal settings gave different keys")
	}
	for name, change := range changes {
		o := base
		change(&o)
		if Key(o) == Key(base) {
			t.Errorf("changing the %s kept the key", name)
		}
	}
}

// TestCache_SharesPerSettingsAndForgetsFailures: a second Get with the same settings is served
// the first client; other settings get their own; a failed make is not remembered.
func TestCache_SharesPerSettingsAndForgetsFailures(t *testing.T) {
	var c Cache[*int]
	made := 0
	newInt := func(registry.Options, *registry.Limiter) (*int, error) {
		made++
		n := made
		return &n, nil
	}
	a := registry.Options{CACert: []byte("a")}
	first, _ := c.Get(a, nil, newInt)
	again, _ := c.Get(a, nil, newInt)
	other, _ := c.Get(registry.Options{CACert: []byte("b")}, nil, newInt)
	if first != again || first == other || made != 2 {
		t.Errorf("clients %d, %d, %d after %d makes; want the first shared and a second for the other CA", *first, *again, *other, made)
	}

	boom := errors.New("boom")
	failing := func(registry.Options, *registry.Limiter) (*int, error) { return nil, boom }
	failed := registry.Options{UserAgent: "x"}
	if _, err := c.Get(failed, nil, failing); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want the factory's", err)
	}
	if got, err := c.Get(failed, nil, newInt); err != nil || got == nil || *got != 3 {
		t.Errorf("after a failure Get made no new client: %v, %v", got, err)
	}
}

// TestCache_StartsOverWhenFull: the cache never holds more than MaxCachedClients.
func TestCache_StartsOverWhenFull(t *testing.T) {
	var c Cache[int]
	newLen := func(o registry.Options, _ *registry.Limiter) (int, error) { return len(o.UserAgent), nil }
	for i := 0; i <= MaxCachedClients; i++ {
		if _, err := c.Get(registry.Options{UserAgent: fmt.Sprint("agent-", i)}, nil, newLen); err != nil {
			t.Fatal(err)
		}
		if c.Len() > MaxCachedClients {
			t.Fatalf("%d clients held, want at most %d", c.Len(), MaxCachedClients)
		}
	}
	if c.Len() != 1 {
		t.Errorf("%d clients held after overflowing, want 1 (started over)", c.Len())
	}
}
