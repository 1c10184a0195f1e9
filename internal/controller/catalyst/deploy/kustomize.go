package deploy

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kustomizationFiles are the names kustomize looks for in a directory, in its order.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// renderKustomization builds the kustomization in dir with kustomize's API, in a renderer
// process (render.go) within the same limits as a chart's templates: the operator holds no lock
// and reads nothing for it. The renderer gets the repository's files (without .git), walks every
// kustomization the build would load and refuses any field that names a URL, a remote repository
// or a path outside the repository (kustomize_check.go), then builds on an in-memory copy with
// load restrictions to the kustomization's root, builtin plugins only, no Helm inflation, no exec
// or container functions; and it can open no connection nor start a program.
func (e *Engine) renderKustomization(ctx context.Context, root *os.Root, dir string, b *budget) ([]manifest, error) {
	fsys := root.FS()
	if st, err := fs.Stat(fsys, dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: %q does not exist in the repository or is not a directory", ErrPathNotFound, dir)
	}
	found := false
	for _, n := range kustomizationFiles {
		if st, err := fs.Stat(fsys, path.Join(dir, n)); err == nil && !st.IsDir() {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: no %s in %q", ErrPathNotFound, strings.Join(kustomizationFiles, ", "), dir)
	}
	files, err := readTree(root, ".", b, func(rel string, info fs.FileInfo) bool {
		return !info.IsDir() || path.Base(rel) != ".git"
	})
	if err != nil {
		return nil, wrapAs(ErrKustomizeBuild, err)
	}
	req := renderRequest{Kind: renderKustomize, Dir: dir}
	for _, f := range files {
		req.Files = append(req.Files, renderFile{Name: f.Name, Data: f.Data})
	}
	resp, err := e.render(ctx, req, nil)
	if err != nil {
		return nil, wrapAs(ErrKustomizeBuild, err)
	}
	ms, err := parseManifests("kustomize build "+dir, []byte(resp.Output))
	if err != nil {
		return nil, wrapAs(ErrKustomizeBuild, err)
	}
	return ms, nil
}

// buildKustomization is the renderer's part of renderKustomization. It lets go of req.Files once
// they are copied, so that a large repository is held once, not twice, under the memory limit.
func buildKustomization(req *renderRequest) (string, error) {
	fsys := filesys.MakeFsInMemory()
	files := req.Files
	req.Files = nil
	for i, f := range files {
		files[i].Data = nil
		name := "/" + f.Name
		if err := fsys.MkdirAll(path.Dir(name)); err != nil {
			return "", fmt.Errorf("copying %s: %w", f.Name, err)
		}
		if err := fsys.WriteFile(name, f.Data); err != nil {
			return "", fmt.Errorf("copying %s: %w", f.Name, err)
		}
	}
	top := path.Clean("/" + req.Dir)
	if err := newKustomizeCheck(fsys).dir(top, ""); err != nil {
		return "", err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(fsys, top)
	if err != nil {
		return "", fmt.Errorf("%s: %w", req.Dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return "", fmt.Errorf("%s: %w", req.Dir, err)
	}
	return string(out), nil
}

func findKustomization(fsys filesys.FileSystem, dir string) string {
	for _, n := range kustomizationFiles {
		if p := path.Join(dir, n); fsys.Exists(p) && !fsys.IsDir(p) {
			return p
		}
	}
	return ""
}

// scpLike is an scp-like git URL, user@host:path or user@host/path (git@github.com:org/repo).
var scpLike = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@[^/:]+[:/].`)

// isRemote reports what kustomize takes for a remote reference, and more: anything with a URL
// scheme (after an optional go-getter "git::" prefix), a github.com/ or github.com: path, or an
// scp-like user@host:path. Kustomize tries a directory reference as a git repository before it
// looks on disk, so these are refused even where a directory of that name exists.
func isRemote(ref string) bool {
	r := strings.TrimSpace(ref)
	lower := strings.TrimPrefix(strings.ToLower(r), "git::")
	if strings.Contains(lower, "://") || hasScheme(lower) {
		return true
	}
	return strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:") ||
		scpLike.MatchString(strings.TrimPrefix(r, "git::"))
}

// scheme is a URL scheme at the start of a reference (https:, file:, ssh:...), as url.Parse
// would take it.
var scheme = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)

func hasScheme(ref string) bool { return scheme.MatchString(ref) }
