package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalystv1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/cli/output"
)

// previewKind is a Catalyst preview for the in-cluster verbs: an Environment of type development
// (the previews of branches and pull requests; staging and production are Environments of type
// deployment, which these verbs leave alone).
var previewKind = &kubeKind{
	name: "preview", plural: "previews", title: "Environment", resource: "environments",
	gvk:     catalystv1.GroupVersion.WithKind("Environment"),
	newObj:  func() kubeObject { return &catalystv1.Environment{} },
	headers: []string{"pull request", "url", "phase", "age"},
	row: func(p *output.Printer, o kubeObject) []string {
		e := o.(*catalystv1.Environment)
		pr := "-"
		if n := e.Spec.Source.PRNumber; n > 0 {
			pr = fmt.Sprintf("#%d", n)
		}
		return []string{pr, orDash(e.Status.URL), orDash(string(e.Status.Phase)), ageCell(p, e.CreationTimestamp)}
	},
	conditions: func(o kubeObject) []metav1.Condition { return o.(*catalystv1.Environment).Status.Conditions },
	keep:       func(o kubeObject) bool { return isPreview(o.(*catalystv1.Environment)) },
}

// isPreview reports whether an Environment is a preview (type development, the default).
func isPreview(e *catalystv1.Environment) bool {
	return e.Spec.Type == "" || e.Spec.Type == catalystv1.EnvironmentTypeDevelopment
}

// NewCmdGetPreviews is `slipway get previews [NAME]`.
func NewCmdGetPreviews(f *Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	return newCmdGetKind(f, previewKind, []string{"preview"},
		"List preview environments (Catalyst Environments of type development): pull request, URL, phase, ready",
		`  slipway get previews -n my-team-my-project
  slipway get previews -A`, runF)
}
