package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The engine's own checks (check) know the rules the engine was written with. The API server
// knows every rule of the cluster: Pod Security, quotas, the preview ValidatingAdmissionPolicies,
// any policy engine the cluster runs. So before the first write of a deploy, every object it
// would write (Helm hooks included) is sent to the API server as the deployer, with server-side
// apply and dryRun=All: each is admitted as if it were written, nothing is stored. Every refusal
// is collected and the deploy fails with ErrRefusedObject naming each object, its file and the
// server's message (which names the rule), so a refused deploy leaves nothing behind: no object,
// no inventory, no Helm release. The real writes that follow may still meet a refusal (a policy
// or quota that changed meanwhile); refusedWhileApplying reports it the same way.

// dryRunConcurrency bounds the dry-run requests of one deploy in flight: they are independent,
// and sending them together keeps a deploy's added time near one request's.
const dryRunConcurrency = 8

// admit dry-runs ms (prepared for req.Namespace) as the deployer with field manager manager; helm
// says they are a chart's, whose hooks Helm creates anew. It returns ErrRefusedObject listing
// every refused object, or the first transient error.
func (e *Engine) admit(ctx context.Context, namespace, manager string, ms []manifest, helm bool) error {
	verdicts := make([]error, len(ms))
	sem := make(chan struct{}, dryRunConcurrency)
	var wg sync.WaitGroup
	for i, m := range ms {
		if isTestHook(m.obj) {
			continue // created by `helm test` only, which the operator never runs
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			verdicts[i] = e.dryRun(ctx, m.obj, manager, helm && m.obj.GetAnnotations()[helmHookAnnotation] != "")
		})
	}
	wg.Wait()
	var refused []string
	for i, err := range verdicts {
		if err == nil || dependsOnRendered(ms[i], ms, err) {
			continue
		}
		why, isRefusal := refusalBy(err, ms[i].ref())
		if !isRefusal {
			return fmt.Errorf("checking %s (%s) with the API server: %w", ms[i].ref(), ms[i].origin, err)
		}
		refused = append(refused, fmt.Sprintf("%s (%s): %s", ms[i].ref(), ms[i].origin, why))
	}
	if len(refused) == 0 {
		return nil
	}
	return serverRefusal{refusedError(namespace, refused)}
}

// helmHookAnnotation marks a Helm hook.
const helmHookAnnotation = "helm.sh/hook"

// dryRun sends obj to the API server with dryRun=All: with server-side apply, as the deploy
// writes it, or for a Helm hook (hook) as a new object. Helm deletes the previous revision's hook
// before it creates the new one (hook-delete-policy before-hook-creation, its default), so the
// hook is judged as created, not as a change of the old one (which a Job's immutable template
// would refuse); while the old one exists, under a name the API server generates from its own.
func (e *Engine) dryRun(ctx context.Context, obj *unstructured.Unstructured, manager string, hook bool) error {
	if !hook {
		return e.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()),
			client.FieldOwner(manager), client.ForceOwnership, client.DryRunAll)
	}
	err := e.client.Create(ctx, obj.DeepCopy(), client.FieldOwner(manager), client.DryRunAll)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	renamed := obj.DeepCopy()
	renamed.SetName("")
	renamed.SetGenerateName(obj.GetName() + "-")
	return e.client.Create(ctx, renamed, client.FieldOwner(manager), client.DryRunAll)
}

// serverRefusal is a refusal by the API server: ErrRefusedObject for the condition's reason, and
// ErrApplyRejected too, which is what the same refusal was before the dry run.
type serverRefusal struct{ error }

func (r serverRefusal) Unwrap() error        { return r.error }
func (r serverRefusal) Is(target error) bool { return target == ErrApplyRejected }

// refusalBy says whether err is the API server's judgement of the object ref (a refusal the same
// object meets again at every retry) and words it; other errors (unreachable, throttled, a quota
// that has not been counted yet or that other objects fill now) are transient.
//
// Quotas: a dry-run create is admitted against the namespace's ResourceQuotas like a real one
// (and consumes nothing). An object that asks alone for more than a quota's hard limit can never
// fit: a refusal. One that would fit the quota but not its current use (pods of the previous
// revision still terminating, a build running) is transient, and so is a quota the quota
// controller has not counted yet.
func refusalBy(err error, ref ObjectRef) (string, bool) {
	switch {
	case apierrors.IsForbidden(err):
		msg := err.Error()
		if strings.Contains(msg, "status unknown for quota") {
			return "", false
		}
		if strings.Contains(msg, "exceeded quota:") && !exceedsHardLimit(msg) {
			return "", false
		}
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsRequestEntityTooLargeError(err),
		apierrors.IsMethodNotSupported(err), apierrors.IsInternalError(err) && undecodable(err):
	default:
		return "", false
	}
	return "refused by the API server: " + safeMessage(ref, err), true
}

// quotaExceeded matches the quota admission plugin's message.
var quotaExceeded = regexp.MustCompile(`exceeded quota: [^,]+, requested: (\S+), used: \S+, limited: (\S+)`)

// exceedsHardLimit reports whether a quota refusal's request alone is more than the limit.
func exceedsHardLimit(msg string) bool {
	m := quotaExceeded.FindStringSubmatch(msg)
	if m == nil {
		return true // a message we cannot read: the object as it is was refused
	}
	requested, limited := resourceList(m[1]), resourceList(m[2])
	for name, req := range requested {
		if hard, ok := limited[name]; ok && req.Cmp(hard) > 0 {
			return true
		}
	}
	return false
}

// resourceList parses "requests.cpu=2,pods=1".
func resourceList(s string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for part := range strings.SplitSeq(strings.TrimSuffix(s, ","), ",") {
		name, value, ok := strings.Cut(part, "=")
		if q, err := resource.ParseQuantity(value); ok && err == nil {
			out[corev1.ResourceName(name)] = q
		}
	}
	return out
}

// dependsOnRendered reports a refusal that only says an object of the same deploy does not exist
// yet, which the dry run cannot create first; such an object is judged when it is written:
//   - a Pod (a Helm hook, typically) naming a ServiceAccount the deploy creates;
//   - a RoleBinding to a Role the deploy creates: the API server resolves the Role's rules to
//     check that the deployer grants no more than it holds, and a Role not stored yet is "not found".
func dependsOnRendered(m manifest, ms []manifest, err error) bool {
	renders := func(kind schema.GroupKind, name string) bool {
		return slices.ContainsFunc(ms, func(o manifest) bool {
			return o.obj.GroupVersionKind().GroupKind() == kind && o.obj.GetName() == name
		})
	}
	switch m.obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Pod"}:
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "error looking up service account") {
			return false
		}
		sa, _, _ := unstructured.NestedString(m.obj.Object, "spec", "serviceAccountName")
		return renders(schema.GroupKind{Kind: "ServiceAccount"}, sa)
	case schema.GroupKind{Group: rbacv1.GroupName, Kind: "RoleBinding"}:
		kind, _, _ := unstructured.NestedString(m.obj.Object, "roleRef", "kind")
		role, _, _ := unstructured.NestedString(m.obj.Object, "roleRef", "name")
		return apierrors.IsNotFound(err) && kind == "Role" && renders(schema.GroupKind{Group: rbacv1.GroupName, Kind: "Role"}, role)
	}
	return false
}

// refusedWhileApplying turns a refusal the API server answered to a real write of m (after the
// dry run admitted it) into the dry run's report; nil when err is not one.
func refusedWhileApplying(m manifest, err error) error {
	// The API server's own words, without what a client (Helm) wrapped around them.
	var status *apierrors.StatusError
	if errors.As(err, &status) {
		err = status
	}
	why, isRefusal := refusalBy(err, m.ref())
	if !isRefusal {
		return nil
	}
	return serverRefusal{fmt.Errorf("%w: %s (%s): %s; it was refused while the deploy applied it, after the dry run had admitted it (a rule or a quota changed meanwhile), and the objects before it are applied",
		ErrRefusedObject, m.ref(), m.origin, why)}
}

// helmApplyError is helmError, or for a refusal of one of ms by the API server while Helm wrote
// it, refusedWhileApplying's report. Helm's errors do not say which object failed: it is found
// by the name, group and resource the API status carries.
func helmApplyError(verb, release string, err error, ms []manifest) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		d := status.Status().Details
		for _, m := range ms {
			gvk := m.obj.GroupVersionKind()
			if m.obj.GetName() == d.Name && gvk.Group == d.Group && sameKind(gvk.Kind, d.Kind) {
				if r := refusedWhileApplying(m, err); r != nil {
					return r
				}
			}
		}
	}
	return helmError(verb, release, err)
}

// admitChart dry-runs what a chart rendered, prepared as the post-renderer prepares it, and
// returns those objects.
func (e *Engine) admitChart(ctx context.Context, req Request, rendered map[string]string) ([]manifest, error) {
	ms, err := helmManifests(rendered)
	if err != nil {
		return nil, err
	}
	if _, err := prepare(ms, req, e.namespaced, prepareOptions{injectEnv: true}); err != nil {
		return nil, err
	}
	return ms, e.admit(ctx, req.Namespace, helmFieldManager(), ms, true)
}

// sameKind compares a kind with what an API status names: the kind, or its resource (plural).
func sameKind(kind, named string) bool {
	k := strings.ToLower(kind)
	named = strings.ToLower(named)
	return named == k || named == k+"s" || named == k+"es" || (strings.HasSuffix(k, "y") && named == strings.TrimSuffix(k, "y")+"ies")
}

// helmManifests are the objects of a chart's rendered templates, by template path: what Helm
// will write, hooks included (partials and NOTES.txt are not objects).
func helmManifests(rendered map[string]string) ([]manifest, error) {
	var out []manifest
	for _, name := range slices.Sorted(maps.Keys(rendered)) {
		if strings.HasPrefix(path.Base(name), "_") || strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(rendered[name]) == "" {
			continue
		}
		ms, err := parseManifests(name, []byte(rendered[name]))
		if err != nil {
			return nil, err
		}
		for i := range ms {
			ms[i].origin = name
		}
		out = append(out, ms...)
	}
	return out, nil
}

// helmFieldManager is the field manager Helm's server-side apply writes with (kube's own rule:
// the executable's name unless set), so the dry run merges the objects as Helm's apply will.
func helmFieldManager() string {
	if kube.ManagedFieldsManager != "" {
		return kube.ManagedFieldsManager
	}
	if os.Args[0] == "" {
		return "unknown"
	}
	return filepath.Base(os.Args[0])
}
