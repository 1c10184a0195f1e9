package devenv

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/config"
	"github.com/slipway-dev/slipway/internal/sampleapp"
)

const fieldOwner = client.FieldOwner("slipway-dev")

type sampleRef struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

// applySamples server-side applies config/samples, creating their namespaces first, with the
// registry and the git server at the addresses the operator reaches them, and with the real node
// the WebApp samples running the sample app there (samplepods.go).
func applySamples(ctx context.Context, c client.Client, registryAddr, gitAddr, head string, realNode bool) ([]sampleRef, error) {
	objs, err := config.Samples()
	if err != nil {
		return nil, err
	}
	if err := pinSamples(objs, registryAddr, gitAddr, head); err != nil {
		return nil, err
	}
	if realNode {
		if objs, err = realNodeSamples(objs, sampleapp.Ref(SampleAppVersion)); err != nil {
			return nil, err
		}
	}
	var refs []sampleRef
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" {
			err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating namespace %s: %w", ns, err)
			}
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), fieldOwner, client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying sample %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		refs = append(refs, sampleRef{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()})
	}
	return refs, nil
}

// ShowStatus prints the nodes and the samples' status whenever it changes, until ctx ends.
func (e *Env) ShowStatus(ctx context.Context, out io.Writer, every time.Duration) {
	last := ""
	for {
		if table := e.statusTable(ctx); table != last {
			fmt.Fprintf(out, "--- %s\n%s\n", time.Now().Format(time.TimeOnly), table)
			last = table
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func (e *Env) statusTable(ctx context.Context) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tNAMESPACE\tNAME\tSTATUS\tMESSAGE")
	var nodes corev1.NodeList
	if err := e.cp.Client.List(ctx, &nodes); err != nil {
		fmt.Fprintf(w, "Node\t\t\t<error>\t%v\n", err)
	}
	for _, n := range nodes.Items {
		status := "NotReady"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				status = "Ready"
			}
		}
		fmt.Fprintf(w, "Node\t\t%s\t%s\t%s\n", n.Name, status, nodeKind(&n))
	}
	for _, row := range e.realPodRows(ctx) {
		fmt.Fprintln(w, row)
	}
	for _, s := range e.samples {
		if s.gvk.Group == "" {
			continue // namespaces, ServiceAccounts, ConfigMaps: supporting objects
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(s.gvk)
		err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, u)
		status, message := summarize(u, err)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.gvk.Kind, s.namespace, s.name, status, message)
	}
	for _, row := range e.reachRows(ctx) {
		fmt.Fprintln(w, row)
	}
	if e.later != nil {
		fmt.Fprintln(w, e.later.row())
	}
	if e.manager != nil {
		rows := e.manager.api.statusRows(ctx, e.manager.statusToken)
		if id := e.manager.deploymentID; id != "" {
			rows = append(rows, e.manager.api.deploymentRows(ctx, e.manager.statusToken, id)...)
		}
		for _, row := range rows {
			fmt.Fprintln(w, row)
		}
	}
	_ = w.Flush()
	return b.String()
}

// summarize reads status.phase and the Ready condition of any object.
func summarize(u *unstructured.Unstructured, err error) (status, message string) {
	if err != nil {
		return "<error>", err.Error()
	}
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			message, _ = m["message"].(string)
			if phase == "" {
				phase = "Ready=" + fmt.Sprint(m["status"])
			}
		}
	}
	if phase == "" {
		phase = "<no status yet>"
	}
	if len(message) > 80 {
		message = message[:77] + "..."
	}
	return phase, message
}
