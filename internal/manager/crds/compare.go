package crds

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/crdify/pkg/config"
	"sigs.k8s.io/crdify/pkg/runner"
	"sigs.k8s.io/crdify/pkg/validations"
	"sigs.k8s.io/crdify/pkg/validations/crd/existingfieldremoval"
	"sigs.k8s.io/crdify/pkg/validations/crd/scope"
	"sigs.k8s.io/crdify/pkg/validations/crd/storedversionremoval"
	"sigs.k8s.io/crdify/pkg/validations/property"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
)

// Change kinds. The ...Tightened kinds and the removals break existing objects or clients; the
// additions do not.
const (
	KindFieldRemoved         = "fieldRemoved"
	KindRequiredFieldAdded   = "requiredFieldAdded"
	KindTypeChanged          = "typeChanged"
	KindEnumTightened        = "enumTightened"
	KindPatternChanged       = "patternChanged"
	KindDefaultChanged       = "defaultChanged"
	KindStoredVersionRemoved = "storedVersionRemoved"
	KindServedVersionRemoved = "servedVersionRemoved"
	KindScopeChanged         = "scopeChanged"
	// KindOtherChange is a schema change no specific check covers (x-kubernetes-validations,
	// format, nullable, ...): counted as breaking, since it cannot be proven safe.
	KindOtherChange = "otherChange"

	KindFieldAdded         = "fieldAdded"
	KindVersionAdded       = "versionAdded"
	KindEnumValuesAdded    = "enumValuesAdded"
	KindEnumConstraintDrop = "enumConstraintRemoved"
)

// Change is one difference between an old and a new definition of a CRD.
type Change struct {
	// Path is the property's path in the version's schema ("spec.color", "spec.items[*].name");
	// empty for a change to the whole CRD (scope, versions).
	Path string `json:"path"`
	// Kind is one of the Kind* constants, or "<check>Tightened" for a bound check such as
	// maximumTightened, minimumTightened, maxLengthTightened, minItemsTightened.
	Kind string `json:"kind"`
	// Version is the CRD API version the change is in ("v1"), or "v1alpha1 -> v1" for a change
	// between two served versions of the new definition; empty for a whole-CRD change.
	Version  string `json:"version,omitempty"`
	Breaking bool   `json:"breaking"`
	Message  string `json:"message"`
}

// Report lists the changes from one definition of a CRD to another, sorted by version, path
// and kind.
type Report struct {
	CRD     string   `json:"crd"`
	Changes []Change `json:"changes"`
}

// Breaking reports whether any change breaks.
func (r *Report) Breaking() bool {
	for _, c := range r.Changes {
		if c.Breaking {
			return true
		}
	}
	return false
}

// BreakingChanges returns the changes that break.
func (r *Report) BreakingChanges() []Change {
	var out []Change
	for _, c := range r.Changes {
		if c.Breaking {
			out = append(out, c)
		}
	}
	return out
}

// crdifyRunner is built once: crdify's default checks plus pattern, with enum additions allowed
// (a new value does not invalidate an object), description changes ignored, unhandled changes
// as errors, and served-version checks skipped when a conversion webhook translates versions.
var crdifyRunner = sync.OnceValues(func() (*runner.Runner, error) {
	reg := validations.NewRegistry()
	existingfieldremoval.Register(reg)
	scope.Register(reg)
	storedversionremoval.Register(reg)
	property.RegisterDefault(reg)
	property.RegisterEnum(reg)
	property.RegisterMaximum(reg)
	property.RegisterMaxItems(reg)
	property.RegisterMaxLength(reg)
	property.RegisterMaxProperties(reg)
	property.RegisterMinimum(reg)
	property.RegisterMinItems(reg)
	property.RegisterMinLength(reg)
	property.RegisterMinProperties(reg)
	property.RegisterRequired(reg)
	property.RegisterType(reg)
	property.RegisterDescription(reg)
	reg.Register(patternValidationName, func(map[string]any) (validations.Validation, error) { return &pattern{}, nil })
	cfg := &config.Config{
		Validations: []config.ValidationConfig{
			{Name: "enum", Enforcement: config.EnforcementPolicyError, Configuration: map[string]any{"additionPolicy": string(property.AdditionPolicyAllow)}},
			{Name: "description", Enforcement: config.EnforcementPolicyNone},
		},
		UnhandledEnforcement: config.EnforcementPolicyError,
		Conversion:           config.ConversionPolicyIgnore,
	}
	if err := config.ValidateConfig(cfg); err != nil {
		return nil, err
	}
	return runner.New(cfg, reg)
})

// Compare lists the changes from oldCRD to newCRD, two definitions of the same CRD. When oldCRD has no
// status.storedVersions (a definition from a chart, not from a cluster), its storage version
// counts as stored. Definitions of different CRDs, or without a schema, are *invalid.Error for
// field "definition".
func Compare(oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition) (*Report, error) {
	if err := checkPair(oldCRD, newCRD); err != nil {
		return nil, err
	}
	r, err := crdifyRunner()
	if err != nil {
		return nil, fmt.Errorf("crds: building the crdify runner: %w", err)
	}
	oldCRD = withStoredVersions(oldCRD)
	newCRD = newCRD.DeepCopy()
	res := r.Run(oldCRD, newCRD)

	c := &comparison{old: oldCRD, new: newCRD, oldFlat: flatten(oldCRD), newFlat: flatten(newCRD)}
	for _, cr := range res.CRDValidation {
		c.crdResult(cr)
	}
	for version, byPath := range res.SameVersionValidation {
		for path, results := range byPath {
			c.propertyResults(version, version, path, results)
		}
	}
	for pair, byPath := range res.ServedVersionValidation {
		from, to, _ := strings.Cut(pair, " -> ")
		for path, results := range byPath {
			c.propertyResults(pair, from+"\x00"+to, path, results)
		}
	}
	c.additions()
	c.servedVersionRemovals()
	sort.SliceStable(c.changes, func(i, j int) bool {
		a, b := c.changes[i], c.changes[j]
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Kind < b.Kind
	})
	return &Report{CRD: newCRD.Name, Changes: c.changes}, nil
}

func checkPair(oldCRD, newCRD *apiextensionsv1.CustomResourceDefinition) error {
	if oldCRD == nil || newCRD == nil {
		return invalid.Field("definition", "a CRD definition is missing")
	}
	if oldCRD.Name != newCRD.Name {
		return invalid.Field("definition", "definitions of different CRDs: %q and %q", oldCRD.Name, newCRD.Name)
	}
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{oldCRD, newCRD} {
		if len(crd.Spec.Versions) == 0 {
			return invalid.Field("definition", "CRD %s has no versions", crd.Name)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				return invalid.Field("definition", "CRD %s version %s has no openAPIV3Schema", crd.Name, v.Name)
			}
		}
	}
	return nil
}

// withStoredVersions returns a copy of crd whose status.storedVersions holds at least its
// storage version.
func withStoredVersions(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	if len(out.Status.StoredVersions) == 0 {
		for _, v := range out.Spec.Versions {
			if v.Storage {
				out.Status.StoredVersions = append(out.Status.StoredVersions, v.Name)
			}
		}
	}
	return out
}

// flatten maps version name → property path (crdify's, "^.spec.x") → schema.
func flatten(crd *apiextensionsv1.CustomResourceDefinition) map[string]map[string]*apiextensionsv1.JSONSchemaProps {
	out := map[string]map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, v := range crd.Spec.Versions {
		out[v.Name] = validations.FlattenCRDVersion(v)
	}
	return out
}

type comparison struct {
	old, new         *apiextensionsv1.CustomResourceDefinition
	oldFlat, newFlat map[string]map[string]*apiextensionsv1.JSONSchemaProps
	changes          []Change
}

func (c *comparison) add(ch Change) { c.changes = append(c.changes, ch) }

// displayPath turns crdify's "^.spec.x" into "spec.x".
func displayPath(p string) string {
	return strings.TrimPrefix(strings.TrimPrefix(p, "^"), ".")
}

func (c *comparison) crdResult(cr validations.ComparisonResult) {
	for _, msg := range cr.Errors {
		c.crdMessage(cr.Name, msg, true)
	}
	for _, msg := range cr.Warnings {
		c.crdMessage(cr.Name, msg, false)
	}
}

func (c *comparison) crdMessage(check, msg string, breaking bool) {
	switch check {
	case "existingFieldRemoval":
		// "removed field : <version>.^.spec.x"
		_, where, _ := strings.Cut(msg, " : ")
		version, path, _ := strings.Cut(where, ".")
		c.add(Change{Path: displayPath(path), Kind: KindFieldRemoved, Version: version, Breaking: breaking,
			Message: fmt.Sprintf("field %s was removed from version %s: existing values are pruned", displayPath(path), version)})
	case "scope":
		c.add(Change{Kind: KindScopeChanged, Breaking: breaking, Message: fmt.Sprintf("scope changed from %s to %s", c.old.Spec.Scope, c.new.Spec.Scope)})
	case "storedVersionRemoval":
		c.add(Change{Kind: KindStoredVersionRemoved, Breaking: breaking, Message: "a version objects are stored in was removed: " + afterColon(msg)})
	default:
		c.add(Change{Kind: check, Breaking: breaking, Message: msg})
	}
}

func afterColon(msg string) string {
	if _, rest, ok := strings.Cut(msg, " : "); ok {
		return rest
	}
	return msg
}

// propertyResults turns crdify's results for one property into changes. sides is the version
// of both sides for a same-version comparison, or "from\x00to" for served versions.
func (c *comparison) propertyResults(label, sides, path string, results []validations.ComparisonResult) {
	fromVersion, toVersion, pair := sides, sides, false
	if f, t, ok := strings.Cut(sides, "\x00"); ok {
		fromVersion, toVersion, pair = f, t, true
	}
	var oldProp, newProp *apiextensionsv1.JSONSchemaProps
	if pair {
		oldProp, newProp = c.newFlat[fromVersion][path], c.newFlat[toVersion][path]
	} else {
		oldProp, newProp = c.oldFlat[fromVersion][path], c.newFlat[toVersion][path]
	}
	shown := displayPath(path)
	if newProp == nil {
		// Removed: one change, not a type/enum/... change per constraint of the old property.
		// A same-version removal is reported by crdify's existingFieldRemoval.
		if pair && hasFindings(results) {
			c.add(Change{Path: shown, Kind: KindFieldRemoved, Version: label, Breaking: true,
				Message: fmt.Sprintf("field %s of %s is not in %s", shown, fromVersion, toVersion)})
		}
		return
	}
	for _, r := range results {
		for _, msg := range r.Errors {
			c.propertyChange(label, shown, r.Name, msg, true, oldProp, newProp)
		}
		for _, msg := range r.Warnings {
			c.propertyChange(label, shown, r.Name, msg, false, oldProp, newProp)
		}
	}
	if !pair && oldProp != nil {
		c.enumAdditions(label, shown, oldProp, newProp)
	}
}

func hasFindings(results []validations.ComparisonResult) bool {
	for _, r := range results {
		if len(r.Errors)+len(r.Warnings) > 0 {
			return true
		}
	}
	return false
}

func (c *comparison) propertyChange(version, path, check, msg string, breaking bool, oldProp, newProp *apiextensionsv1.JSONSchemaProps) {
	ch := Change{Path: path, Version: version, Breaking: breaking, Message: fmt.Sprintf("%s: %s", orRoot(path), msg)}
	switch check {
	case "required":
		added := sets.New(newProp.Required...)
		if oldProp != nil {
			added = added.Difference(sets.New(oldProp.Required...))
		}
		for _, f := range sets.List(added) {
			full := joinPath(path, f)
			c.add(Change{Path: full, Kind: KindRequiredFieldAdded, Version: version, Breaking: breaking,
				Message: fmt.Sprintf("field %s is now required: objects without it are refused", full)})
		}
		return
	case "type":
		ch.Kind = KindTypeChanged
	case "enum":
		if oldProp != nil && len(oldProp.Enum) > 0 && len(newProp.Enum) == 0 {
			ch.Kind, ch.Breaking = KindEnumConstraintDrop, false
			ch.Message = fmt.Sprintf("%s: the enum constraint was removed", orRoot(path))
		} else {
			ch.Kind = KindEnumTightened
		}
	case "pattern":
		ch.Kind = KindPatternChanged
	case "default":
		ch.Kind = KindDefaultChanged
	case "description":
		ch.Kind = "descriptionChanged"
	case "unhandled":
		ch.Kind = KindOtherChange
		ch.Message = fmt.Sprintf("%s: a schema change no specific check covers (such as x-kubernetes-validations, format or nullable)", orRoot(path))
	default:
		// maximum, minimum, maxLength, minLength, maxItems, minItems, maxProperties, minProperties
		ch.Kind = check + "Tightened"
	}
	c.add(ch)
}

// enumAdditions reports new enum values, which crdify is configured to accept silently.
func (c *comparison) enumAdditions(version, path string, oldProp, newProp *apiextensionsv1.JSONSchemaProps) {
	if len(oldProp.Enum) == 0 || len(newProp.Enum) == 0 {
		return
	}
	old := sets.New[string]()
	for _, e := range oldProp.Enum {
		old.Insert(string(e.Raw))
	}
	var added []string
	for _, e := range newProp.Enum {
		if !old.Has(string(e.Raw)) {
			added = append(added, string(e.Raw))
		}
	}
	if len(added) > 0 {
		c.add(Change{Path: path, Kind: KindEnumValuesAdded, Version: version,
			Message: fmt.Sprintf("%s: enum values added: %s", orRoot(path), strings.Join(added, ", "))})
	}
}

// additions reports fields and versions the new definition adds (the topmost added path only).
func (c *comparison) additions() {
	for _, v := range c.new.Spec.Versions {
		oldFlat, ok := c.oldFlat[v.Name]
		if !ok {
			c.add(Change{Kind: KindVersionAdded, Version: v.Name, Message: fmt.Sprintf("version %s was added", v.Name)})
			continue
		}
		var added []string
		for p := range c.newFlat[v.Name] {
			if _, ok := oldFlat[p]; !ok {
				added = append(added, p)
			}
		}
		slices.Sort(added)
		for _, p := range added {
			if parent := parentPath(p); parent != "" && slices.Contains(added, parent) {
				continue
			}
			c.add(Change{Path: displayPath(p), Kind: KindFieldAdded, Version: v.Name,
				Message: fmt.Sprintf("field %s was added", displayPath(p))})
		}
	}
}

// servedVersionRemovals reports versions that were served and no longer are, unless crdify
// already reported them as removed stored versions.
func (c *comparison) servedVersionRemovals() {
	stored := sets.New(c.old.Status.StoredVersions...)
	for _, ov := range c.old.Spec.Versions {
		if !ov.Served || stored.Has(ov.Name) {
			continue
		}
		still := false
		for _, nv := range c.new.Spec.Versions {
			if nv.Name == ov.Name && nv.Served {
				still = true
			}
		}
		if !still {
			c.add(Change{Kind: KindServedVersionRemoved, Version: ov.Name, Breaking: true,
				Message: fmt.Sprintf("version %s is no longer served: clients using it fail", ov.Name)})
		}
	}
}

// parentPath is the crdify path of p's parent ("^.spec" for "^.spec.x", "^.spec.list" for
// "^.spec.list[*]"), or "" at the root.
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndex(p, "["); i > 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndex(p, "."); i > 0 {
		return p[:i]
	}
	return ""
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}
