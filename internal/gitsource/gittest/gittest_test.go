package gittest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// The git binary itself can clone from the server, and cannot push to it.
func TestServer_ServesGitCloneAndRefusesPush(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("bot", "s3cret"))
	repo := srv.NewRepository(t, "org/app")
	sha, err := repo.Commit("samples", gittest.Merge(
		gittest.HelmChart("charts/app", "app"), gittest.Manifests("deploy/manifests"),
		gittest.Kustomization("deploy/kustomize"), gittest.Dockerfile("Dockerfile"),
	))
	if err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(t.TempDir(), "clone")
	authed := strings.Replace(repo.URL, "http://", "http://bot:s3cret@", 1)
	if out, err := git(t, "", "clone", "--quiet", authed, dir); err != nil {
		t.Fatalf("git clone: %v: %s", err, out)
	}
	if out, _ := git(t, dir, "rev-parse", "HEAD"); out != sha {
		t.Errorf("cloned HEAD %s, want %s", out, sha)
	}
	for _, f := range []string{"charts/app/Chart.yaml", "deploy/manifests/service.yaml", "deploy/kustomize/overlays/preview/kustomization.yaml", "Dockerfile"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}

	if out, err := git(t, "", "clone", "--quiet", repo.URL, filepath.Join(t.TempDir(), "anon")); err == nil {
		t.Errorf("clone without credentials succeeded: %s", out)
	}
	if out, err := git(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/pushed"); err == nil {
		t.Errorf("push succeeded: %s", out)
	}
	if _, err := repo.Git("rev-parse", "--verify", "--quiet", "refs/heads/pushed"); err == nil {
		t.Error("the pushed branch exists")
	}
}

func git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
