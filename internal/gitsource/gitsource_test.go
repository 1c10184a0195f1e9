package gitsource_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// history is a repository with three commits on main and one on a feature branch.
type history struct {
	srv                    *gittest.Server
	repo                   *gittest.Repository
	first, second, mainTip string
	feature                string
}

func newHistory(t *testing.T, opts ...gittest.Option) history {
	t.Helper()
	h := history{srv: gittest.NewServer(t, opts...)}
	h.repo = h.srv.NewRepository(t, "org/app.git")
	h.first = must(t)(h.repo.Commit("the chart", gittest.HelmChart("charts/app", "app")))
	h.second = must(t)(h.repo.Commit("plain manifests", gittest.Manifests("deploy/manifests")))
	h.mainTip = must(t)(h.repo.Commit("a kustomization", gittest.Kustomization("deploy/kustomize")))
	if err := h.repo.CreateBranch("feature/login", h.second); err != nil {
		t.Fatal(err)
	}
	h.feature = must(t)(h.repo.Commit("login page", gittest.Files{"web/login.html": []byte("<form></form>\n")}))
	if err := h.repo.SwitchBranch("main"); err != nil {
		t.Fatal(err)
	}
	return h
}

func must(t *testing.T) func(string, error) string {
	return func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func fetch(t *testing.T, o gitsource.Options) (*gitsource.Snapshot, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return gitsource.Fetch(ctx, o)
}

func TestFetch_BranchHeadIsShallow(t *testing.T) {
	h := newHistory(t)
	snap, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit() != h.mainTip || !snap.Shallow() {
		t.Errorf("got commit %s (shallow %v), want %s shallow", snap.Commit(), snap.Shallow(), h.mainTip)
	}
	for _, dir := range []string{"charts/app", "./charts/app/", "deploy/manifests", "deploy/kustomize/overlays/preview", ".", ""} {
		if err := snap.RequireDir(dir); err != nil {
			t.Errorf("RequireDir(%q): %v", dir, err)
		}
	}
	chart, err := snap.ReadFile("charts/app/Chart.yaml")
	if err != nil || !strings.Contains(string(chart), "name: app") {
		t.Errorf("Chart.yaml: %q, %v", chart, err)
	}
}

func TestFetch_CommitAtTheBranchTipTakesOneShallowFetch(t *testing.T) {
	h := newHistory(t)
	before := h.srv.Requests()
	snap, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "feature/login", Commit: h.feature})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit() != h.feature || !snap.Shallow() {
		t.Errorf("got %s (shallow %v), want %s shallow", snap.Commit(), snap.Shallow(), h.feature)
	}
	if n := h.srv.Requests() - before; n != 2 { // ref advertisement + upload-pack
		t.Errorf("%d requests, want 2", n)
	}
	if _, err := snap.ReadFile("web/login.html"); err != nil {
		t.Error(err)
	}
}

func TestFetch_OlderCommitOnAStrictServerFallsBackToHistory(t *testing.T) {
	h := newHistory(t) // git's default: only ref tips can be asked for by hash
	snap, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "main", Commit: h.first})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit() != h.first || snap.Shallow() {
		t.Errorf("got %s (shallow %v), want %s from history", snap.Commit(), snap.Shallow(), h.first)
	}
	if err := snap.RequireDir("charts/app"); err != nil {
		t.Error(err)
	}
	if _, err := snap.Stat("deploy/manifests"); !errors.Is(err, gitsource.ErrPathNotFound) {
		t.Errorf("deploy/manifests at the first commit: %v, want ErrPathNotFound", err)
	}
}

func TestFetch_OlderCommitByHashWhereTheServerAllowsIt(t *testing.T) {
	h := newHistory(t, gittest.WithAllowReachableSHA1InWant())
	snap, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "main", Commit: h.second})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit() != h.second || !snap.Shallow() {
		t.Errorf("got %s (shallow %v), want %s shallow", snap.Commit(), snap.Shallow(), h.second)
	}
	if err := snap.RequireDir("deploy/manifests"); err != nil {
		t.Error(err)
	}
}

func TestFetch_CommitOnAnotherBranchOrWithoutBranch(t *testing.T) {
	h := newHistory(t)
	for _, branch := range []string{"main", "", "deleted-after-merge"} {
		snap, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: branch, Commit: h.feature})
		if err != nil {
			t.Errorf("branch %q: %v", branch, err)
			continue
		}
		if snap.Commit() != h.feature {
			t.Errorf("branch %q: got %s, want %s", branch, snap.Commit(), h.feature)
		}
	}
}

func TestFetch_MissingCommit(t *testing.T) {
	missing := strings.Repeat("0123456789", 4)
	for name, opts := range map[string][]gittest.Option{"strict server": nil, "hash-fetching server": {gittest.WithAllowReachableSHA1InWant()}} {
		t.Run(name, func(t *testing.T) {
			h := newHistory(t, opts...)
			_, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "main", Commit: missing})
			t.Logf("%v", err)
			if !errors.Is(err, gitsource.ErrCommitNotFound) {
				t.Errorf("got %v, want ErrCommitNotFound", err)
			}
		})
	}
}

func TestFetch_UnreachableCommitIsNotFound(t *testing.T) {
	h := newHistory(t, gittest.WithAllowReachableSHA1InWant())
	if err := h.repo.DeleteBranch("feature/login"); err != nil { // as after a force-push
		t.Fatal(err)
	}
	_, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "main", Commit: h.feature})
	if !errors.Is(err, gitsource.ErrCommitNotFound) {
		t.Errorf("got %v, want ErrCommitNotFound", err)
	}
}

func TestFetch_MissingBranch(t *testing.T) {
	h := newHistory(t)
	_, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "nope"})
	if !errors.Is(err, gitsource.ErrBranchNotFound) {
		t.Errorf("got %v, want ErrBranchNotFound", err)
	}
}

func TestFetch_MissingRepository(t *testing.T) {
	h := newHistory(t)
	_, err := fetch(t, gitsource.Options{URL: h.srv.URL + "/org/nothing.git", Branch: "main"})
	if !errors.Is(err, gitsource.ErrRepositoryNotFound) {
		t.Errorf("got %v, want ErrRepositoryNotFound", err)
	}
	_, err = gitsource.ResolveBranch(context.Background(), gitsource.Options{URL: h.srv.URL + "/org/nothing.git", Branch: "main"})
	if !errors.Is(err, gitsource.ErrRepositoryNotFound) {
		t.Errorf("ResolveBranch: got %v, want ErrRepositoryNotFound", err)
	}
}

func TestFetchAndResolve_Authentication(t *testing.T) {
	h := newHistory(t, gittest.WithBasicAuth("bot", "s3cret"))
	for _, tc := range []struct {
		name  string
		creds *gitsource.Credentials
		want  error
	}{
		{"none", nil, gitsource.ErrAuthenticationRequired},
		{"wrong password", &gitsource.Credentials{Username: "bot", Password: "guess"}, gitsource.ErrAuthenticationFailed},
		{"bearer token where basic auth is wanted", &gitsource.Credentials{BearerToken: "s3cret"}, gitsource.ErrAuthenticationFailed},
		{"right", &gitsource.Credentials{Username: "bot", Password: "s3cret"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := gitsource.Options{URL: h.repo.URL, Branch: "main", Commit: h.second, Credentials: tc.creds}
			snap, err := fetch(t, o)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Fetch: got %v, want %v", err, tc.want)
			}
			if err == nil && snap.Commit() != h.second {
				t.Errorf("Fetch: got %s, want %s", snap.Commit(), h.second)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows the secret: %v", err)
			}
			head, err := gitsource.ResolveBranch(context.Background(), o)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ResolveBranch: got %v, want %v", err, tc.want)
			}
			if err == nil && head != h.mainTip {
				t.Errorf("ResolveBranch: got %s, want %s", head, h.mainTip)
			}
		})
	}
}

func TestResolveBranch(t *testing.T) {
	h := newHistory(t)
	ctx := context.Background()
	for branch, want := range map[string]string{"main": h.mainTip, "feature/login": h.feature} {
		got, err := gitsource.ResolveBranch(ctx, gitsource.Options{URL: h.repo.URL, Branch: branch})
		if err != nil || got != want {
			t.Errorf("ResolveBranch(%s) = %s, %v; want %s", branch, got, err, want)
		}
	}
	if _, err := gitsource.ResolveBranch(ctx, gitsource.Options{URL: h.repo.URL, Branch: "gone"}); !errors.Is(err, gitsource.ErrBranchNotFound) {
		t.Errorf("missing branch: %v, want ErrBranchNotFound", err)
	}
	empty := h.srv.NewRepository(t, "empty")
	if _, err := gitsource.ResolveBranch(ctx, gitsource.Options{URL: empty.URL, Branch: "main"}); !errors.Is(err, gitsource.ErrBranchNotFound) {
		t.Errorf("empty repository: %v, want ErrBranchNotFound", err)
	}
}

func TestSnapshot_PathChecks(t *testing.T) {
	h := newHistory(t)
	snap, err := fetch(t, gitsource.Options{URL: h.repo.URL, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		kind gitsource.Kind
		err  error
	}{
		{"charts/app", gitsource.KindDir, nil},
		{"./charts/app/values.yaml", gitsource.KindFile, nil},
		{"charts/app/../../deploy/kustomize", gitsource.KindDir, nil},
		{"charts/other", 0, gitsource.ErrPathNotFound},
		{"charts/app/values.yaml/x", 0, gitsource.ErrPathNotFound},
		{"../outside", 0, gitsource.ErrInvalidPath},
		{"charts/../../outside", 0, gitsource.ErrInvalidPath},
		{"/etc/passwd", 0, gitsource.ErrInvalidPath},
	} {
		kind, err := snap.Stat(tc.path)
		if !errors.Is(err, tc.err) || kind != tc.kind {
			t.Errorf("Stat(%q) = %v, %v; want %v, %v", tc.path, kind, err, tc.kind, tc.err)
		}
	}
	if err := snap.RequireDir("charts/app/Chart.yaml"); !errors.Is(err, gitsource.ErrPathNotFound) {
		t.Errorf("RequireDir on a file: %v, want ErrPathNotFound", err)
	}
	if _, err := snap.ReadFile("charts/app"); !errors.Is(err, gitsource.ErrPathNotFound) {
		t.Errorf("ReadFile on a directory: %v, want ErrPathNotFound", err)
	}
}

// TestSnapshot_SharedBetweenGoroutines: the controllers share one Snapshot per commit between
// reconciles, so its lookups run at the same time from many goroutines (go-git's tree fills lazy
// caches on the first lookup; unguarded, the runtime stops the process on a concurrent map write).
func TestSnapshot_SharedBetweenGoroutines(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.NewRepository(t, "app")
	files := gittest.Files{}
	for d := range 12 {
		for f := range 12 {
			files[fmt.Sprintf("deploy/d%d/sub/f%d.yaml", d, f)] = []byte(fmt.Sprintf("d%d-f%d\n", d, f))
		}
	}
	sha := must(t)(repo.Commit("many files", files))
	snap, err := fetch(t, gitsource.Options{URL: repo.URL, Commit: sha})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16*len(files))
	for g := range 16 {
		wg.Go(func() {
			names := slices.Collect(maps.Keys(files))
			rand.New(rand.NewPCG(uint64(g), 1)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			for _, name := range names {
				if kind, err := snap.Stat(name); err != nil || kind != gitsource.KindFile {
					errs <- fmt.Errorf("Stat(%q) = %v, %v", name, kind, err)
				}
				if err := snap.RequireDir(path.Dir(name)); err != nil {
					errs <- err
				}
				if got, err := snap.ReadFile(name); err != nil || string(got) != string(files[name]) {
					errs <- fmt.Errorf("ReadFile(%q) = %q, %v", name, got, err)
				}
			}
			if g%4 == 0 {
				if _, err := snap.CheckoutMemory(); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSnapshot_CheckoutDirAndMemory(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.NewRepository(t, "app")
	if err := repo.Symlink("deploy/common", "../charts/app/templates"); err != nil {
		t.Fatal(err)
	}
	files := gittest.Merge(gittest.HelmChart("charts/app", "app"), gittest.Files{"scripts/run.sh": []byte("#!/bin/sh\necho hi\n")})
	must(t)(repo.Commit("chart, script and link", files))
	if err := os.Chmod(filepath.Join(repo.Dir, "scripts/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	sha := must(t)(repo.Commit("make the script executable", nil))

	snap, err := fetch(t, gitsource.Options{URL: repo.URL, Commit: sha})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "checkout")
	if err := snap.CheckoutDir(dir); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(got) != string(content) {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "scripts/run.sh")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("scripts/run.sh is not executable: %v, %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "deploy/common")); err != nil || target != "../charts/app/templates" {
		t.Errorf("deploy/common -> %q, %v", target, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "deploy/common/service.yaml")); err != nil {
		t.Errorf("reading through the link: %v", err)
	}

	mem, err := snap.CheckoutMemory()
	if err != nil {
		t.Fatal(err)
	}
	f, err := mem.Open("charts/app/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestSnapshot_CheckoutRefusesLinksOutOfTheRepository(t *testing.T) {
	for _, target := range []string{"/var/run/secrets/kubernetes.io/serviceaccount/token", "../../../etc/passwd"} {
		srv := gittest.NewServer(t)
		repo := srv.NewRepository(t, "evil")
		if err := repo.Symlink("charts/app/values.yaml", target); err != nil {
			t.Fatal(err)
		}
		sha := must(t)(repo.Commit("a link out", nil))
		snap, err := fetch(t, gitsource.Options{URL: repo.URL, Commit: sha})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := snap.CheckoutDir(dir); !errors.Is(err, gitsource.ErrUnsafeSymlink) {
			t.Errorf("link to %s: got %v, want ErrUnsafeSymlink", target, err)
		}
		if _, err := snap.CheckoutMemory(); !errors.Is(err, gitsource.ErrUnsafeSymlink) {
			t.Errorf("link to %s in memory: got %v, want ErrUnsafeSymlink", target, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("a refused checkout wrote %d entries", len(entries))
		}
	}
}

func TestFetch_SizeBounds(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.NewRepository(t, "big")
	blob := make([]byte, 256<<10)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(blob) // incompressible
	sha := must(t)(repo.Commit("a big file", gittest.Files{"big.bin": blob, "small.txt": []byte("hi\n")}))

	_, err := fetch(t, gitsource.Options{URL: repo.URL, Branch: "main", MaxFetchBytes: 64 << 10})
	if !errors.Is(err, gitsource.ErrTooLarge) {
		t.Errorf("fetch bound: got %v, want ErrTooLarge", err)
	}

	snap, err := fetch(t, gitsource.Options{URL: repo.URL, Commit: sha, MaxCheckoutBytes: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.CheckoutDir(t.TempDir()); !errors.Is(err, gitsource.ErrTooLarge) {
		t.Errorf("checkout bound: got %v, want ErrTooLarge", err)
	}
	if _, err := snap.ReadFile("big.bin"); !errors.Is(err, gitsource.ErrTooLarge) {
		t.Errorf("ReadFile bound: got %v, want ErrTooLarge", err)
	}
	if got, err := snap.ReadFile("small.txt"); err != nil || string(got) != "hi\n" {
		t.Errorf("small.txt: %q, %v", got, err)
	}
}

func TestFetch_TimeBound(t *testing.T) {
	// A server that accepts the connection and never answers.
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer stuck.Close()
	start := time.Now()
	_, err := gitsource.Fetch(context.Background(), gitsource.Options{URL: stuck.URL + "/app.git", Branch: "main", Timeout: 300 * time.Millisecond})
	if !errors.Is(err, gitsource.ErrTimeout) {
		t.Errorf("got %v, want ErrTimeout", err)
	}
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("the bound did not stop the fetch: %s", elapsed)
	}
	_, err = gitsource.ResolveBranch(context.Background(), gitsource.Options{URL: stuck.URL + "/app.git", Branch: "main", Timeout: 300 * time.Millisecond})
	if !errors.Is(err, gitsource.ErrTimeout) {
		t.Errorf("ResolveBranch: got %v, want ErrTimeout", err)
	}
}

func TestOptions_Validation(t *testing.T) {
	for _, tc := range []struct {
		o    gitsource.Options
		want error
	}{
		{gitsource.Options{URL: "file:///etc", Branch: "main"}, gitsource.ErrInvalidURL},
		{gitsource.Options{URL: "/srv/git/app", Branch: "main"}, gitsource.ErrInvalidURL},
		{gitsource.Options{URL: "ssh://git@example.dev/app", Branch: "main"}, gitsource.ErrInvalidURL},
		{gitsource.Options{URL: "https://bot:pw@example.dev/app", Branch: "main"}, gitsource.ErrInvalidURL},
		{gitsource.Options{URL: "https://example.dev/app", Commit: "a1b2c3d"}, gitsource.ErrCommitNotFound},
		{gitsource.Options{URL: "https://example.dev/app"}, gitsource.ErrCommitNotFound},
		{gitsource.Options{URL: "https://example.dev/app", Branch: "a..b"}, gitsource.ErrBranchNotFound},
	} {
		_, err := gitsource.Fetch(context.Background(), tc.o)
		if !errors.Is(err, tc.want) {
			t.Errorf("Fetch(%+v): got %v, want %v", tc.o, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), ":pw@") {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

func TestCredentialsFromSecretData(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want *gitsource.Credentials
		err  error
	}{
		{"basic", map[string][]byte{"username": []byte("bot"), "password": []byte("pw")}, &gitsource.Credentials{Username: "bot", Password: "pw"}, nil},
		{"token", map[string][]byte{"token": []byte("ghp_x")}, &gitsource.Credentials{Username: "x-access-token", Password: "ghp_x"}, nil},
		{"token with username", map[string][]byte{"token": []byte("glpat"), "username": []byte("oauth2")}, &gitsource.Credentials{Username: "oauth2", Password: "glpat"}, nil},
		{"bearer", map[string][]byte{"bearerToken": []byte("t")}, &gitsource.Credentials{BearerToken: "t"}, nil},
		{"username alone", map[string][]byte{"username": []byte("bot")}, nil, gitsource.ErrInvalidCredentials},
		{"nothing known", map[string][]byte{".dockerconfigjson": []byte("{}")}, nil, gitsource.ErrInvalidCredentials},
	} {
		got, err := gitsource.CredentialsFromSecretData(tc.data)
		if !errors.Is(err, tc.err) || (tc.want != nil && (got == nil || *got != *tc.want)) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tc.name, got, err, tc.want, tc.err)
		}
		if got != nil && strings.Contains(got.String(), "pw") {
			t.Errorf("%s: String() shows the password: %s", tc.name, got)
		}
	}
}
