//go:build e2e

package catalyst_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/gitsource/gittest"
)

// hostileAttack is one hostile pull request: an attacker's chart (testdata/attacks/<chart>) whose
// one object the engine's own checks let through and an admission policy refuses.
type hostileAttack struct {
	chart string
	// object is the refused object as the message names it (Kind[.group]/name), obj the same
	// object to look for afterwards.
	object string
	obj    client.Object
	// policy and rule name what refuses it.
	policy, rule string
}

func hostileObject(apiVersion, kind, name string) client.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// hostileAttacks are the hostile pull requests of issue 26's classes 2 to 5 (hosts, Services, the
// node and the neighbours, identity), written as an attacker would write them.
var hostileAttacks = []hostileAttack{
	{"service-nodeport", "Service/node-port", &corev1.Service{}, "catalyst-service", "service-type"},
	{"ingress-other-env", "Ingress.networking.k8s.io/steal", &networkingv1.Ingress{}, "catalyst-ingress", "ingress-host"},
	{"ingress-production-tls", "Ingress.networking.k8s.io/shop", &networkingv1.Ingress{}, "catalyst-ingress", "ingress-host"},
	{"ingress-wildcard", "Ingress.networking.k8s.io/everyone", &networkingv1.Ingress{}, "catalyst-ingress", "ingress-host"},
	{"ingress-default-backend", "Ingress.networking.k8s.io/catch-all", &networkingv1.Ingress{}, "catalyst-ingress", "ingress-default-backend"},
	{"ingress-snippet", "Ingress.networking.k8s.io/snippet", &networkingv1.Ingress{}, "catalyst-ingress", "ingress-annotation-denied"},
	{"ingress-auth-tls", "Ingress.networking.k8s.io/mtls", &networkingv1.Ingress{}, "catalyst-ingress", "ingress-annotation-denied"},
	{"httproute-foreign-host", "HTTPRoute.gateway.networking.k8s.io/shop", hostileObject("gateway.networking.k8s.io/v1", "HTTPRoute", "shop"),
		"catalyst-gateway-routes", "route-hostname"},
	{"service-loadbalancer", "Service/public", &corev1.Service{}, "catalyst-service", "service-type"},
	{"service-externalname", "Service/apiserver", &corev1.Service{}, "catalyst-service", "service-external-name"},
	{"service-externalips", "Service/intercept", &corev1.Service{}, "catalyst-service", "service-external-ips"},
	{"pod-nfs", "Deployment.apps/nfs-reader", &appsv1.Deployment{}, "catalyst-pods", "pod-volume"},
	{"pod-gitrepo", "Deployment.apps/git-cloner", &appsv1.Deployment{}, "catalyst-pods", "pod-volume"},
	{"pvc-volume-name", "PersistentVolumeClaim/borrowed", &corev1.PersistentVolumeClaim{}, "catalyst-pvc", "pvc-volume-name"},
	{"priority-class", "Deployment.apps/preemptor", &appsv1.Deployment{}, "catalyst-pods", "pod-priority-class"},
	{"sa-token-secret", "Secret/deployer-token", &corev1.Secret{}, "catalyst-secrets", "secret-token"},
	{"rolebinding-foreign-subject", "RoleBinding.rbac.authorization.k8s.io/let-them-in", &rbacv1.RoleBinding{}, "catalyst-rolebindings", "rolebinding-subject"},
}

// hostileReader is the ClusterRole the Project lets RoleBindings refer to: the attacker binds it
// to a ServiceAccount of another namespace.
const hostileReader = "preview-reader-hostile"

// TestSecurity_HostilePullRequestsAreRefusedByTheAPIServer deploys one hostile pull request per
// Environment (hostileAttacks), all at once, with environment namespaces at Pod Security baseline
// (--catalyst-pod-security-level, where node-mounted volumes must still be refused by the
// policies, since baseline admits nfs and gitRepo): each object passes the engine's own checks and is
// refused by the API server's admission policies at the deploy's dry run, so the Environment fails
// with ObjectRefused naming the object, its template, the policy and its rule, in
// DeploymentReady and in a Warning Event, and nothing is left (no object of the attack, no Helm
// release, no ConfigMap). Plain manifests get the same: one Environment whose manifests hold an
// Ingress with a defaultBackend, a NodePort Service and a token Secret beside the sample
// application is refused naming all three, and applies nothing.
func TestSecurity_HostilePullRequestsAreRefusedByTheAPIServer(t *testing.T) {
	t.Run("helm", func(t *testing.T) {
		f := newFixture(t)
		f.podSecurityLevel = "baseline"
		installGatewayAPI(t, f.ctx)
		f.allowBinding(hostileReader, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
		f.hostPathVolume("someone-elses-data")
		p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeHelm, "charts/app"), func(p *catalystv1alpha1.Project) {
			p.Spec.Registry = nil // nothing to build: the charts run no image of the commit
			p.Spec.Deployment.AllowedClusterRoles = []string{hostileReader}
		})
		f.create(p)
		f.start()
		f.waitProjectReady(p)
		envs := make([]*catalystv1alpha1.Environment, len(hostileAttacks))
		for i, a := range hostileAttacks {
			sha := f.commit("attack: "+a.chart, attackChart(t, a.chart))
			envs[i] = f.createEnvironment(f.environment(fmt.Sprintf("hpr-%d", i), sha))
		}
		for i, a := range hostileAttacks {
			got := f.waitFailed(envs[i])
			ns := got.Status.Namespace
			named := []string{a.object + " (app/templates/" + a.chart + ".yaml): refused by the API server",
				"ValidatingAdmissionPolicy '" + a.policy + "'", "(rule " + a.rule + ")"}
			f.checkRefused(got, named)
			f.checkWarningEvent(got, catalystv1alpha1.ObjectRefusedReason, named)
			f.checkNothingDeployed(a.chart, ns, "no secret here")
			a.obj.SetNamespace(ns)
			a.obj.SetName(a.object[strings.LastIndex(a.object, "/")+1:])
			f.absent(a.obj, a.chart+": "+a.object)
		}
	})
	t.Run("manifest", func(t *testing.T) {
		f := newFixture(t)
		sha := f.commit("attack", gittest.Files{"deploy/manifests/zz-attack.yaml": []byte(hostileManifests)})
		f.pushImage(sha)
		p := f.project(withDeployment(catalystv1alpha1.DeploymentTypeManifest, "deploy/manifests"))
		f.create(p)
		f.start()
		f.waitProjectReady(p)
		got := f.waitFailed(f.createEnvironment(f.environment("hpr", sha)))
		const origin = " (deploy/manifests/zz-attack.yaml, document "
		named := []string{"3 objects refused",
			"Ingress.networking.k8s.io/catch-all" + origin, "(rule ingress-default-backend)",
			"Service/node-port" + origin, "(rule service-type)",
			"Secret/deployer-token" + origin, "ValidatingAdmissionPolicy 'catalyst-secrets'", "(rule secret-token)"}
		f.checkRefused(got, named)
		f.checkWarningEvent(got, catalystv1alpha1.ObjectRefusedReason, named)
		ns := got.Status.Namespace
		f.checkNothingApplied(ns)
		f.absent(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "catch-all", Namespace: ns}}, "the Ingress")
		f.absent(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "node-port", Namespace: ns}}, "the NodePort Service")
		f.absent(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "deployer-token", Namespace: ns}}, "the token Secret")
	})
}

// hostileManifests are three of the attacks as plain manifests beside the sample application.
const hostileManifests = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: catch-all}
spec:
  defaultBackend: {service: {name: app, port: {number: 80}}}
---
apiVersion: v1
kind: Service
metadata: {name: node-port}
spec:
  type: NodePort
  selector: {app.kubernetes.io/name: app}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Secret
metadata:
  name: deployer-token
  annotations: {kubernetes.io/service-account.name: catalyst-deployer}
type: kubernetes.io/service-account-token
`

// hostPathVolume makes a PersistentVolume on a node's directory, as a cluster administrator makes
// one for another team, removed when the test ends.
func (f *fixture) hostPathVolume(name string) {
	f.t.Helper()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/other-team"}},
		}}
	if err := f.c.Create(f.ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = env.Client.Delete(f.ctx, pv) })
}
