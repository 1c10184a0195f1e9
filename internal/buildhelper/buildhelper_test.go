package buildhelper_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/slipway-dev/slipway/internal/buildhelper"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// secretDir writes files as a mounted Secret volume holds them.
func secretDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFetch_ChecksOutTheCommitWithItsCredentials: the real git server behind basic auth; the
// helper checks out the commit asked for (not the branch head) with the mounted credentials and
// leaves no .git behind; wrong or missing credentials fetch nothing.
func TestFetch_ChecksOutTheCommitWithItsCredentials(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("bot", "git-pass"))
	repo := srv.NewRepository(t, "org/app")
	first, err := repo.Commit("first", gittest.Files{"app/Dockerfile": []byte("FROM scratch\n"), "app/v": []byte("1")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("second", gittest.Files{"app/Dockerfile": []byte("FROM scratch\n"), "app/v": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		creds map[string]string
		ok    bool
	}{
		{"right", map[string]string{"username": "bot", "password": "git-pass"}, true},
		{"wrong", map[string]string{"username": "bot", "password": "nope"}, false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "src")
			err := buildhelper.Fetch(ctx, buildhelper.FetchOptions{URL: repo.URL, Branch: "main", Commit: first,
				CredentialsDir: secretDir(t, tc.creds), Dest: dest})
			if !tc.ok {
				if err == nil {
					t.Fatal("fetched without the right credentials")
				}
				if _, statErr := os.Stat(filepath.Join(dest, "app")); statErr == nil {
					t.Error("files checked out after a failed fetch")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v, err := os.ReadFile(filepath.Join(dest, "app/v")); err != nil || string(v) != "1" {
				t.Errorf("app/v = %q, %v: want the first commit's", v, err)
			}
			if _, err := os.Stat(filepath.Join(dest, ".git")); err == nil {
				t.Error("the checkout has a .git directory")
			}
		})
	}
}

// TestPush_PushesTheBuiltTarballWithItsCredentials: a tarball as Kaniko's --tar-path writes it
// (tagged with another name) is pushed to the destination of the real registry behind basic auth,
// with the docker config mounted; the registry then serves that digest. Wrong or no credentials
// push nothing. Through Main, the digest lands in the digest file.
func TestPush_PushesTheBuiltTarballWithItsCredentials(t *testing.T) {
	reg := registrytest.StartDistribution(t, registrytest.WithBasicAuth("pusher", "push-pass"))
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "image.tar")
	built, err := name.NewTag("built.invalid/whatever:latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(tarPath, built, img); err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	config := func(user, pass string) map[string]string {
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		return map[string]string{".dockerconfigjson": `{"auths":{"` + reg.Host + `":{"auth":"` + auth + `"}}}`}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		creds map[string]string
	}{{"wrong", config("pusher", "nope")}, {"none", nil}} {
		dest := reg.Repository("org/app") + ":" + tc.name
		if _, err := buildhelper.Push(ctx, buildhelper.PushOptions{Tarball: tarPath, Destination: dest,
			CredentialsDir: secretDir(t, tc.creds), Insecure: true}); err == nil {
			t.Errorf("%s credentials: pushed", tc.name)
		}
	}

	dest := reg.Repository("org/app") + ":abc123"
	digestFile := filepath.Join(t.TempDir(), "digest")
	var log bytes.Buffer
	code := buildhelper.Main(ctx, []string{"push", "--tarball=" + tarPath, "--destination=" + dest, "--insecure",
		"--credentials=" + secretDir(t, config("pusher", "push-pass")), "--digest-file=" + digestFile}, &log)
	if code != 0 {
		t.Fatalf("push exited %d: %s", code, log.String())
	}
	if got, _ := os.ReadFile(digestFile); string(got) != want.String() {
		t.Errorf("digest file %q, want %s", got, want)
	}
	ref, err := name.NewTag(dest, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref, remote.WithAuth(&authn.Basic{Username: "pusher", Password: "push-pass"}))
	if err != nil || desc.Digest != want {
		t.Fatalf("the registry serves %v (%v), want %s", desc, err, want)
	}
	if strings.Contains(log.String(), "push-pass") {
		t.Error("the log shows the password")
	}
}
