package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"SLIPWAY_CONFIG wins", map[string]string{"SLIPWAY_CONFIG": "/x/c.yaml", "XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, "/x/c.yaml"},
		{"XDG_CONFIG_HOME", map[string]string{"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, "/xdg/slipway/config.yaml"},
		{"home", map[string]string{"HOME": "/h"}, "/h/.config/slipway/config.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Path(env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Path = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSaveLoadRoundTripMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "config.yaml")
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Contexts) != 0 || c.CurrentContext != "" {
		t.Fatalf("a missing file is an empty config, got %+v", c)
	}
	c.Upsert(Context{Name: "prod", Server: "https://m.example", CertificateAuthority: "/ca.pem"}, User{Name: "prod", Token: "t1"})
	c.Upsert(Context{Name: "dev", Server: "https://dev.example", InsecureSkipTLSVerify: true}, User{Name: "dev", Token: "t2"})
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"current-context: dev", "certificate-authority: /ca.pem", "insecure-skip-tls-verify: true", "token: t1"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("file lacks %q:\n%s", want, data)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left beside the config: %v", entries)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("round trip (-saved +loaded):\n%s", diff)
	}
}

func TestUpsertReplaces(t *testing.T) {
	c := &Config{}
	c.Upsert(Context{Name: "a", Server: "https://one"}, User{Name: "a", Token: "old"})
	c.Upsert(Context{Name: "a", Server: "https://two"}, User{Name: "a", Token: "new"})
	if len(c.Contexts) != 1 || c.Contexts[0].Server != "https://two" || c.Contexts[0].User != "a" {
		t.Errorf("contexts %+v", c.Contexts)
	}
	if len(c.Users) != 1 || c.Users[0].Token != "new" {
		t.Errorf("users %+v", c.Users)
	}
}

func TestUseAndDelete(t *testing.T) {
	c := &Config{path: "/cfg.yaml"}
	c.Upsert(Context{Name: "a", Server: "https://a"}, User{Name: "shared", Token: "t"})
	c.Upsert(Context{Name: "b", Server: "https://b"}, User{Name: "shared", Token: "t"})
	if err := c.Use("a"); err != nil || c.CurrentContext != "a" {
		t.Fatalf("Use(a): %v, current %q", err, c.CurrentContext)
	}
	err := c.Use("zzz")
	if err == nil || !strings.Contains(err.Error(), "the contexts are a, b") {
		t.Errorf("Use(zzz) = %v, want the contexts named", err)
	}
	if err := c.Delete("a"); err != nil {
		t.Fatal(err)
	}
	if c.CurrentContext != "" || len(c.Users) != 1 {
		t.Errorf("after deleting a: current %q, users %+v (b still uses the user)", c.CurrentContext, c.Users)
	}
	if err := c.Delete("b"); err != nil {
		t.Fatal(err)
	}
	if len(c.Users) != 0 || len(c.Contexts) != 0 {
		t.Errorf("after deleting b: %+v", c)
	}
	if err := c.Delete("b"); err == nil || !strings.Contains(err.Error(), "slipway login") {
		t.Errorf("Delete of a missing context in an empty file = %v", err)
	}
}

func TestLoadRefusesUnknownFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("current-context: a\ncontext: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load = %v, want an error naming the file", err)
	}
}
