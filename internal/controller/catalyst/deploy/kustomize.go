package deploy

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomizeMu serialises builds: kustomize keeps the OpenAPI schema a kustomization may choose
// (its openapi field) in a global of kyaml, so concurrent builds could use each other's.
var kustomizeMu sync.Mutex

// kustomizationFiles are the names kustomize looks for in a directory, in its order.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// renderKustomization builds the kustomization in dir with kustomize's API (as kustomize build
// would, with the default options: load restrictions to the kustomization's root for files,
// builtin plugins only, no Helm inflation, no exec or container functions). The build runs on an
// in-memory copy of the repository (without .git), so it cannot read anything else, and a remote
// base or an http URL anywhere in the kustomizations it uses is refused before the build starts.
func renderKustomization(root *os.Root, dir string, b *budget) ([]manifest, error) {
	files, err := readTree(root, ".", b, func(rel string, info fs.FileInfo) bool {
		return !info.IsDir() || path.Base(rel) != ".git"
	})
	if err != nil {
		return nil, wrapAs(ErrKustomizeBuild, err)
	}
	fsys := filesys.MakeFsInMemory()
	for _, f := range files {
		name := "/" + f.Name
		if err := fsys.MkdirAll(path.Dir(name)); err != nil {
			return nil, fmt.Errorf("%w: copying %s: %w", ErrKustomizeBuild, f.Name, err)
		}
		if err := fsys.WriteFile(name, f.Data); err != nil {
			return nil, fmt.Errorf("%w: copying %s: %w", ErrKustomizeBuild, f.Name, err)
		}
	}
	top := path.Clean("/" + dir)
	if !fsys.IsDir(top) {
		return nil, fmt.Errorf("%w: %q does not exist in the repository or is not a directory", ErrPathNotFound, dir)
	}
	if findKustomization(fsys, top) == "" {
		return nil, fmt.Errorf("%w: no %s in %q", ErrPathNotFound, strings.Join(kustomizationFiles, ", "), dir)
	}
	if err := checkLocal(fsys, top, map[string]bool{}); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	kustomizeMu.Lock()
	m, err := krusty.MakeKustomizer(opts).Run(fsys, top)
	kustomizeMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKustomizeBuild, dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKustomizeBuild, dir, err)
	}
	ms, err := parseManifests("kustomize build "+dir, out)
	if err != nil {
		return nil, wrapAs(ErrKustomizeBuild, err)
	}
	return ms, nil
}

func findKustomization(fsys filesys.FileSystem, dir string) string {
	for _, n := range kustomizationFiles {
		if p := path.Join(dir, n); fsys.Exists(p) && !fsys.IsDir(p) {
			return p
		}
	}
	return ""
}

// checkLocal refuses remote references in the kustomization in dir and, recursively, in the
// local kustomizations it uses as resources or components. Kustomize would clone a git URL with
// the git binary and fetch an http URL itself; a preview deploys the repository at its commit
// and nothing else.
func checkLocal(fsys filesys.FileSystem, dir string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	file := findKustomization(fsys, dir)
	if file == "" {
		return nil // a directory of plain resources, or an error kustomize reports
	}
	data, err := fsys.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrKustomizeBuild, file, err)
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrKustomizeBuild, strings.TrimPrefix(file, "/"), err)
	}
	k.FixKustomization()
	refs := referencedPaths(&k)
	for _, r := range refs {
		if isRemote(r) {
			return fmt.Errorf("%w: %s refers to %q outside the repository; remote bases and URLs are not allowed, vendor them into the repository",
				ErrKustomizeBuild, strings.TrimPrefix(file, "/"), r)
		}
	}
	for _, r := range append(append([]string{}, k.Resources...), k.Components...) {
		if p := path.Join(dir, r); fsys.IsDir(p) {
			if err := checkLocal(fsys, p, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// referencedPaths lists every field of a kustomization kustomize may load a file, a directory or
// a URL from.
func referencedPaths(k *types.Kustomization) []string {
	var refs []string
	refs = append(refs, k.Resources...)
	refs = append(refs, k.Components...)
	refs = append(refs, k.Crds...)
	refs = append(refs, k.Configurations...)
	refs = append(refs, k.Generators...)
	refs = append(refs, k.Transformers...)
	refs = append(refs, k.Validators...)
	// Users' kustomizations may still use the deprecated patch fields; their paths are checked too.
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // see above
		refs = append(refs, string(p))
	}
	for _, p := range append(append([]types.Patch{}, k.Patches...), k.PatchesJson6902...) { //nolint:staticcheck // see above
		refs = append(refs, p.Path)
	}
	for _, r := range k.Replacements {
		refs = append(refs, r.Path)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		refs = append(refs, p)
	}
	sources := func(s types.KvPairSources) {
		for _, f := range s.FileSources {
			if _, file, ok := strings.Cut(f, "="); ok {
				f = file
			}
			refs = append(refs, f)
		}
		refs = append(refs, s.EnvSources...)
	}
	for _, g := range k.ConfigMapGenerator {
		sources(g.KvPairSources)
	}
	for _, g := range k.SecretGenerator {
		sources(g.KvPairSources)
	}
	return refs
}

// scpLike is an scp-like git URL, user@host:path or user@host/path (git@github.com:org/repo).
var scpLike = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@[^/:]+[:/].`)

// isRemote mirrors what kustomize takes for a remote reference: a URL with a scheme (after an
// optional go-getter "git::" prefix), a github.com/ or github.com: path, or an scp-like
// user@host:path. Inline YAML (patches, plugin configurations) is not a reference.
func isRemote(ref string) bool {
	r := strings.TrimSpace(ref)
	if strings.Contains(r, "\n") {
		return false // an inline patch or plugin configuration
	}
	lower := strings.ToLower(r)
	lower = strings.TrimPrefix(lower, "git::")
	if strings.Contains(lower, "://") {
		return true
	}
	return strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:") ||
		scpLike.MatchString(strings.TrimPrefix(r, "git::"))
}
