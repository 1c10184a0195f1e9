package install

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The labels and annotations that say which release a cluster-scoped object belongs to, as
// internal/manager/health reads them.
const (
	instanceLabel              = "app.kubernetes.io/instance"
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// webhookConfigKinds are the admission webhook configurations a switch re-points.
var webhookConfigKinds = []struct {
	kind string
	gvr  schema.GroupVersionResource
}{
	{"ValidatingWebhookConfiguration", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}},
	{"MutatingWebhookConfiguration", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}},
}

// owns tells whether the object belongs to the side's release: the instance label, or Helm's
// release annotations (the same rule as the health check's).
func owns(sd Side, m metav1.Object) bool {
	if m.GetLabels()[instanceLabel] == sd.Release {
		return true
	}
	a := m.GetAnnotations()
	return a[releaseNameAnnotation] == sd.Release && (a[releaseNamespaceAnnotation] == "" || a[releaseNamespaceAnnotation] == sd.Namespace)
}

// switchRecord is the SwitchedFromAnnotation's value: the sides of the switch and the original
// clientConfigs, as they were read.
type switchRecord struct {
	Blue  Side `json:"blue"`
	Green Side `json:"green"`
	// Webhooks are a webhook configuration's original clientConfigs by webhook name.
	Webhooks map[string]map[string]any `json:"webhooks,omitempty"`
	// Conversion is a CRD's original conversion webhook clientConfig.
	Conversion map[string]any `json:"conversion,omitempty"`
}

// readRecord is u's switch record, nil when it has none.
func readRecord(u *unstructured.Unstructured) (*switchRecord, error) {
	v, ok := u.GetAnnotations()[SwitchedFromAnnotation]
	if !ok {
		return nil, nil
	}
	var r switchRecord
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return nil, fmt.Errorf("%s %s: annotation %s is not a switch record: restore the object from its chart and remove the annotation: %w",
			u.GetKind(), u.GetName(), SwitchedFromAnnotation, err)
	}
	return &r, nil
}

// change is one merge patch of the switch, and what it counts for.
type change struct {
	gvr                  schema.GroupVersionResource
	namespace, name      string
	patch                map[string]any
	webhooks, crds, pods int
}

// switchPlan is the patches of a switch (or its reverse), decided before any is sent.
type switchPlan struct{ changes []change }

// apply sends the plan's patches in order, counting what each changed into res.
func (p *switchPlan) apply(ctx context.Context, s *session, res *SwitchResult) error {
	for _, c := range p.changes {
		body, err := json.Marshal(c.patch)
		if err != nil {
			return err
		}
		client := s.dynamic.Resource(c.gvr).Namespace(c.namespace)
		if _, err := client.Patch(ctx, c.name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("patching %s %s: %w", c.gvr.Resource, qualified(c.namespace, c.name), err)
		}
		res.Webhooks += c.webhooks
		res.CRDs += c.crds
		res.Scaled += c.pods
	}
	return nil
}

// metaPatch is the metadata part of a patch: the resourceVersion read (so a concurrent change
// makes it a 409 Conflict rather than lost) and the annotation set (or removed with nil).
func metaPatch(u *unstructured.Unstructured, annotation string, value any) map[string]any {
	return map[string]any{"resourceVersion": u.GetResourceVersion(), "annotations": map[string]any{annotation: value}}
}

// greenTargets is what the switch knows of green: its webhooks by configuration, kind and name,
// the CA bundles its webhooks use per Service, and which of its Services exist.
type greenTargets struct {
	blue, green Side
	byConfig    map[string]map[string]map[string]any // kind/config name → webhook name → clientConfig
	byName      map[string]map[string]any            // kind/webhook name → clientConfig
	caBundles   map[string]any                       // namespace/service → caBundle
	services    map[string]bool                      // namespace/service → exists
}

// renamed is name with blue's release prefix replaced by green's.
func (g *greenTargets) renamed(name string) string {
	if rest, ok := strings.CutPrefix(name, g.blue.Release); ok {
		return g.green.Release + rest
	}
	return name
}

// retarget is the clientConfig that calls green instead of from, which calls a Service in blue's
// namespace (ok false for anything else). A Service green lacks is an error, so the switch stops
// before it changes anything.
func (g *greenTargets) retarget(ctx context.Context, s *session, what string, from map[string]any) (map[string]any, bool, error) {
	svc, _ := from["service"].(map[string]any)
	if svc == nil || svc["namespace"] != g.blue.Namespace {
		return nil, false, nil
	}
	name, _ := svc["name"].(string)
	want := runtime.DeepCopyJSON(from)
	wsvc := want["service"].(map[string]any)
	wsvc["namespace"], wsvc["name"] = g.green.Namespace, g.renamed(name)
	key := g.green.Namespace + "/" + g.renamed(name)
	exists, known := g.services[key]
	if !known {
		_, err := s.clientset.CoreV1().Services(g.green.Namespace).Get(ctx, g.renamed(name), metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, false, fmt.Errorf("reading green's Service %s: %w", key, err)
		}
		exists = err == nil
		g.services[key] = exists
	}
	if !exists {
		return nil, false, fmt.Errorf("%s calls Service %s/%s, and green (release %s) has no Service %s to take it over: "+
			"install green from a chart that has it, or switch by hand", what, g.blue.Namespace, name, g.green.Release, key)
	}
	if ca, ok := g.caBundles[key]; ok {
		want["caBundle"] = ca
	}
	return want, true, nil
}

// planSwitch reads blue's and green's webhook configurations, the CRDs and blue's workloads and
// decides the patches of a switch.
func planSwitch(ctx context.Context, s *session, blue, green Side) (*switchPlan, error) {
	g := &greenTargets{blue: blue, green: green, byConfig: map[string]map[string]map[string]any{},
		byName: map[string]map[string]any{}, caBundles: map[string]any{}, services: map[string]bool{}}
	blueConfigs := map[string][]unstructured.Unstructured{}
	for _, k := range webhookConfigKinds {
		list, err := s.dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", k.kind, err)
		}
		for _, u := range list.Items {
			switch {
			case owns(blue, &u):
				blueConfigs[k.kind] = append(blueConfigs[k.kind], u)
			case owns(green, &u):
				g.addGreen(k.kind, &u)
			}
		}
	}
	p := &switchPlan{}
	for _, k := range webhookConfigKinds {
		for _, u := range blueConfigs[k.kind] {
			c, err := g.switchWebhooks(ctx, s, k.kind, k.gvr, &u)
			if err != nil {
				return nil, err
			}
			if c != nil {
				p.changes = append(p.changes, *c)
			}
		}
	}
	crds, err := g.switchConversions(ctx, s)
	if err != nil {
		return nil, err
	}
	p.changes = append(p.changes, crds...)
	scale, err := scaleDown(ctx, s, blue)
	if err != nil {
		return nil, err
	}
	p.changes = append(p.changes, scale...)
	return p, nil
}

// addGreen records the webhooks of one of green's configurations.
func (g *greenTargets) addGreen(kind string, u *unstructured.Unstructured) {
	hooks := map[string]map[string]any{}
	list, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	for _, w := range list {
		wm, _ := w.(map[string]any)
		name, _ := wm["name"].(string)
		cc, _ := wm["clientConfig"].(map[string]any)
		if name == "" || cc == nil {
			continue
		}
		hooks[name] = cc
		if _, dup := g.byName[kind+"/"+name]; !dup {
			g.byName[kind+"/"+name] = cc
		}
		if svc, _ := cc["service"].(map[string]any); svc != nil && cc["caBundle"] != nil && cc["caBundle"] != "" {
			g.caBundles[fmt.Sprint(svc["namespace"], "/", svc["name"])] = cc["caBundle"]
		}
	}
	g.byConfig[kind+"/"+u.GetName()] = hooks
}

// switchWebhooks is the patch re-pointing the webhooks of blue's configuration u to green, nil
// when there is nothing to change.
func (g *greenTargets) switchWebhooks(ctx context.Context, s *session, kind string, gvr schema.GroupVersionResource, u *unstructured.Unstructured) (*change, error) {
	rec, err := readRecord(u)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &switchRecord{}
	}
	before, _ := json.Marshal(rec)
	rec.Blue, rec.Green = g.blue, g.green
	if rec.Webhooks == nil {
		rec.Webhooks = map[string]map[string]any{}
	}
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	changed := 0
	for _, w := range hooks {
		wm, _ := w.(map[string]any)
		name, _ := wm["name"].(string)
		cc, _ := wm["clientConfig"].(map[string]any)
		from, switched := rec.Webhooks[name]
		if !switched {
			from = cc
		}
		want, ok := g.byConfig[kind+"/"+g.renamed(u.GetName())][name]
		if !ok {
			want, ok = g.byName[kind+"/"+name]
		}
		if ok {
			want = runtime.DeepCopyJSON(want)
		} else if want, ok, err = g.retarget(ctx, s, fmt.Sprintf("webhook %s of %s %s", name, kind, u.GetName()), from); err != nil {
			return nil, err
		}
		if !ok {
			s.log.DebugContext(ctx, "install: Webhook left as it is: it does not call blue's namespace and green has none of that name",
				"kind", kind, "configuration", u.GetName(), "webhook", name)
			continue
		}
		if !switched {
			rec.Webhooks[name] = runtime.DeepCopyJSON(cc)
		}
		if !jsonEqual(cc, want) {
			wm["clientConfig"] = want
			changed++
		}
	}
	after, _ := json.Marshal(rec)
	if len(rec.Webhooks) == 0 || (changed == 0 && string(before) == string(after)) {
		return nil, nil
	}
	return &change{gvr: gvr, name: u.GetName(), webhooks: changed,
		patch: map[string]any{"metadata": metaPatch(u, SwitchedFromAnnotation, string(after)), "webhooks": hooks}}, nil
}

// planSwitchBack decides the patches giving blue's webhook configurations and the CRDs switched
// from blue their original clientConfigs back.
func planSwitchBack(ctx context.Context, s *session, blue Side) (*switchPlan, error) {
	p := &switchPlan{}
	for _, k := range webhookConfigKinds {
		list, err := s.dynamic.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", k.kind, err)
		}
		for _, u := range list.Items {
			if !owns(blue, &u) {
				continue
			}
			rec, err := readRecord(&u)
			if err != nil {
				return nil, err
			}
			if rec == nil {
				continue
			}
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			restored := 0
			for _, w := range hooks {
				wm, _ := w.(map[string]any)
				name, _ := wm["name"].(string)
				if orig, ok := rec.Webhooks[name]; ok {
					if !jsonEqual(wm["clientConfig"], orig) {
						restored++
					}
					wm["clientConfig"] = orig
				}
			}
			p.changes = append(p.changes, change{gvr: k.gvr, name: u.GetName(), webhooks: restored,
				patch: map[string]any{"metadata": metaPatch(&u, SwitchedFromAnnotation, nil), "webhooks": hooks}})
		}
	}
	crds, err := restoreConversions(ctx, s, blue)
	if err != nil {
		return nil, err
	}
	p.changes = append(p.changes, crds...)
	return p, nil
}

// jsonEqual compares two JSON values by their encoding (numbers of any Go type compare by value).
func jsonEqual(a, b any) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && string(ja) == string(jb)
}

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
