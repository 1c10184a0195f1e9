//go:build e2e

package catalyst_test

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1alpha1 "github.com/slipway-dev/slipway/api/catalyst/v1alpha1"
	"github.com/slipway-dev/slipway/internal/controller/catalyst"
	"github.com/slipway-dev/slipway/internal/testenv"
)

// The credentials of the attack on the environment namespace: none may be found there.
const (
	pushPassword = "s3cret-push-password"
	pullPassword = "pull-only-password"
	tlsKeyMarker = "wildcard-private-key-material"
)

// TestSecurity_CredentialsStayInTheirBox: a Project with push credentials, pull-only credentials,
// git credentials and a wildcard TLS Secret gets an environment built and Ready; every Secret of
// its namespace, decoded, holds none of the push password, the git password and the TLS key, only
// the pull-only credentials. A namespace as an earlier version left it (a pull Secret made from the
// push credentials, a copy of the wildcard key) loses both on the next reconcile, and with no
// pullSecretRef no pull Secret is left, on the default ServiceAccount either. The build namespace
// refuses every ingress and every egress but DNS and public HTTPS (its NetworkPolicy, asserted:
// kwok's pods have no network to try it with) and has a quota. The build Job's container that
// runs the Dockerfile holds no credential: no Secret volume, no Secret variable, no ServiceAccount
// token (kwok runs no container: the pod's spec is what is asserted).
func TestSecurity_CredentialsStayInTheirBox(t *testing.T) {
	f := newFixture(t, withRegistryAuth("pusher", pushPassword))
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-push", Namespace: f.team},
		StringData: map[string]string{"username": "pusher", "password": pushPassword}})
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-pull", Namespace: f.team},
		StringData: map[string]string{"username": "puller", "password": pullPassword}})
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wildcard-preview", Namespace: f.team}, Type: corev1.SecretTypeTLS,
		StringData: map[string]string{"tls.crt": "certificate for *." + previewDomain, "tls.key": tlsKeyMarker}})
	p := f.project(func(p *catalystv1alpha1.Project) {
		p.Spec.Registry.SecretRef = &catalystv1alpha1.SecretReference{Name: "registry-push"}
		p.Spec.Registry.PullSecretRef = &catalystv1alpha1.SecretReference{Name: "registry-pull"}
		p.Spec.Preview.TLS = &catalystv1alpha1.TLSSpec{WildcardSecretRef: &catalystv1alpha1.SecretReference{Name: "wildcard-preview"}}
	})
	f.create(p)
	f.start()
	f.waitProjectReady(p)
	e := f.createEnvironment(f.environment("pr-box", f.head))
	got := f.waitReady(e)
	ns := got.Status.Namespace
	if len(f.buildJobs(e)) != 1 {
		t.Fatalf("the image was not built by a Job")
	}
	if found := f.secretsHolding(ns, pullPassword); len(found) != 1 || found[0] != catalyst.PullSecretName {
		t.Errorf("the pull-only credentials are in %v, want only in %s", found, catalyst.PullSecretName)
	}
	f.checkNoCredentialIn(ns)
	job := f.buildJobs(e)[0]
	checkBuildNamespaceBoxed(t, f, job.Spec.Template.Labels)
	checkBuildContainerHoldsNothing(t, &job.Spec.Template.Spec)

	// A namespace as an earlier version left it: the pull Secret made from the push credentials,
	// the wildcard key copied, both recorded on the namespace.
	f.plantEarlierCopies(ns)
	f.updateProject(p, func(p *catalystv1alpha1.Project) { p.Spec.Registry.PullSecretRef = nil })
	testenv.Eventually(f.ctx, t, "the earlier version's copies are deleted", func() (bool, error) {
		var list corev1.SecretList
		if err := f.c.List(f.ctx, &list, client.InNamespace(ns), client.MatchingLabels{catalyst.LabelCopiedSecret: "true"}); err != nil {
			return false, err
		}
		var sa corev1.ServiceAccount
		if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &sa); err != nil {
			return false, err
		}
		return len(list.Items) == 0 && len(sa.ImagePullSecrets) == 0, nil
	})
	f.checkNoCredentialIn(ns)
	if found := f.secretsHolding(ns, pullPassword); len(found) != 0 {
		t.Errorf("with no pullSecretRef, pull credentials are still in %v", found)
	}
}

// plantEarlierCopies writes into ns what an earlier version of the operator left there.
func (f *fixture) plantEarlierCopies(ns string) {
	f.t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte("pusher:" + pushPassword))
	cfg := `{"auths":{"` + f.reg.Host + `":{"auth":"` + auth + `"}}}`
	pull := &corev1.Secret{}
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: catalyst.PullSecretName}, pull); err != nil {
		f.t.Fatal(err)
	}
	pull.Data = map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}
	if err := f.c.Update(f.ctx, pull); err != nil {
		f.t.Fatal(err)
	}
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wildcard-preview", Namespace: ns,
		Labels: map[string]string{catalyst.LabelCopiedSecret: "true"}}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("certificate"), "tls.key": []byte(tlsKeyMarker)}})
	nsObj := &corev1.Namespace{}
	if err := f.c.Get(f.ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		f.t.Fatal(err)
	}
	nsObj.Annotations[catalyst.AnnotationCopiedSecrets] = "wildcard-preview," + catalyst.PullSecretName
	if err := f.c.Update(f.ctx, nsObj); err != nil {
		f.t.Fatal(err)
	}
}

// checkNoCredentialIn lists every Secret of ns and decodes each: none may hold the push password,
// the git password or a TLS private key.
func (f *fixture) checkNoCredentialIn(ns string) {
	f.t.Helper()
	for _, secret := range []string{pushPassword, gitPassword, tlsKeyMarker} {
		if found := f.secretsHolding(ns, secret); len(found) > 0 {
			f.t.Errorf("namespace %s: Secrets %v hold a credential that must stay out (%s...)", ns, found, secret[:6])
		}
	}
	var list corev1.SecretList
	if err := f.c.List(f.ctx, &list, client.InNamespace(ns)); err != nil {
		f.t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Type == corev1.SecretTypeTLS || len(s.Data[corev1.TLSPrivateKeyKey]) > 0 {
			f.t.Errorf("namespace %s: Secret %s holds a TLS private key", ns, s.Name)
		}
	}
}

// secretsHolding names the Secrets of ns whose data, decoded (docker config auths included),
// contains value.
func (f *fixture) secretsHolding(ns, value string) []string {
	f.t.Helper()
	var list corev1.SecretList
	if err := f.c.List(f.ctx, &list, client.InNamespace(ns)); err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		for _, v := range s.Data {
			if strings.Contains(decodedText(v), value) {
				out = append(out, s.Name)
				break
			}
		}
	}
	return out
}

// decodedText is v with the auth fields of a docker config decoded beside it.
func decodedText(v []byte) string {
	text := string(v)
	var cfg struct {
		Auths map[string]struct {
			Auth     string `json:"auth"`
			Password string `json:"password"`
		} `json:"auths"`
	}
	if json.Unmarshal(v, &cfg) == nil {
		for _, a := range cfg.Auths {
			dec, _ := base64.StdEncoding.DecodeString(a.Auth)
			text += "\n" + string(dec) + "\n" + a.Password
		}
	}
	return text
}

func (f *fixture) getProject(p *catalystv1alpha1.Project) *catalystv1alpha1.Project {
	f.t.Helper()
	out := &catalystv1alpha1.Project{}
	if err := f.c.Get(f.ctx, client.ObjectKeyFromObject(p), out); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// checkBuildNamespaceBoxed asserts the build namespace's NetworkPolicy as installed: it selects the
// build pod (labels), denies all ingress, and lets out DNS to kube-system and HTTPS to public
// addresses only (no private range, no link-local metadata address); and its quota.
func checkBuildNamespaceBoxed(t *testing.T, f *fixture, podLabels map[string]string) {
	t.Helper()
	var np networkingv1.NetworkPolicy
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: buildNS, Name: "catalyst-builds"}, &np); err != nil {
		t.Fatalf("the build namespace has no NetworkPolicy: %v", err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || !sel.Matches(labels.Set(podLabels)) {
		t.Errorf("NetworkPolicy selector %v does not select the build pod (%v)", np.Spec.PodSelector, podLabels)
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(np.Spec.Ingress) != 0 {
		t.Errorf("NetworkPolicy types %v with %d ingress rules: want every ingress and egress denied but what is listed", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	if len(np.Spec.Egress) != 2 {
		t.Fatalf("NetworkPolicy egress %+v: want DNS and public HTTPS alone", np.Spec.Egress)
	}
	dns, https := np.Spec.Egress[0], np.Spec.Egress[1]
	if len(dns.To) != 1 || dns.To[0].NamespaceSelector == nil || dns.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "kube-system" ||
		dns.To[0].IPBlock != nil || len(dns.Ports) != 2 || dns.Ports[0].Port.IntValue() != 53 || dns.Ports[1].Port.IntValue() != 53 {
		t.Errorf("DNS rule %+v: want kube-system on port 53 alone", dns)
	}
	if len(https.To) != 1 || https.To[0].IPBlock == nil || len(https.Ports) != 1 || https.Ports[0].Port.IntValue() != 443 {
		t.Fatalf("HTTPS rule %+v: want one address block on port 443", https)
	}
	for _, private := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "127.0.0.0/8", "100.64.0.0/10"} {
		if !slices.Contains(https.To[0].IPBlock.Except, private) {
			t.Errorf("HTTPS rule lets builds reach %s", private)
		}
	}
	var q corev1.ResourceQuota
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: buildNS, Name: "catalyst-builds"}, &q); err != nil || q.Spec.Hard.Pods().IsZero() {
		t.Errorf("the build namespace has no pod quota: %v", err)
	}
}

// checkBuildContainerHoldsNothing asserts that the container running the pull request's
// Dockerfile can read no credential: no Secret volume or projection, no variable from a Secret,
// no ServiceAccount token; and that the credentials reach only the containers that need them.
func checkBuildContainerHoldsNothing(t *testing.T, pod *corev1.PodSpec) {
	t.Helper()
	secretVolumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Secret != nil || v.Projected != nil {
			secretVolumes[v.Name] = true
		}
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the build pod mounts a ServiceAccount token")
	}
	var build *corev1.Container
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		if c.Name == "build" {
			build = &c
		}
		var reads []string
		for _, m := range c.VolumeMounts {
			if secretVolumes[m.Name] {
				reads = append(reads, m.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				reads = append(reads, "env "+e.Name)
			}
		}
		if len(c.EnvFrom) > 0 {
			reads = append(reads, "envFrom")
		}
		want := map[string]string{"fetch": "git-credentials", "push": "registry-credentials"}[c.Name]
		if got := strings.Join(reads, ","); got != want {
			t.Errorf("container %s reads credentials %q, want %q", c.Name, got, want)
		}
	}
	if build == nil {
		t.Fatal("no build container")
	}
	if text := toJSON(t, build); strings.Contains(text, "/credentials") || strings.Contains(text, "DOCKER_CONFIG") {
		t.Errorf("the build container names a credential: %s", text)
	}
	// Each credential volume projects its own keys of the build Secret, never the whole of it.
	for _, v := range pod.Volumes {
		if v.Secret != nil && len(v.Secret.Items) == 0 {
			t.Errorf("volume %s mounts the whole build Secret", v.Name)
		}
	}
}
