package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
	"github.com/slipway-dev/slipway/internal/cli/output"
)

// webAppKind is WebApp for the in-cluster verbs: REPLICAS is available/desired, URL the
// Service's in-cluster address, SHARD the operator shard that holds it (with --shards > 1; "-"
// otherwise).
var webAppKind = &kubeKind{
	name: "webapp", plural: "webapps", title: "WebApp", resource: "webapps",
	gvk:     webappv1.GroupVersion.WithKind("WebApp"),
	newObj:  func() kubeObject { return &webappv1.WebApp{} },
	headers: []string{"image", "replicas", "url", "shard", "age"},
	row: func(p *output.Printer, o kubeObject) []string {
		w := o.(*webappv1.WebApp)
		desired := int32(1)
		if w.Spec.Replicas != nil {
			desired = *w.Spec.Replicas
		}
		return []string{w.Spec.Image, fmt.Sprintf("%d/%d", w.Status.AvailableReplicas, desired), orDash(w.Status.URL),
			orDash(w.Labels[webappv1.ShardLabel]), ageCell(p, w.CreationTimestamp)}
	},
	conditions: func(o kubeObject) []metav1.Condition { return o.(*webappv1.WebApp).Status.Conditions },
}

// NewCmdGetWebApps is `slipway get webapps [NAME]`.
func NewCmdGetWebApps(f *Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	return newCmdGetKind(f, webAppKind, []string{"webapp", "wa"},
		"List WebApps: image, replicas available/desired, URL, ready",
		`  slipway get webapps -n shop
  slipway get webapps -A -o json`, runF)
}
