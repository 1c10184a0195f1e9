package crds

import (
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/crdify/pkg/config"
	"sigs.k8s.io/crdify/pkg/validations"
)

// patternValidationName is the crdify validation this package adds: crdify v0.5.0 leaves
// pattern changes to its "unhandled" catch-all.
const patternValidationName = "pattern"

var (
	errNetNewPattern = errors.New("pattern constraint added when there was none previously")
	errPatternChange = errors.New("pattern changed")
)

// pattern flags a pattern added where there was none, and a pattern changed (whether a regular
// expression accepts more than another is undecidable in general, so any change counts).
// Removing a pattern loosens the schema and passes.
type pattern struct{ enforcement config.EnforcementPolicy }

func (p *pattern) Name() string                                   { return patternValidationName }
func (p *pattern) SetEnforcement(policy config.EnforcementPolicy) { p.enforcement = policy }

func (p *pattern) Compare(a, b *apiextensionsv1.JSONSchemaProps) validations.ComparisonResult {
	var err error
	switch {
	case a.Pattern == "" && b.Pattern != "":
		err = fmt.Errorf("%w : %q", errNetNewPattern, b.Pattern)
	case a.Pattern != "" && b.Pattern != "" && a.Pattern != b.Pattern:
		err = fmt.Errorf("%w : %q -> %q", errPatternChange, a.Pattern, b.Pattern)
	}
	a.Pattern = ""
	b.Pattern = ""
	return validations.HandleErrors(p.Name(), p.enforcement, err)
}
