package deploy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// A kustomization from a pull request may name, in many fields, a URL kustomize would fetch, a
// repository it would clone or a file outside the repository. kustomizeCheck walks every
// kustomization the build would load, as kustomize's own types (types.Kustomization, and the
// builtin plugins' configuration types for generators, transformers and validators, inline or
// in files and directories), and refuses each such reference with the file and the field. It is
// the clear message; the renderer's sandbox is what makes a reference it could miss (a plugin
// configuration that a patch computes, say) fail all the same.
type kustomizeCheck struct {
	fsys filesys.FileSystem
	rf   *resmap.Factory
	seen map[string]bool
}

func newKustomizeCheck(fsys filesys.FileSystem) *kustomizeCheck {
	return &kustomizeCheck{fsys: fsys, rf: resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory()),
		seen: map[string]bool{}}
}

// errNotLocal is what a refused reference wraps.
var errNotLocal = errors.New("a render reads the repository only: no URL, remote repository or path outside it (vendor what it needs into the repository)")

// dir checks the kustomization in dir and every local one it uses. pluginBase, when not "",
// says that the resources of dir are plugin configurations, whose paths are relative to the
// kustomization pluginBase that lists them.
func (c *kustomizeCheck) dir(dir, pluginBase string) error {
	if c.seen[dir+"\x00"+pluginBase] {
		return nil
	}
	c.seen[dir+"\x00"+pluginBase] = true
	file := findKustomization(c.fsys, dir)
	if file == "" {
		return nil // not a kustomization: kustomize says so
	}
	data, err := c.fsys.ReadFile(file)
	if err != nil {
		return err
	}
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		return fmt.Errorf("%s: %w", strings.TrimPrefix(file, "/"), err)
	}
	at := kustomizationAt{check: c, file: strings.TrimPrefix(file, "/"), dir: dir}
	for i, r := range k.Bases { //nolint:staticcheck // named as written, before FixKustomization moves them
		if err := at.base(fmt.Sprintf("bases[%d]", i), r, pluginBase); err != nil {
			return err
		}
	}
	k.FixKustomization()
	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil || len(k.HelmChartInflationGenerator) > 0 { //nolint:staticcheck // refused in every form
		return fmt.Errorf("%s: helmCharts: kustomize does not inflate Helm charts here (it would fetch them; use the deployment type helm): %w", at.file, errNotLocal)
	}
	for _, f := range []struct {
		name    string
		entries []string
	}{{"resources", k.Resources}, {"components", k.Components}} {
		for i, r := range f.entries {
			if err := at.base(fmt.Sprintf("%s[%d]", f.name, i), r, pluginBase); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct {
		name    string
		entries []string
	}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
		for i, r := range f.entries {
			if err := at.plugin(fmt.Sprintf("%s[%d]", f.name, i), r); err != nil {
				return err
			}
		}
	}
	return at.files(&k)
}

// kustomizationAt checks the fields of the kustomization file in dir.
type kustomizationAt struct {
	check     *kustomizeCheck
	file, dir string
}

// ref refuses a reference of field that is not a path inside the repository, and returns the
// path it names.
func (a kustomizationAt) ref(field, ref string) (string, error) {
	return refIn(a.file, a.dir, field, ref)
}

func refIn(file, dir, field, ref string) (string, error) {
	switch {
	case isRemote(ref):
		return "", fmt.Errorf("%s: %s names %q, a URL or a remote repository: %w", file, field, ref, errNotLocal)
	case path.IsAbs(ref):
		return "", fmt.Errorf("%s: %s names %q, an absolute path: %w", file, field, ref, errNotLocal)
	}
	rel := path.Join(strings.TrimPrefix(dir, "/"), ref)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s: %s names %q, outside the repository: %w", file, field, ref, errNotLocal)
	}
	return "/" + rel, nil
}

// base checks a resource or component: a file (a plugin configuration when pluginBase is set)
// or a directory whose kustomization is walked in turn.
func (a kustomizationAt) base(field, ref, pluginBase string) error {
	p, err := a.ref(field, ref)
	if err != nil {
		return err
	}
	switch {
	case a.check.fsys.IsDir(p):
		return a.check.dir(p, pluginBase)
	case pluginBase != "" && a.check.fsys.Exists(p):
		return a.check.pluginFile(p, pluginBase)
	}
	return nil
}

// plugin checks an entry of generators, transformers or validators: inline configurations (as
// kustomize tells them: the entry parses as objects), a file of configurations, or a directory
// whose kustomization's resources are configurations.
func (a kustomizationAt) plugin(field, entry string) error {
	if rm, err := a.check.rf.NewResMapFromBytes([]byte(entry)); err == nil {
		return a.check.pluginConfigs(rm, a.file+": "+field+" (inline)", a.dir)
	}
	p, err := a.ref(field, entry)
	if err != nil {
		return err
	}
	if a.check.fsys.IsDir(p) {
		return a.check.dir(p, a.dir)
	}
	if a.check.fsys.Exists(p) {
		return a.check.pluginFile(p, a.dir)
	}
	return nil
}

// files checks the fields that name files: kustomize loads them with the same loader, which
// fetches a URL.
func (a kustomizationAt) files(k *types.Kustomization) error {
	var refs [][2]string // field, reference
	one := func(field, ref string) {
		if ref != "" {
			refs = append(refs, [2]string{field, ref})
		}
	}
	add := func(field string, entries ...string) {
		for i, e := range entries {
			one(fmt.Sprintf("%s[%d]", field, i), e)
		}
	}
	add("crds", k.Crds...)
	add("configurations", k.Configurations...)
	for i, p := range k.PatchesStrategicMerge { //nolint:staticcheck // still read by kustomize
		if !strings.Contains(string(p), "\n") { // an inline patch otherwise, which is never fetched
			one(fmt.Sprintf("patchesStrategicMerge[%d]", i), string(p))
		}
	}
	for i, p := range k.Patches {
		one(fmt.Sprintf("patches[%d].path", i), p.Path)
	}
	for i, p := range k.PatchesJson6902 { //nolint:staticcheck // still read by kustomize
		one(fmt.Sprintf("patchesJson6902[%d].path", i), p.Path)
	}
	for i, r := range k.Replacements {
		one(fmt.Sprintf("replacements[%d].path", i), r.Path)
	}
	if p, ok := k.OpenAPI["path"]; ok {
		one("openapi.path", p)
	}
	for i, g := range k.ConfigMapGenerator {
		refs = append(refs, kvSources(fmt.Sprintf("configMapGenerator[%d]", i), g.KvPairSources)...)
	}
	for i, g := range k.SecretGenerator {
		refs = append(refs, kvSources(fmt.Sprintf("secretGenerator[%d]", i), g.KvPairSources)...)
	}
	for _, r := range refs {
		if _, err := a.ref(r[0], r[1]); err != nil {
			return err
		}
	}
	return nil
}

// kvSources are the files a generator reads (files:, envs:, env:), by field.
func kvSources(field string, s types.KvPairSources) [][2]string {
	var refs [][2]string
	for i, f := range s.FileSources {
		if _, file, ok := strings.Cut(f, "="); ok {
			f = file
		}
		refs = append(refs, [2]string{fmt.Sprintf("%s.files[%d]", field, i), f})
	}
	for i, f := range s.EnvSources {
		refs = append(refs, [2]string{fmt.Sprintf("%s.envs[%d]", field, i), f})
	}
	if s.EnvSource != "" { //nolint:staticcheck // still read by kustomize
		refs = append(refs, [2]string{field + ".env", s.EnvSource})
	}
	return refs
}

// pluginFile checks the plugin configurations in file p, listed by the kustomization in base.
func (c *kustomizeCheck) pluginFile(p, base string) error {
	data, err := c.fsys.ReadFile(p)
	if err != nil {
		return err
	}
	rm, err := c.rf.NewResMapFromBytes(data)
	if err != nil {
		return nil // kustomize reports it
	}
	return c.pluginConfigs(rm, strings.TrimPrefix(p, "/"), base)
}

// pluginConfigs checks the paths of builtin plugin configurations (the only plugins enabled),
// relative to base. where names the file (and field) they come from.
func (c *kustomizeCheck) pluginConfigs(rm resmap.ResMap, where, base string) error {
	for _, r := range rm.Resources() {
		kind := r.GetKind()
		data, err := r.AsYAML()
		if err != nil {
			return fmt.Errorf("%s: %s: %w", where, kind, err)
		}
		refs, err := pluginRefs(kind, data)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", where, kind, r.GetName(), err)
		}
		for _, ref := range refs {
			field := fmt.Sprintf("%s %s: %s", kind, r.GetName(), ref[0])
			if _, err := refIn(where, base, field, ref[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// pluginRefs are the file references of a builtin plugin's configuration, by field.
func pluginRefs(kind string, data []byte) ([][2]string, error) {
	var refs [][2]string
	switch kind {
	case "HelmChartInflationGenerator":
		return nil, fmt.Errorf("kustomize does not inflate Helm charts here (it would fetch them; use the deployment type helm): %w", errNotLocal)
	case "ConfigMapGenerator":
		var c builtins.ConfigMapGeneratorPlugin
		if err := yaml.Unmarshal(data, &c); err != nil {
			return nil, err
		}
		refs = kvSources("", c.KvPairSources)
	case "SecretGenerator":
		var c builtins.SecretGeneratorPlugin
		if err := yaml.Unmarshal(data, &c); err != nil {
			return nil, err
		}
		refs = kvSources("", c.KvPairSources)
	case "PatchTransformer":
		var c builtins.PatchTransformerPlugin
		if err := yaml.Unmarshal(data, &c); err != nil {
			return nil, err
		}
		refs = append(refs, [2]string{"path", c.Path})
	case "PatchJson6902Transformer":
		var c builtins.PatchJson6902TransformerPlugin
		if err := yaml.Unmarshal(data, &c); err != nil {
			return nil, err
		}
		refs = append(refs, [2]string{"path", c.Path})
	case "PatchStrategicMergeTransformer":
		var c builtins.PatchStrategicMergeTransformerPlugin
		if err := yaml.Unmarshal(data, &c); err != nil {
			return nil, err
		}
		for i, p := range c.Paths {
			if !strings.Contains(string(p), "\n") {
				refs = append(refs, [2]string{fmt.Sprintf("paths[%d]", i), string(p)})
			}
		}
	case "ReplacementTransformer":
		var c builtins.ReplacementTransformerPlugin
		if err := yaml.Unmarshal(data, &c); err != nil {
			return nil, err
		}
		for i, r := range c.ReplacementList {
			refs = append(refs, [2]string{fmt.Sprintf("replacements[%d].path", i), r.Path})
		}
	}
	out := refs[:0]
	for _, r := range refs {
		if r[1] != "" {
			r[0] = strings.TrimPrefix(r[0], ".")
			out = append(out, r)
		}
	}
	return out, nil
}
