package webapp

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	webappv1 "github.com/slipway-dev/slipway/api/webapp/v1"
)

func TestFirstDifference(t *testing.T) {
	for _, tc := range []struct {
		name       string
		want, have string
		diff       string
	}{
		{"equal", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, ""},
		{"extra fields in have are fine", `{"a":1}`, `{"a":1,"defaulted":true}`, ""},
		{"changed scalar", `{"a":{"b":1}}`, `{"a":{"b":2}}`, ".a.b"},
		{"missing field", `{"a":{"b":1}}`, `{"a":{}}`, ".a.b"},
		{"false is not absent", `{"a":false}`, `{}`, ".a"},
		{"zero number is not absent", `{"a":0}`, `{}`, ".a"},
		{"empty string matches absent", `{"a":""}`, `{}`, ""},
		{"empty map matches absent", `{"a":{}}`, `{}`, ""},
		{"named elements match by name", `{"l":[{"name":"x","v":1},{"name":"y","v":2}]}`, `{"l":[{"name":"y","v":2},{"name":"x","v":1}]}`, ""},
		{"named element missing", `{"l":[{"name":"x","v":1}]}`, `{"l":[{"name":"y","v":1}]}`, ".l[0].name"},
		{"named element changed", `{"l":[{"name":"x","v":1}]}`, `{"l":[{"name":"x","v":3}]}`, ".l[0].v"},
		{"extra elements in have are fine", `{"l":[{"name":"x"}]}`, `{"l":[{"name":"x"},{"name":"z"}]}`, ""},
		{"unnamed elements by position", `{"l":[{"v":1}]}`, `{"l":[{"v":2}]}`, ".l[0].v"},
		{"scalars by membership", `{"l":["b"]}`, `{"l":["a","b"]}`, ""},
		{"scalar missing", `{"l":["c"]}`, `{"l":["a","b"]}`, ".l[0]"},
		{"type mismatch", `{"a":{"b":1}}`, `{"a":"s"}`, ".a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstDifference(decode(t, tc.want), decode(t, tc.have), ""); got != tc.diff {
				t.Errorf("firstDifference = %q, want %q", got, tc.diff)
			}
		})
	}
}

// TestDesiredDeployment_MatchesItsOwnResult: a Deployment as the API server returns it after the
// apply (defaults filled in, quantities canonical, empty env values dropped) holds everything
// the desired one sets, so the next reconcile sends nothing.
func TestDesiredDeployment_MatchesItsOwnResult(t *testing.T) {
	app := testApp()
	desired, err := desiredDeployment(app, 600)
	if err != nil {
		t.Fatal(err)
	}
	live := &appsv1.Deployment{}
	if err := convert(desired, live); err != nil {
		t.Fatal(err)
	}
	// What the API server adds.
	live.UID = "live"
	live.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	c := &live.Spec.Template.Spec.Containers[0]
	c.ImagePullPolicy = corev1.PullIfNotPresent
	c.TerminationMessagePath = "/dev/termination-log"
	c.ReadinessProbe.TimeoutSeconds = 1
	c.ReadinessProbe.HTTPGet.Scheme = corev1.URISchemeHTTP
	live.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
	if d, err := difference(desired, live); err != nil || d != "" {
		t.Fatalf("difference = %q (%v), want none", d, err)
	}

	for name, edit := range map[string]func(*appsv1.Deployment){
		"image":          func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "other:1" },
		"replicas":       func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](9) },
		"probe removed":  func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].LivenessProbe = nil },
		"env changed":    func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[0].Value = "debug" },
		"owner removed":  func(d *appsv1.Deployment) { d.OwnerReferences = nil },
		"label changed":  func(d *appsv1.Deployment) { d.Labels[LabelInstance] = "x" },
		"hash changed":   func(d *appsv1.Deployment) { d.Annotations[AnnotationSpecHash] = "old" },
		"token mounted":  func(d *appsv1.Deployment) { d.Spec.Template.Spec.AutomountServiceAccountToken = nil },
		"secret removed": func(d *appsv1.Deployment) { d.Spec.Template.Spec.ImagePullSecrets = nil },
	} {
		edited := live.DeepCopy()
		edit(edited)
		if d, err := difference(desired, edited); err != nil || d == "" {
			t.Errorf("%s: difference = %q (%v), want one", name, d, err)
		}
	}
}

// TestDesiredDeployment_SpecHash: the hash moves with what the pods run and not with replicas, so
// a removed field is still applied away and scaling is told apart from a rollout.
func TestDesiredDeployment_SpecHash(t *testing.T) {
	hash := func(change func(*webappv1.WebApp)) string {
		app := testApp()
		change(app)
		d, err := desiredDeployment(app, 600)
		if err != nil {
			t.Fatal(err)
		}
		return d.Annotations[AnnotationSpecHash]
	}
	base := hash(func(*webappv1.WebApp) {})
	if base == "" || base != hash(func(*webappv1.WebApp) {}) {
		t.Fatal("the hash is empty or not stable")
	}
	if hash(func(a *webappv1.WebApp) { a.Spec.Replicas = ptr.To[int32](7) }) != base {
		t.Error("replicas changed the hash")
	}
	// The default level writes what every WebApp had before the field: an upgrade rolls no pod.
	if hash(func(a *webappv1.WebApp) { a.Spec.PodSecurity = webappv1.PodSecurityBaseline }) != base {
		t.Error("podSecurity baseline changed the hash")
	}
	for name, change := range map[string]func(*webappv1.WebApp){
		"env removed":      func(a *webappv1.WebApp) { a.Spec.Env = nil },
		"probe removed":    func(a *webappv1.WebApp) { a.Spec.HealthCheckPath = "" },
		"resources":        func(a *webappv1.WebApp) { a.Spec.Resources = corev1.ResourceRequirements{} },
		"image":            func(a *webappv1.WebApp) { a.Spec.Image = "nginx:1.27" },
		"port":             func(a *webappv1.WebApp) { a.Spec.Port = 81 },
		"pull secrets off": func(a *webappv1.WebApp) { a.Spec.ImagePullSecrets = nil },
		"restricted":       func(a *webappv1.WebApp) { a.Spec.PodSecurity = webappv1.PodSecurityRestricted },
	} {
		if hash(change) == base {
			t.Errorf("%s: the hash did not change", name)
		}
	}
}

func TestDesiredService(t *testing.T) {
	app := testApp()
	s, err := desiredService(app)
	if err != nil {
		t.Fatal(err)
	}
	live := &corev1.Service{}
	if err := convert(s, live); err != nil {
		t.Fatal(err)
	}
	if live.Spec.Type != corev1.ServiceTypeClusterIP || live.Spec.Ports[0].Port != 8080 ||
		live.Spec.Ports[0].TargetPort != intstr.FromString(PortName) || live.Spec.Selector[LabelInstance] != "shop" {
		t.Errorf("service = %+v", live.Spec)
	}
	live.UID = "live"
	live.Spec.ClusterIP = "10.0.0.1"
	live.Spec.SessionAffinity = corev1.ServiceAffinityNone
	if d, err := difference(s, live); err != nil || d != "" {
		t.Errorf("difference = %q (%v), want none", d, err)
	}
	live.Spec.Type = corev1.ServiceTypeNodePort
	if d, _ := difference(s, live); d != ".spec.type" {
		t.Errorf("difference = %q, want .spec.type", d)
	}
}

func testApp() *webappv1.WebApp {
	return &webappv1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns", UID: "uid-1"},
		Spec: webappv1.WebAppSpec{
			Image:    "nginx:1.25",
			Replicas: ptr.To[int32](3),
			Port:     8080,
			Env:      []corev1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "EMPTY"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.5")},
			},
			HealthCheckPath:  "/healthz",
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
		},
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := convert(jsonRaw(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

type jsonRaw string

func (r jsonRaw) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestDesiredDeployment_PodSecurityRestricted: restricted adds what the Pod Security Standard
// "restricted" asks beyond baseline (a non-root user, every capability dropped) to what every
// WebApp has (RuntimeDefault seccomp, no privilege escalation).
func TestDesiredDeployment_PodSecurityRestricted(t *testing.T) {
	app := testApp()
	app.Spec.PodSecurity = webappv1.PodSecurityRestricted
	desired, err := desiredDeployment(app, 600)
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := convert(desired, d); err != nil {
		t.Fatal(err)
	}
	pod := d.Spec.Template.Spec
	if sc := pod.SecurityContext; sc == nil || !ptr.Deref(sc.RunAsNonRoot, false) || sc.SeccompProfile == nil ||
		sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v, want runAsNonRoot and RuntimeDefault seccomp", sc)
	}
	c := pod.Containers[0].SecurityContext
	if c == nil || ptr.Deref(c.AllowPrivilegeEscalation, true) || c.Capabilities == nil || len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v, want no privilege escalation and every capability dropped", c)
	}
}
