package cli

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	werfv1 "github.com/slipway-dev/slipway/api/werf/v1alpha1"
	"github.com/slipway-dev/slipway/internal/cli/output"
)

// werfBundleKind is WerfBundle for the in-cluster verbs: DEPLOYED is the tag deployed last with
// success, LATEST the highest matching tag the last poll saw, SHARD the operator shard that holds
// it (with --shards > 1; "-" otherwise).
var werfBundleKind = &kubeKind{
	name: "werfbundle", plural: "werfbundles", title: "WerfBundle", resource: "werfbundles",
	gvk:     werfv1.GroupVersion.WithKind("WerfBundle"),
	newObj:  func() kubeObject { return &werfv1.WerfBundle{} },
	headers: []string{"deployed", "latest", "suspended", "shard", "age"},
	row: func(p *output.Printer, o kubeObject) []string {
		b := o.(*werfv1.WerfBundle)
		latest := ""
		if r := b.Status.Registry; r != nil {
			latest = r.LatestTag
		}
		return []string{orDash(b.Status.LastAppliedTag), orDash(latest), strconv.FormatBool(b.Spec.Suspend), orDash(b.Labels[werfv1.ShardLabel]), ageCell(p, b.CreationTimestamp)}
	},
	conditions: func(o kubeObject) []metav1.Condition { return o.(*werfv1.WerfBundle).Status.Conditions },
}

// NewCmdGetWerfBundles is `slipway get werfbundles [NAME]`.
func NewCmdGetWerfBundles(f *Factory, runF func(context.Context, *GetOptions) error) *cobra.Command {
	return newCmdGetKind(f, werfBundleKind, []string{"werfbundle", "wb"},
		"List WerfBundles: the tag deployed, the latest tag, suspended, ready",
		`  slipway get werfbundles -A
  slipway get wb my-app -n my-app-prod -o yaml`, runF)
}
