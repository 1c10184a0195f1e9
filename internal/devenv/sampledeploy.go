package devenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	release "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/manager/install"
)

// The sample deployment: make dev installs the sample operator's release at
// SampleInstalledVersion itself, then has the manager upgrade it to SampleDeploymentVersion with
// a Direct deployment, health checks on, to the dev cluster.
const (
	SampleInstalledVersion  = "0.1.0"
	SampleDeploymentVersion = "0.2.0"
)

// sampleValues are the sample release's values: with the real node, the release runs the
// operator (realNodeValues, operatorpods.go); without it, sampleDeploymentValues.
func (e *Env) sampleValues() map[string]any {
	if e.realNode() != nil {
		return realNodeValues(e.cp.Config.Host)
	}
	return sampleDeploymentValues()
}

// Without the real node, the sample operator's release is the record of the operator make dev
// runs: release slipway in slipway-system, the namespace and identity (ServiceAccount
// slipway-operator) under which the operator process runs on the host. Its Deployment's pods are
// simulated by kwok.
//
// Its values make every part of its health honestly checkable there:
//
//   - controllers without webapp: the chart's admission webhooks would point at the Service of
//     pods that do not exist (kwok runs no container), and their configurations would take the
//     names of the ones make dev points at the operator on the host. The webhook check then
//     looks at the release's webhook configurations and its CRDs' conversion webhooks and finds
//     none; the operator's webhooks stay served by the host-run operator, outside the release.
//   - catalyst.buildNamespace.create and catalyst.deployerNamespace.create false: make dev has
//     created slipway-builds and slipway-catalyst-deployers already.
//   - replicas 1: one simulated pod is enough to check.
//   - singleDeployment: make dev runs one operator process with every controller under one
//     identity (ServiceAccount slipway-operator), the chart's single-Deployment form; its default
//     form gives each controller a Deployment and ServiceAccount of its own.
//
// The pods part checks the release's pods (Running, Ready, restarts, CrashLoopBackOff) as kwok
// reports them; their resource usage is not checked, since no metrics.k8s.io is served (there is
// no usage to measure). The CRD part checks the Ready conditions of the samples' custom
// resources, which the operator on the host reconciles.
func sampleDeploymentValues() map[string]any {
	return map[string]any{
		"controllers":      []any{"werfbundle", "catalyst"},
		"singleDeployment": true,
		"replicas":         1,
		"catalyst": map[string]any{"buildNamespace": map[string]any{"create": false},
			"deployerNamespace": map[string]any{"create": false}},
	}
}

// Helm's ownership metadata: an existing object carrying it is adopted by the release.
const (
	helmManagedByLabel   = "app.kubernetes.io/managed-by"
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// installSampleRelease installs the release SampleOperator in SampleOperatorNamespace at
// SampleInstalledVersion with values (helm install, as the manager installs), after adopting the
// objects of it that exist already. It returns the revision and how many objects were adopted.
func installSampleRelease(ctx context.Context, cfg *rest.Config, c client.Client, dir string, values map[string]any) (int, int, error) {
	objs, err := renderSampleRelease(dir, SampleInstalledVersion, values)
	if err != nil {
		return 0, 0, err
	}
	adopted, err := adoptIntoRelease(ctx, c, objs)
	if err != nil {
		return 0, 0, err
	}
	ch, err := chartAt(dir, SampleInstalledVersion)
	if err != nil {
		return 0, 0, err
	}
	res, err := install.Install(ctx, cfg, install.Release{Name: SampleOperator, Namespace: SampleOperatorNamespace, Chart: ch,
		Values: values, Timeout: 2 * time.Minute})
	if err != nil {
		return 0, len(adopted), fmt.Errorf("installing the sample operator's release %s/%s %s: %w", SampleOperatorNamespace,
			SampleOperator, SampleInstalledVersion, err)
	}
	return res.Revision, len(adopted), nil
}

// waitSamplesReady waits up to timeout until every sample custom resource has Ready=True, and
// returns the first that has not ("" when all have).
func (e *Env) waitSamplesReady(ctx context.Context, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		notReady := ""
		for _, s := range e.samples {
			if s.gvk.Group == "" {
				continue
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(s.gvk)
			err := e.cp.Client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, u)
			if err != nil || !readyTrue(u) {
				notReady = fmt.Sprintf("%s %s/%s", s.gvk.Kind, s.namespace, s.name)
				break
			}
		}
		if notReady == "" {
			return ""
		}
		select {
		case <-ctx.Done():
			return notReady
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readyTrue tells whether u has a Ready condition with status True.
func readyTrue(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// renderSampleRelease renders the chart in dir at version with values, as the release
// SampleOperator in SampleOperatorNamespace (helm template).
func renderSampleRelease(dir, version string, values map[string]any) ([]*unstructured.Unstructured, error) {
	c, err := chartAt(dir, version)
	if err != nil {
		return nil, err
	}
	in := action.NewInstall(action.NewConfiguration())
	in.DryRunStrategy = action.DryRunClient
	in.Replace = true
	in.ReleaseName, in.Namespace = SampleOperator, SampleOperatorNamespace
	r, err := in.Run(c, values)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart %s at %s: %w", dir, version, err)
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("rendering the chart %s: unexpected release type %T", dir, r)
	}
	return manifestObjects(rel.Manifest)
}

// manifestObjects decodes a multi-document manifest.
func manifestObjects(manifest string) ([]*unstructured.Unstructured, error) {
	r := yaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if err := sigsyaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// adoptIntoRelease marks each of objs that exists already in the cluster (the operator's RBAC
// make dev installed for the host-run operator: same names, same rules, bound to the same
// identity) as owned by the sample release, so that Helm adopts it instead of refusing the
// install. It returns the adopted objects as "Kind name".
func adoptIntoRelease(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) ([]string, error) {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"Helm"},"annotations":{%q:%q,%q:%q}}}`,
		helmManagedByLabel, helmReleaseName, SampleOperator, helmReleaseNamespace, SampleOperatorNamespace)
	var adopted []string
	for _, o := range objs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(o.GroupVersionKind())
		ns := o.GetNamespace()
		if ns == "" && namespacedKind(o.GetKind()) {
			ns = SampleOperatorNamespace
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, cur)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return adopted, fmt.Errorf("looking up %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if err := c.Patch(ctx, cur, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return adopted, fmt.Errorf("marking %s %s as the release's: %w", o.GetKind(), o.GetName(), err)
		}
		adopted = append(adopted, o.GetKind()+" "+o.GetName())
	}
	return adopted, nil
}

// namespacedKind tells whether a kind the chart renders without a namespace lives in the
// release's namespace.
func namespacedKind(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
		"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "PriorityClass",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return false
	}
	return true
}
