package devenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// sampleGitRepo is the repository the Catalyst samples deploy from: a Helm chart, plain manifests, a
// kustomization and a Dockerfile.
const sampleGitRepo = "org/app"

// startGitServer serves the sample repository over HTTP with git's own http-backend on addr,
// from a fresh directory under dir, and returns the server and the repository's head commit.
func startGitServer(dir, addr string) (*gittest.Server, string, error) {
	root := filepath.Join(dir, "git")
	if err := os.RemoveAll(root); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, "", err
	}
	srv, err := gittest.Start(root, gittest.WithAddr(addr))
	if err != nil {
		return nil, "", fmt.Errorf("git server: %w (%s or --git-addr moves it)", err, EnvGitAddr)
	}
	repo, err := srv.CreateRepository(sampleGitRepo)
	if err != nil {
		return nil, "", errJoinClose(err, srv)
	}
	head, err := repo.Commit("Sample application", gittest.Merge(
		gittest.HelmChart("charts/app", "app"),
		gittest.Manifests("deploy"),
		gittest.Kustomization("kustomize"),
		gittest.Dockerfile("Dockerfile"),
	))
	if err != nil {
		return nil, "", errJoinClose(err, srv)
	}
	return srv, head, nil
}

func errJoinClose(err error, srv *gittest.Server) error {
	if cerr := srv.Close(); cerr != nil {
		return fmt.Errorf("%w (closing the git server: %w)", err, cerr)
	}
	return err
}

// Addresses the samples in config/samples are written for.
const (
	DefaultRegistryAddr = "127.0.0.1:5001"
	DefaultGitAddr      = "127.0.0.1:5002"
)

// pinSamples points the samples at this environment: the registry and git server addresses when
// they are not the defaults, and the sample Environments' commit at the served repository's head.
func pinSamples(objs []*unstructured.Unstructured, registryAddr, gitAddr, head string) error {
	addrs := strings.NewReplacer(DefaultRegistryAddr, registryAddr, DefaultGitAddr, gitAddr)
	for _, u := range objs {
		u.Object = replaceStrings(u.Object, addrs).(map[string]any)
	}
	for _, u := range objs {
		if u.GetKind() != "Environment" || u.GroupVersionKind().Group != "catalyst.catalyst.dev" {
			continue
		}
		if err := unstructured.SetNestedField(u.Object, head, "spec", "source", "commitSha"); err != nil {
			return fmt.Errorf("sample Environment %s: %w", u.GetName(), err)
		}
	}
	return nil
}

func replaceStrings(v any, r *strings.Replacer) any {
	switch t := v.(type) {
	case string:
		return r.Replace(t)
	case map[string]any:
		for k, e := range t {
			t[k] = replaceStrings(e, r)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = replaceStrings(e, r)
		}
		return t
	default:
		return v
	}
}
