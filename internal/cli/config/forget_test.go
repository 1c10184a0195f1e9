package config

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestForgetToken(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.Upsert(Context{Name: "prod", Server: "https://prod.example"}, User{Name: "prod", Token: "t1"})
	c.Upsert(Context{Name: "prod-copy", Server: "https://prod.example"}, User{Name: "prod-copy", Token: "t1"})
	c.Upsert(Context{Name: "dev", Server: "https://dev.example"}, User{Name: "dev", Token: "t2"})
	if got := c.ForgetToken("t1"); !slices.Equal(got, []string{"prod", "prod-copy"}) {
		t.Fatalf("forgot %v, want prod and prod-copy", got)
	}
	for name, want := range map[string]string{"prod": "", "prod-copy": "", "dev": "t2"} {
		if u, ok := c.User(name); !ok || u.Token != want {
			t.Errorf("user %s: %+v, want token %q", name, u, want)
		}
	}
	if _, ok := c.Context("prod"); !ok || c.CurrentContext != "dev" {
		t.Errorf("contexts %v, current %q: the contexts stay", c.Names(), c.CurrentContext)
	}
	if got := c.ForgetToken(""); got != nil {
		t.Errorf("forgetting no token forgot %v", got)
	}
}
