//go:build e2e

package catalyst_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// attack is one write a preview must never make.
type attack struct {
	name string
	// rule is the admission rule that refuses it, named in the refusal; "a|b" when two policies
	// refuse it and the API server names either.
	rule string
	// op is create, update or delete.
	op string
	// obj is the object to create, or names the one to update or delete.
	obj func(ns string) client.Object
	// mutate turns the live object into the attack (update).
	mutate func(o client.Object)
}

// admissionAttacks are the attacks of issue 26's section 1, one per way out.
func admissionAttacks() []attack {
	return []attack{
		// Hosts that are not the environment's.
		{name: "Ingress claims another environment's host", rule: "ingress-host", op: "create", obj: func(ns string) client.Object {
			return ingressFor(ns, "steal", "pr-2.preview.example.dev")
		}},
		{name: "Ingress claims a production host with a TLS entry", rule: "ingress-host", op: "create", obj: func(ns string) client.Object {
			ing := ingressFor(ns, "prod", "www.example.com")
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"www.example.com"}, SecretName: "prod-tls"}}
			return ing
		}},
		{name: "Ingress claims a wildcard of the preview domain", rule: "ingress-host", op: "create", obj: func(ns string) client.Object {
			return ingressFor(ns, "wildcard", "*.preview.example.dev")
		}},
		{name: "Ingress rule without a host (every host)", rule: "ingress-host", op: "create", obj: func(ns string) client.Object {
			return ingressFor(ns, "nohost", "")
		}},
		{name: "Ingress TLS entry for a wildcard", rule: "ingress-tls-host", op: "create", obj: func(ns string) client.Object {
			ing := ingressFor(ns, "tls", admissionHost)
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"*.preview.example.dev"}, SecretName: "wild"}}
			return ing
		}},
		{name: "Ingress defaultBackend and no rules (every host)", rule: "ingress-default-backend", op: "create", obj: func(ns string) client.Object {
			ing := ingressFor(ns, "catchall", admissionHost)
			ing.Spec.DefaultBackend = &ing.Spec.Rules[0].HTTP.Paths[0].Backend
			ing.Spec.Rules = nil
			return ing
		}},
		{name: "Ingress of another ingress class", rule: "ingress-class", op: "create", obj: func(ns string) client.Object {
			ing := ingressFor(ns, "class", admissionHost)
			ing.Spec.IngressClassName = ptr.To("public")
			return ing
		}},
		{name: "Ingress configuration-snippet annotation", rule: "ingress-annotation-denied", op: "create", obj: func(ns string) client.Object {
			return withAnnotation(ingressFor(ns, "snippet", admissionHost), "nginx.ingress.kubernetes.io/configuration-snippet", "proxy_pass http://169.254.169.254;")
		}},
		{name: "Ingress auth-tls-secret of another namespace", rule: "ingress-annotation-denied", op: "create", obj: func(ns string) client.Object {
			return withAnnotation(ingressFor(ns, "authtls", admissionHost), "nginx.ingress.kubernetes.io/auth-tls-secret", "victim/ca")
		}},
		{name: "Ingress annotation naming another namespace", rule: "ingress-annotation-namespace", op: "create", obj: func(ns string) client.Object {
			return withAnnotation(ingressFor(ns, "authsecret", admissionHost), "nginx.ingress.kubernetes.io/auth-secret", "victim/htpasswd")
		}},
		{name: "Ingress annotation outside the allow-list", rule: "ingress-annotation", op: "create", obj: func(ns string) client.Object {
			return withAnnotation(ingressFor(ns, "traefik", admissionHost), "traefik.ingress.kubernetes.io/router.middlewares", "kube-system-admin@kubernetescrd")
		}},
		{name: "valid Ingress moved to another host", rule: "ingress-host", op: "update", obj: func(ns string) client.Object {
			return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}}
		}, mutate: func(o client.Object) { o.(*networkingv1.Ingress).Spec.Rules[0].Host = "pr-2.preview.example.dev" }},
		{name: "HTTPRoute for another host", rule: "route-hostname", op: "create", obj: func(ns string) client.Object {
			return route(ns, "HTTPRoute", "steal", []any{"www.example.com"}, allowedGateway)
		}},
		{name: "HTTPRoute without hostnames (every host of the listener)", rule: "route-hostname", op: "create", obj: func(ns string) client.Object {
			return route(ns, "HTTPRoute", "all", nil, allowedGateway)
		}},
		{name: "HTTPRoute attached to another Gateway", rule: "route-parent", op: "create", obj: func(ns string) client.Object {
			return route(ns, "HTTPRoute", "gw", []any{admissionHost}, "infra/internal")
		}},
		{name: "GRPCRoute for a wildcard", rule: "route-hostname", op: "create", obj: func(ns string) client.Object {
			return route(ns, "GRPCRoute", "grpc", []any{"*.preview.example.dev"}, allowedGateway)
		}},
		{name: "a Gateway of the namespace's own", rule: "gateway-create", op: "create", obj: func(ns string) client.Object {
			return gateway(ns)
		}},

		// Ways out through Services.
		{name: "NodePort Service", rule: "service-type", op: "create", obj: func(ns string) client.Object {
			return service(ns, "nodeport", corev1.ServiceTypeNodePort)
		}},
		{name: "LoadBalancer Service", rule: "service-type", op: "create", obj: func(ns string) client.Object {
			return service(ns, "lb", corev1.ServiceTypeLoadBalancer)
		}},
		{name: "ExternalName Service to the API server", rule: "service-external-name", op: "create", obj: func(ns string) client.Object {
			s := service(ns, "apiserver", corev1.ServiceTypeExternalName)
			s.Spec.ExternalName, s.Spec.Ports, s.Spec.Selector = "kubernetes.default.svc.cluster.local", nil, nil
			return s
		}},
		{name: "Service with externalIPs (CVE-2020-8554)", rule: "service-external-ips", op: "create", obj: func(ns string) client.Object {
			s := service(ns, "extip", corev1.ServiceTypeClusterIP)
			s.Spec.ExternalIPs = []string{"8.8.8.8"}
			return s
		}},
		{name: "hand-written Endpoints to another tenant's pod", rule: "endpoints", op: "create", obj: func(ns string) client.Object {
			return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "metadata", Namespace: ns},
				Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.10"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}
		}},
		{name: "hand-written EndpointSlice to another tenant's pod", rule: "endpoints", op: "create", obj: func(ns string) client.Object {
			return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "metadata", Namespace: ns,
				Labels: map[string]string{discoveryv1.LabelServiceName: "metadata"}}, AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.10"}}}}
		}},

		// The node and the neighbours.
		{name: "Pod mounting nfs", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			return podWith(ns, "nfs", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/exports"}})
		}},
		{name: "Deployment mounting gitRepo", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			return deploymentWith(ns, "gitrepo", corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "https://example.com/x.git"}}, nil)
		}},
		{name: "StatefulSet mounting iscsi", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "iscsi", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "iscsi"}}, Template: template("iscsi",
					corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 0}})}}
			return ss
		}},
		{name: "DaemonSet mounting rbd", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "rbd", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rbd"}}, Template: template("rbd",
					corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "tenant-b"}})}}
		}},
		{name: "Job mounting cephfs", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			tpl := template("cephfs", corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{Monitors: []string{"10.0.0.1:6789"}}})
			tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "cephfs", Namespace: ns}, Spec: batchv1.JobSpec{Template: tpl}}
		}},
		{name: "CronJob mounting glusterfs", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			tpl := template("gluster", corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "gluster", Path: "vol"}})
			tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "gluster", Namespace: ns}, Spec: batchv1.CronJobSpec{Schedule: "* * * * *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tpl}}}}
		}},
		{name: "ReplicaSet mounting flexVolume", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "flex", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "flex"}}, Template: template("flex",
					corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "example.com/driver"}})}}
		}},
		{name: "ReplicationController mounting nfs", rule: "pod-volume", op: "create", obj: func(ns string) client.Object {
			tpl := template("rc", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/"}})
			return &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: ns}, Spec: corev1.ReplicationControllerSpec{
				Selector: map[string]string{"app": "rc"}, Template: &tpl}}
		}},
		{name: "Deployment preempting with system-node-critical", rule: "pod-priority-class", op: "create", obj: func(ns string) client.Object {
			return deploymentWith(ns, "critical", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, func(s *corev1.PodSpec) {
				s.PriorityClassName = "system-node-critical"
			})
		}},
		{name: "Deployment running as the deployer", rule: "pod-service-account", op: "create", obj: func(ns string) client.Object {
			return deploymentWith(ns, "asdeployer", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, func(s *corev1.PodSpec) {
				s.ServiceAccountName = "catalyst-deployer"
			})
		}},
		{name: "PersistentVolumeClaim binding someone else's volume", rule: "pvc-volume-name", op: "create", obj: func(ns string) client.Object {
			c := claim(ns, "steal", allowedStorage)
			c.Spec.VolumeName = "pv-of-tenant-b"
			return c
		}},
		{name: "PersistentVolumeClaim of another storage class", rule: "pvc-storage-class", op: "create", obj: func(ns string) client.Object {
			return claim(ns, "premium", "premium-ssd")
		}},
		{name: "PersistentVolumeClaim with no class (binds any PersistentVolume without one)", rule: "pvc-storage-class", op: "create", obj: func(ns string) client.Object {
			return claim(ns, "classless", "")
		}},
		{name: "StatefulSet claim template naming a volume", rule: "pvc", op: "create", obj: func(ns string) client.Object {
			c := claim(ns, "data", allowedStorage)
			c.Spec.VolumeName = "pv-of-tenant-b"
			return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "claims", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "claims"}},
				Template: template("claims", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}), VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*c}}}
		}},

		// Identity.
		{name: "service-account-token Secret (a token that never expires)", rule: "secret-token", op: "create", obj: func(ns string) client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forever", Namespace: ns,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: "runner"}}, Type: corev1.SecretTypeServiceAccountToken}
		}},
		{name: "RoleBinding of slipway-catalyst-deployer to system:authenticated", rule: "rolebinding-role", op: "create", obj: func(ns string) client.Object {
			return roleBinding(ns, "everyone", catalyst.DefaultDeployerClusterRole, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"})
		}},
		{name: "RoleBinding to a ClusterRole outside the list", rule: "rolebinding-role", op: "create", obj: func(ns string) client.Object {
			return roleBinding(ns, "edit", "edit", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: ns})
		}},
		{name: "RoleBinding of an allowed ClusterRole to every user", rule: "rolebinding-subject", op: "create", obj: func(ns string) client.Object {
			return roleBinding(ns, "viewers", "view", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"})
		}},
		{name: "RoleBinding to a ServiceAccount of another namespace", rule: "rolebinding-subject", op: "create", obj: func(ns string) client.Object {
			return roleBinding(ns, "foreign", "view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "kube-system"})
		}},

		// The guard rails and the operator's own objects.
		{name: "a second ResourceQuota", rule: "guard-rail", op: "create", obj: func(ns string) client.Object {
			return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}}
		}},
		{name: "raise the ResourceQuota", rule: "guard-rail", op: "update", obj: func(ns string) client.Object {
			return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: catalyst.QuotaName, Namespace: ns}}
		}, mutate: func(o client.Object) {
			o.(*corev1.ResourceQuota).Spec.Hard[corev1.ResourcePods] = resource.MustParse("5000")
		}},
		{name: "delete the ResourceQuota", rule: "guard-rail", op: "delete", obj: func(ns string) client.Object {
			return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: catalyst.QuotaName, Namespace: ns}}
		}},
		{name: "delete the LimitRange", rule: "guard-rail", op: "delete", obj: func(ns string) client.Object {
			return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "catalyst-limits", Namespace: ns}}
		}},
		{name: "open the NetworkPolicy", rule: "guard-rail", op: "update", obj: func(ns string) client.Object {
			return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: catalyst.NetworkPolicyName, Namespace: ns}}
		}, mutate: func(o client.Object) {
			np := o.(*networkingv1.NetworkPolicy)
			np.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
		}},
		{name: "delete the NetworkPolicy", rule: "guard-rail", op: "delete", obj: func(ns string) client.Object {
			return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: catalyst.NetworkPolicyName, Namespace: ns}}
		}},
		{name: "an allow-all NetworkPolicy beside the operator's", rule: "guard-rail", op: "create", obj: func(ns string) client.Object {
			return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "allow-all", Namespace: ns}, Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, Egress: []networkingv1.NetworkPolicyEgressRule{{}}}}
		}},
		{name: "point the operator's Ingress at another host", rule: "operator-object|ingress-host", op: "update", obj: func(ns string) client.Object {
			return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: catalyst.IngressName, Namespace: ns}}
		}, mutate: func(o client.Object) { o.(*networkingv1.Ingress).Spec.Rules[0].Host = "www.example.com" }},
		{name: "relabel the operator's Ingress", rule: "operator-object", op: "update", obj: func(ns string) client.Object {
			return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: catalyst.IngressName, Namespace: ns}}
		}, mutate: func(o client.Object) { o.SetLabels(map[string]string{"hijacked": "true"}) }},
		{name: "delete the operator's Ingress", rule: "operator-object", op: "delete", obj: func(ns string) client.Object {
			return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: catalyst.IngressName, Namespace: ns}}
		}},
		{name: "change the deployer's RoleBinding", rule: "operator-object|rolebinding-role", op: "update", obj: func(ns string) client.Object {
			return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: deployerBinding, Namespace: ns}}
		}, mutate: func(o client.Object) { o.SetLabels(map[string]string{"hijacked": "true"}) }},
		{name: "delete the deployer's RoleBinding", rule: "operator-object", op: "delete", obj: func(ns string) client.Object {
			return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: deployerBinding, Namespace: ns}}
		}},
		{name: "overwrite a copied Secret", rule: "operator-object", op: "update", obj: func(ns string) client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: copiedSecret, Namespace: ns}}
		}, mutate: func(o client.Object) { o.(*corev1.Secret).StringData = map[string]string{"password": "attacker"} }},
		{name: "delete a copied Secret", rule: "operator-object", op: "delete", obj: func(ns string) client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: copiedSecret, Namespace: ns}}
		}},
		{name: "forge a copied Secret", rule: "operator-object", op: "create", obj: func(ns string) client.Object {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: ns, Labels: map[string]string{catalyst.LabelCopiedSecret: "true"}}}
		}},
		{name: "rewrite the namespace's admission parameters", rule: "params-object", op: "update", obj: func(ns string) client.Object {
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		}, mutate: func(o client.Object) {
			a := o.GetAnnotations()
			a[catalyst.PolicyServiceTypes] = "NodePort,LoadBalancer"
			o.SetAnnotations(a)
		}},
	}
}

// TestAdmission_RefusesEveryAttackForEveryIdentity: in a preview namespace with its parameters,
// every attack above is refused, with its rule named, for a human admin of the namespace, a pod's
// ServiceAccount bound to admin (with a real token), the deployer and a namespace cluster-admin,
// as a server-side dry run and as a real write, and nothing is left behind. Valid objects of the
// same kinds are admitted, the operator writes what it owns, a Deployment's pods are created and
// the namespace deletes cleanly.
func TestAdmission_RefusesEveryAttackForEveryIdentity(t *testing.T) {
	w := newAdmissionWorld(t)
	w.tenantWritesValidObjects(w.attackers[0])
	for _, a := range admissionAttacks() {
		t.Run(a.name, func(t *testing.T) {
			version := w.snapshot(t, a)
			for _, id := range w.attackers {
				for _, dry := range []bool{true, false} {
					by, err := refused(id, a.rule, w.try(a, id, dry))
					if err != nil {
						t.Errorf("%s (dry run %v): %v", id.name, dry, err)
						continue
					}
					if !dry {
						t.Logf("%s: refused by %s", id.name, by)
					}
				}
			}
			w.leftNothing(t, a, version)
		})
	}
	w.controlPlaneStillWorks()
}

// try makes the attack as id, as a server-side dry run or a real write.
func (w *admissionWorld) try(a attack, id identity, dry bool) error {
	var dryRun []string
	if dry {
		dryRun = []string{metav1.DryRunAll}
	}
	o := a.obj(w.ns)
	switch a.op {
	case "create":
		return id.c.Create(w.ctx, o, &client.CreateOptions{DryRun: dryRun})
	case "delete":
		return id.c.Delete(w.ctx, o, &client.DeleteOptions{DryRun: dryRun})
	default:
		if err := env.Client.Get(w.ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		a.mutate(o)
		return id.c.Update(w.ctx, o, &client.UpdateOptions{DryRun: dryRun})
	}
}

// snapshot is the resourceVersion of the object an update or delete attacks, "" for a create.
func (w *admissionWorld) snapshot(t *testing.T, a attack) string {
	t.Helper()
	if a.op == "create" {
		return ""
	}
	o := a.obj(w.ns)
	if err := env.Client.Get(w.ctx, client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
	return o.GetResourceVersion()
}

// leftNothing checks the attack left no trace: nothing created, the attacked object neither
// changed (its resourceVersion) nor deleted.
func (w *admissionWorld) leftNothing(t *testing.T, a attack, version string) {
	t.Helper()
	o := a.obj(w.ns)
	err := env.Client.Get(w.ctx, client.ObjectKeyFromObject(o), o)
	switch {
	case a.op == "create" && !apierrors.IsNotFound(err):
		t.Errorf("%s exists after the refused creates (%v)", o.GetName(), err)
	case a.op != "create" && err != nil:
		t.Errorf("%s is gone after the refused %ss: %v", o.GetName(), a.op, err)
	case a.op != "create" && o.GetResourceVersion() != version:
		t.Errorf("%s changed (resourceVersion %s, was %s) after the refused %ss", o.GetName(), o.GetResourceVersion(), version, a.op)
	}
}

// tenantWritesValidObjects: the admission policies admit what a preview may do, as a namespace
// admin: an Ingress for its host with an allowed annotation, a route on the allowed Gateway, a
// ClusterIP Service, a claim of the allowed class, a RoleBinding of view to its own
// ServiceAccount, and a Deployment. The route is written by the namespace cluster-admin: the
// admin ClusterRole grants nothing on Gateway API kinds.
func (w *admissionWorld) tenantWritesValidObjects(id identity) {
	w.t.Helper()
	ing := withAnnotation(validIngress(w.ns, "web"), "nginx.ingress.kubernetes.io/rewrite-target", "/")
	ing.Annotations["meta.helm.sh/release-namespace"] = w.ns
	for _, o := range []client.Object{
		ing,
		route(w.ns, "HTTPRoute", "web", []any{admissionHost}, allowedGateway),
		service(w.ns, "web", corev1.ServiceTypeClusterIP),
		claim(w.ns, "data", allowedStorage),
		roleBinding(w.ns, "web-view", "view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: w.ns}),
		deploymentWith(w.ns, "web", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, func(s *corev1.PodSpec) {
			s.PriorityClassName = previewPriority
		}),
	} {
		by := id
		if _, ok := o.(*unstructured.Unstructured); ok {
			by = w.attackers[len(w.attackers)-1]
		}
		if err := by.c.Create(w.ctx, o); err != nil {
			w.t.Fatalf("%s creating the valid %T %s: %v", by.name, o, o.GetName(), err)
		}
	}
}

// controlPlaneStillWorks: the Deployment's pods are created by the control plane (its template
// passed the policies); once the Project's list no longer holds the template's priority class,
// the Deployment can still be scaled (by the tenant, then the deployment controller updating its
// ReplicaSet), while a change of its template is judged by the narrowed list; and the namespace,
// claims with their protection finalizer included, deletes cleanly although its guard rails may
// be deleted by no one but the operator.
func (w *admissionWorld) controlPlaneStillWorks() {
	w.t.Helper()
	w.waitPods("web", 1)

	live := &corev1.Namespace{}
	if err := w.operator.Get(w.ctx, client.ObjectKey{Name: w.ns}, live); err != nil {
		w.t.Fatal(err)
	}
	base := live.DeepCopy()
	live.Annotations[catalyst.PolicyPriorityClasses] = ""
	if err := w.operator.Patch(w.ctx, live, client.MergeFrom(base)); err != nil {
		w.t.Fatal(err)
	}
	tenant, strict := w.attackers[0], w.attackers[len(w.attackers)-1]
	testenv.Eventually(w.ctx, w.t, "the narrowed list is enforced", func() (bool, error) {
		d := deploymentWith(w.ns, "probe", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, func(s *corev1.PodSpec) { s.PriorityClassName = previewPriority })
		err := strict.c.Create(w.ctx, d, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "(rule pod-priority-class)"), nil
	})
	dep := &appsv1.Deployment{}
	if err := env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "web"}, dep); err != nil {
		w.t.Fatal(err)
	}
	dep.Spec.Replicas = ptr.To[int32](2)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "web"}, dep); err != nil {
			return err
		}
		dep.Spec.Replicas = ptr.To[int32](2)
		return tenant.c.Update(w.ctx, dep)
	}); err != nil {
		w.t.Fatalf("scaling a Deployment whose template the rules admitted: %v", err)
	}
	// The deployment controller scales the ReplicaSet by updating it: admitted, its template is
	// unchanged. The pod it then creates is new, and refused under the narrowed list.
	testenv.Eventually(w.ctx, w.t, "the deployment controller scales the ReplicaSet to 2", func() (bool, error) {
		rss := &appsv1.ReplicaSetList{}
		if err := env.Client.List(w.ctx, rss, client.InNamespace(w.ns), client.MatchingLabels{"app": "web"}); err != nil {
			return false, err
		}
		return len(rss.Items) == 1 && ptr.Deref(rss.Items[0].Spec.Replicas, 0) == 2, nil
	})
	// The deployment controller keeps writing the status (the refused pod): retry on conflicts.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "web"}, dep); err != nil {
			return err
		}
		dep.Spec.Template.Annotations = map[string]string{"changed": "true"}
		return tenant.c.Update(w.ctx, dep)
	})
	if err == nil || !strings.Contains(err.Error(), "(rule pod-priority-class)") {
		w.t.Errorf("a template change under the narrowed list: %v, want rule pod-priority-class", err)
	}

	if err := env.Client.Delete(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}); err != nil {
		w.t.Fatal(err)
	}
	testenv.Eventually(w.ctx, w.t, "namespace "+w.ns+" is deleted", func() (bool, error) {
		err := env.Client.Get(w.ctx, client.ObjectKey{Name: w.ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// waitPods waits until the control plane has created n pods of app.
func (w *admissionWorld) waitPods(app string, n int) {
	w.t.Helper()
	testenv.Eventually(w.ctx, w.t, fmt.Sprintf("%d pods of %s", n, app), func() (bool, error) {
		pods := &corev1.PodList{}
		if err := env.Client.List(w.ctx, pods, client.InNamespace(w.ns), client.MatchingLabels{"app": app}); err != nil {
			return false, err
		}
		return len(pods.Items) >= n, nil
	})
}

func ingressFor(ns, name, host string) *networkingv1.Ingress {
	ing := validIngress(ns, name)
	ing.Spec.Rules[0].Host = host
	return ing
}

// validIngress routes the environment's host, of the allowed class, to Service web.
func validIngress(ns, name string) *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To("nginx"),
		Rules: []networkingv1.IngressRule{{Host: admissionHost, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		}}}},
	}}
}

func withAnnotation(ing *networkingv1.Ingress, k, v string) *networkingv1.Ingress {
	if ing.Annotations == nil {
		ing.Annotations = map[string]string{}
	}
	ing.Annotations[k] = v
	return ing
}

// route is a Gateway API route (kind HTTPRoute or GRPCRoute) with the hostnames, attached to
// parent (<namespace>/<name> of a Gateway).
func route(ns, kind, name string, hostnames []any, parent string) *unstructured.Unstructured {
	gwNS, gwName, _ := strings.Cut(parent, "/")
	spec := map[string]any{"parentRefs": []any{map[string]any{"name": gwName, "namespace": gwNS}}}
	if hostnames != nil {
		spec["hostnames"] = hostnames
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("gateway.networking.k8s.io/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func gateway(ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"gatewayClassName": "public",
		"listeners":        []any{map[string]any{"name": "http", "protocol": "HTTP", "port": int64(80), "hostname": "www.example.com"}},
	}}}
	u.SetAPIVersion("gateway.networking.k8s.io/v1")
	u.SetKind("Gateway")
	u.SetNamespace(ns)
	u.SetName("own")
	return u
}

func service(ns, name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{
		Type: typ, Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80}}}}
}

// template is a pod template running one container with one volume, fit for the restricted
// Pod Security level (so that only the admission policies can refuse it).
func template(app string, vol corev1.VolumeSource) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: vol}},
	}}
}

func podWith(ns, name string, vol corev1.VolumeSource) *corev1.Pod {
	tpl := template(name, vol)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tpl.Labels}, Spec: tpl.Spec}
}

func deploymentWith(ns, name string, vol corev1.VolumeSource, edit func(*corev1.PodSpec)) *appsv1.Deployment {
	tpl := template(name, vol)
	if edit != nil {
		edit(&tpl.Spec)
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: tpl}}
}

func claim(ns, name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PersistentVolumeClaimSpec{
		StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

func roleBinding(ns, name, clusterRole string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole}, Subjects: []rbacv1.Subject{subject}}
}

func defaultDenyPolicy(ns string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: catalyst.NetworkPolicyName, Namespace: ns,
		Labels: map[string]string{catalyst.LabelManagedBy: catalyst.ManagedByValue}},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
