// Tests of the manager's chart (charts/slipway-manager): what it renders in each database mode,
// what it refuses, and that `manager serve` and `manager migrate` accept the arguments it writes.
// manager_install_test.go installs it into the full control plane and runs the manager with them.
package charts_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/slipway-dev/slipway/internal/manager/app"
	"github.com/slipway-dev/slipway/internal/manager/approvals"
)

const (
	managerChartDir = "slipway-manager"
	// The test release: its name holds the chart's, so the objects are named slipway-manager.
	managerRelease, managerNS = "slipway-manager", "slipway-manager-system"
	// managerBase names the Secrets every install needs (SQLite, the default engine).
	managerBase = "encryptionKeys: {secretName: manager-keys}\nauth: {jwtSecret: {name: manager-jwt}}\ntls: {secretName: manager-tls}\n"
	// managerPG is managerBase with PostgreSQL.
	managerPG = "database: {engine: postgres, postgres: {urlSecret: {name: manager-db}}}\n"
)

// TestManagerChart_SQLite renders the SQLite mode: one replica replaced with Recreate, the data
// volume from the chart's claim (kept on uninstall) or one of yours, the migration first, the
// restricted security context, probes on /health, the Service and a ServiceAccount without token.
func TestManagerChart_SQLite(t *testing.T) {
	objs := renderManager(t, managerBase)
	d := deployment(t, objs, managerRelease)
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("%d replicas, strategy %+v: want one replica, Recreate", *d.Spec.Replicas, d.Spec.Strategy)
	}
	if has(objs, "PodDisruptionBudget", "") {
		t.Error("a PodDisruptionBudget for the one replica would block every node drain")
	}
	var pvc corev1.PersistentVolumeClaim
	convert(t, find(t, objs, "PersistentVolumeClaim", "slipway-manager-data"), &pvc)
	if pvc.Annotations["helm.sh/resource-policy"] != "keep" || pvc.Spec.StorageClassName != nil ||
		!slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) ||
		pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim %+v: want 1Gi ReadWriteOnce of the default class, kept on uninstall", pvc)
	}
	if claim := volume(t, d, "data").PersistentVolumeClaim; claim == nil || claim.ClaimName != "slipway-manager-data" {
		t.Errorf("data volume %+v, want the chart's claim", claim)
	}
	pod := d.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != "migrate" {
		t.Fatalf("init containers %+v, want migrate", pod.InitContainers)
	}
	initC, c := pod.InitContainers[0], pod.Containers[0]
	db := "--database-path=/var/lib/slipway-manager/manager.db"
	if !slices.Equal(initC.Args, []string{"migrate", db}) || c.Args[0] != "serve" || !slices.Contains(c.Args, db) || !slices.Contains(c.Args, "--migrate=false") {
		t.Errorf("args: migrate %q, serve %q", initC.Args, c.Args)
	}
	for _, ctr := range []corev1.Container{initC, c} {
		if !mounts(ctr, "data", "/var/lib/slipway-manager") || !mounts(ctr, "tmp", "/tmp") || envNamed(ctr, "SLIPWAY_MANAGER_DATABASE_URL") != nil {
			t.Errorf("container %s mounts %+v env %+v: want the data volume and /tmp, no database URL", ctr.Name, ctr.VolumeMounts, ctr.Env)
		}
	}
	checkRestricted(t, d)
	checkProbes(t, c, corev1.URISchemeHTTPS)
	var sa corev1.ServiceAccount
	convert(t, find(t, objs, "ServiceAccount", managerRelease), &sa)
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken || pod.ServiceAccountName != sa.Name {
		t.Errorf("ServiceAccount %+v, pod's %s: want the chart's, its token not mounted", sa, pod.ServiceAccountName)
	}
	svc := find(t, objs, "Service", managerRelease)
	selects(t, svc, d)
	checkServicePorts(t, svc, map[string]int64{"https": 443, "metrics": 9464})
	for _, kind := range []string{"Ingress", "ServiceMonitor", "Certificate", "Secret"} {
		if has(objs, kind, "") {
			t.Errorf("%s rendered by default", kind)
		}
	}

	t.Run("a claim of your own", func(t *testing.T) {
		objs := renderManager(t, managerBase, "database: {sqlite: {existingClaim: mine}}\n")
		if has(objs, "PersistentVolumeClaim", "") {
			t.Error("the chart made a claim beside the existing one")
		}
		if claim := volume(t, deployment(t, objs, managerRelease), "data").PersistentVolumeClaim; claim == nil || claim.ClaimName != "mine" {
			t.Errorf("data volume %+v, want the claim mine", claim)
		}
	})
	t.Run("storage class and no keep", func(t *testing.T) {
		for class, want := range map[string]string{`""`: "", "fast": "fast"} {
			var pvc corev1.PersistentVolumeClaim
			convert(t, find(t, renderManager(t, managerBase, "database: {sqlite: {storageClassName: "+class+", keepOnUninstall: false, size: 5Gi}}\n"),
				"PersistentVolumeClaim", ""), &pvc)
			if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != want || pvc.Annotations["helm.sh/resource-policy"] != "" ||
				pvc.Spec.Resources.Requests.Storage().String() != "5Gi" {
				t.Errorf("storageClassName %s: claim %+v", class, pvc)
			}
		}
	})
}

// TestManagerChart_PostgreSQL renders the PostgreSQL mode: three replicas by default, rolling
// updates that never go below them, a PodDisruptionBudget and anti-affinity over the pods, the URL
// from its Secret in both containers (the migration's own URL when given), no volume.
func TestManagerChart_PostgreSQL(t *testing.T) {
	objs := renderManager(t, managerBase, managerPG)
	d := deployment(t, objs, managerRelease)
	ru := d.Spec.Strategy.RollingUpdate
	if *d.Spec.Replicas != 3 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil ||
		*ru.MaxUnavailable != intstr.FromInt32(0) || *ru.MaxSurge != intstr.FromInt32(1) {
		t.Errorf("%d replicas, strategy %+v: want 3, RollingUpdate with none unavailable", *d.Spec.Replicas, d.Spec.Strategy)
	}
	var pdb policyv1.PodDisruptionBudget
	convert(t, find(t, objs, "PodDisruptionBudget", managerRelease), &pdb)
	if *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || !equality.Semantic.DeepEqual(pdb.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget %+v: want one unavailable of the manager's pods", pdb.Spec)
	}
	aa := d.Spec.Template.Spec.Affinity
	if aa == nil || aa.PodAntiAffinity == nil || len(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		!equality.Semantic.DeepEqual(aa.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("affinity %+v: want the replicas spread over nodes", aa)
	}
	if has(objs, "PersistentVolumeClaim", "") || slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" }) {
		t.Error("a data volume with PostgreSQL")
	}
	for _, ctr := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
		checkSecretEnv(t, ctr, "SLIPWAY_MANAGER_DATABASE_URL", "manager-db", "url")
		if slices.ContainsFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--database-") }) {
			t.Errorf("%s args %q: the URL is a secret, never an argument", ctr.Name, ctr.Args)
		}
	}
	checkRestricted(t, d)

	t.Run("the migration's own URL", func(t *testing.T) {
		d := deployment(t, renderManager(t, managerBase, managerPG, "database: {postgres: {migrationURLSecret: {name: manager-db-owner, key: owner-url}}}\n"), managerRelease)
		checkSecretEnv(t, d.Spec.Template.Spec.InitContainers[0], "SLIPWAY_MANAGER_DATABASE_URL", "manager-db-owner", "owner-url")
		checkSecretEnv(t, d.Spec.Template.Spec.Containers[0], "SLIPWAY_MANAGER_DATABASE_URL", "manager-db", "url")
	})
	t.Run("replicas, budget and spreading", func(t *testing.T) {
		objs := renderManager(t, managerBase, managerPG, "replicas: 5\npodAntiAffinity: hard\n")
		d := deployment(t, objs, managerRelease)
		if aa := d.Spec.Template.Spec.Affinity; *d.Spec.Replicas != 5 || aa == nil || len(aa.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
			t.Errorf("%d replicas, affinity %+v: want 5 on distinct nodes", *d.Spec.Replicas, aa)
		}
		find(t, objs, "PodDisruptionBudget", managerRelease)
		for _, values := range []string{"replicas: 1\n", "podDisruptionBudget: {enabled: false}\n"} {
			if has(renderManager(t, managerBase, managerPG, values), "PodDisruptionBudget", "") {
				t.Errorf("values %q: a PodDisruptionBudget", values)
			}
		}
		if d := deployment(t, renderManager(t, managerBase, managerPG, "podAntiAffinity: \"\"\n"), managerRelease); d.Spec.Template.Spec.Affinity != nil {
			t.Errorf("podAntiAffinity \"\": affinity %+v", d.Spec.Template.Spec.Affinity)
		}
	})
}

// TestManagerChart_OptionalParts: plain HTTP behind a proxy, cert-manager's certificate, the
// Ingress, the ServiceMonitor, metrics off, approval mail with its password and CA, a digest.
func TestManagerChart_OptionalParts(t *testing.T) {
	t.Run("plain HTTP behind an Ingress", func(t *testing.T) {
		objs := renderManager(t, "encryptionKeys: {secretName: k}\nauth: {jwtSecret: {name: j}}\ntls: {insecureHTTP: true}\n",
			"ingress: {enabled: true, className: nginx, hosts: [manager.example.com], tls: [{secretName: ex, hosts: [manager.example.com]}]}\n")
		d := deployment(t, objs, managerRelease)
		c := d.Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--insecure-http=true") || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--tls-") }) ||
			slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "tls" }) {
			t.Errorf("args %q: want --insecure-http and no TLS files", c.Args)
		}
		checkProbes(t, c, corev1.URISchemeHTTP)
		checkServicePorts(t, find(t, objs, "Service", managerRelease), map[string]int64{"http": 443, "metrics": 9464})
		var ing networkingv1.Ingress
		convert(t, find(t, objs, "Ingress", managerRelease), &ing)
		if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "manager.example.com" || *ing.Spec.IngressClassName != "nginx" ||
			ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != managerRelease || ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name != "http" ||
			len(ing.Spec.TLS) != 1 {
			t.Errorf("Ingress %+v", ing.Spec)
		}
	})
	t.Run("cert-manager and the ServiceMonitor", func(t *testing.T) {
		objs := renderManager(t, "encryptionKeys: {secretName: k}\nauth: {oidc: {issuerURL: https://id.example.com, audience: slipway}}\n",
			"tls: {certManager: {enabled: true, issuerRef: {kind: ClusterIssuer, name: ca}}}\nmetrics: {serviceMonitor: {enabled: true, labels: {release: prom}}}\n",
			"ingress: {enabled: true, hosts: [manager.example.com]}\n")
		cert := find(t, objs, "Certificate", "slipway-manager-tls")
		names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
		if want := []string{"slipway-manager", "slipway-manager." + managerNS, "slipway-manager." + managerNS + ".svc",
			"slipway-manager." + managerNS + ".svc.cluster.local", "manager.example.com"}; !slices.Equal(names, want) {
			t.Errorf("certificate names %v, want %v", names, want)
		}
		if s := volume(t, deployment(t, objs, managerRelease), "tls").Secret; s == nil || s.SecretName != "slipway-manager-tls" {
			t.Errorf("tls volume %+v: want the Certificate's Secret", s)
		}
		sm := find(t, objs, "ServiceMonitor", managerRelease)
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		port, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if svc := find(t, objs, "Service", managerRelease); !labelsMatch(sel, svc.GetLabels()) || len(port) != 1 || port[0].(map[string]any)["port"] != "metrics" ||
			sm.GetLabels()["release"] != "prom" {
			t.Errorf("ServiceMonitor selects %v port %v: want the Service's metrics port", sel, port)
		}
	})
	t.Run("metrics off", func(t *testing.T) {
		objs := renderManager(t, managerBase, "metrics: {enabled: false, serviceMonitor: {enabled: true}}\n")
		c := deployment(t, objs, managerRelease).Spec.Template.Spec.Containers[0]
		if !slices.Contains(c.Args, "--metrics-address=0") || slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" }) || has(objs, "ServiceMonitor", "") {
			t.Errorf("args %q ports %+v: want metrics off everywhere", c.Args, c.Ports)
		}
		checkServicePorts(t, find(t, objs, "Service", managerRelease), map[string]int64{"https": 443})
	})
	t.Run("approval mail", func(t *testing.T) {
		d := deployment(t, renderManager(t, managerBase, "publicURL: https://manager.example.com\n",
			"mail: {smtpAddress: \"smtp.example.com:587\", from: \"Slipway <slipway@example.com>\", recipients: \"Admin=a@example.com\", username: slipway, passwordSecret: {name: smtp}, caSecret: {name: smtp-ca}}\n"), managerRelease)
		c := d.Spec.Template.Spec.Containers[0]
		checkSecretEnv(t, c, "SLIPWAY_MANAGER_SMTP_PASSWORD", "smtp", "password")
		if !mounts(c, "smtp-ca", "/etc/slipway-manager/smtp-ca") || volume(t, d, "smtp-ca").Secret.SecretName != "smtp-ca" {
			t.Errorf("mounts %+v: want the SMTP CA", c.VolumeMounts)
		}
	})
	t.Run("image by digest", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("ab", 32)
		d := deployment(t, renderManager(t, managerBase, "image: {repository: registry.example.com/slipway-manager, tag: \""+digest+"\"}\n"), managerRelease)
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			if c.Image != "registry.example.com/slipway-manager@"+digest {
				t.Errorf("%s image %s", c.Name, c.Image)
			}
		}
	})
}

// TestManagerChart_SecretsByReferenceOnly: whatever the values, the chart renders no Secret, and
// every Secret its pods read (volumes, environment) is one the values named.
func TestManagerChart_SecretsByReferenceOnly(t *testing.T) {
	for _, tc := range managerArgCases {
		objs := renderManager(t, tc.values...)
		if has(objs, "Secret", "") {
			t.Errorf("%s: a Secret rendered", tc.name)
		}
		values := strings.Join(tc.values, "")
		d := deployment(t, objs, managerRelease)
		named := func(where, name string) {
			if !strings.Contains(values, "name: "+name) && !strings.Contains(values, "secretName: "+name) && name != "slipway-manager-tls" {
				t.Errorf("%s: %s reads Secret %s, which the values do not name", tc.name, where, name)
			}
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				named("volume "+v.Name, v.Secret.SecretName)
			}
		}
		for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					named(c.Name+" $"+e.Name, e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
	}
}

// TestManagerChart_RefusesWhatTheManagerWouldRefuse: values the manager would not start with, or
// that would lose data, fail the install with what to do instead; types and enums the schema
// refuses.
func TestManagerChart_RefusesWhatTheManagerWouldRefuse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"SQLite with two replicas", []string{managerBase, "replicas: 2\n"}, "SQLite is one process per file"},
		{"PostgreSQL without its URL", []string{managerBase, "database: {engine: postgres}\n"}, "needs database.postgres.urlSecret.name"},
		{"no keys", []string{"auth: {jwtSecret: {name: j}}\ntls: {secretName: t}\n"}, "encryptionKeys.secretName is required"},
		{"no token verification", []string{"encryptionKeys: {secretName: k}\ntls: {secretName: t}\n"}, "no way to verify tokens"},
		{"OIDC without audience", []string{managerBase, "auth: {oidc: {issuerURL: https://id.example.com}}\n"}, "auth.oidc.audience is required"},
		{"no TLS", []string{"encryptionKeys: {secretName: k}\nauth: {jwtSecret: {name: j}}\n"}, "say how the API serves"},
		{"TLS and plain HTTP", []string{managerBase, "tls: {insecureHTTP: true}\n"}, "say how the API serves"},
		{"cert-manager without issuer", []string{managerBase, "tls: {certManager: {enabled: true}}\n"}, "needs tls.certManager.issuerRef"},
		{"mail without sender", []string{managerBase, "mail: {smtpAddress: \"smtp.example.com:587\"}\n"}, "needs mail.from, mail.recipients and publicURL"},
		{"recipients without server", []string{managerBase, "mail: {recipients: \"Admin=a@example.com\"}\n"}, "mail.recipients needs mail.smtpAddress"},
		{"SMTP user without password", []string{managerBase, "publicURL: https://m.example.com\nmail: {smtpAddress: \"s.example.com:25\", from: a@example.com, recipients: \"Admin=a@example.com\", username: u}\n"}, "needs mail.passwordSecret.name"},
		{"Ingress without hosts", []string{managerBase, "ingress: {enabled: true}\n"}, "ingress.enabled needs ingress.hosts"},
		{"UI OIDC without issuer", []string{managerBase, "ui: {oidcClientID: slipway-ui}\n"}, "ui.oidcClientID needs auth.oidc.issuerURL"},
	} {
		if _, err := renderManagerErr(t, managerNS, tc.values...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := renderManagerErr(t, "slipway-manager", managerBase); err == nil || !strings.Contains(err.Error(), "identity namespace") {
		t.Errorf("installing into slipway-manager: %v, want it refused", err)
	}
	for _, values := range []string{"database: {engine: mysql}\n", "replicas: 0\n", "logLevel: loud\n", "podAntiAffinity: always\n",
		"approvals: {upgradeLevel: huge}\n", "approvals: {environments: prod}\n", "approvals: {environments: \"none,Dev\"}\n",
		"notifications: {maxAttempts: -1}\n", "rollouts: {installTimeout: 5}\n", "rollouts: {maxParallelinstalls: 4}\n", "requestTimeout: soon\n",
		"operatorRefreshConcurrency: \"4\"\n", "auth: {leeway: soon}\n", "auth: {oidc: {issuerURL: http://id.example.com}}\n",
		"extraArgs: [serve]\n", "plainHTTPRegistries: [\"a,b\"]\n", "databse: {}\n", "tls: {insecureHttp: true}\n"} {
		if _, err := renderManagerErr(t, managerNS, managerBase, values); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("values %q: %v, want a schema error", values, err)
		}
	}
}

// managerArgCases set, between them, every argument the chart writes (the args test checks that
// they do), in both engines, with the flag values the manager must parse from them.
var managerArgCases = []struct {
	name   string
	values []string
	// serve and migrate are flag values after parsing; absent flags keep the manager's defaults.
	serve, migrate map[string]string
}{
	{"SQLite defaults", []string{managerBase}, map[string]string{
		"address": ":8443", "metrics-address": ":9464", "migrate": "false", "database-path": "/var/lib/slipway-manager/manager.db",
		"encryption-key-file": "/etc/slipway-manager/keys/keys", "jwt-secret-file": "/etc/slipway-manager/jwt/secret",
		"tls-cert-file": "/etc/slipway-manager/tls/tls.crt", "tls-key-file": "/etc/slipway-manager/tls/tls.key", "insecure-http": "false",
		"log-level": "info", "log-format": "json", "shutdown-grace": "15s", "database-url": "", "oidc-issuer-url": "",
		"operator-refresh-interval": "10m0s", "ui": "true", "ui-session-ttl": "12h0m0s", "ui-oidc-client-id": "",
	}, map[string]string{"database-path": "/var/lib/slipway-manager/manager.db"}},
	{"PostgreSQL, OIDC, plain HTTP", []string{managerBase, managerPG,
		"auth: {jwtSecret: {name: \"\"}, oidc: {issuerURL: https://id.example.com/realms/x, audience: slipway}, roleClaim: realm_access.roles, leeway: 1m}\n",
		"tls: {secretName: \"\", insecureHTTP: true}\nmetrics: {enabled: false}\n",
		"ui: {enabled: false, oidcClientID: slipway-ui, oidcScopes: \"openid email groups\", sessionTTL: 8h, connectSrc: [\"https://oauth2.example.com\", \"https://id2.example.com:8443\"]}\n"}, map[string]string{
		"ui": "false", "ui-oidc-client-id": "slipway-ui", "ui-oidc-scopes": "openid email groups", "ui-session-ttl": "8h0m0s",
		"ui-connect-src":  "https://oauth2.example.com,https://id2.example.com:8443",
		"oidc-issuer-url": "https://id.example.com/realms/x", "oidc-audience": "slipway", "role-claim": "realm_access.roles",
		"jwt-leeway": "1m0s", "insecure-http": "true", "metrics-address": "0", "jwt-secret-file": "", "tls-cert-file": "",
		"database-path": "slipway-manager.db", "database-url": "",
	}, map[string]string{"database-path": "slipway-manager.db", "database-url": ""}},
	{"approvals and mail", []string{managerBase, "publicURL: https://manager.example.com\napprovals: {upgradeLevel: patch, counts: \"production=2,breakingCRD=1\", ttl: 24h}\n",
		"mail: {smtpAddress: \"smtp.example.com:587\", from: \"Slipway <slipway@example.com>\", recipients: \"Admin=a@example.com,b@example.com;EnvironmentOwner:Production=c@example.com\", username: slipway, passwordSecret: {name: smtp}, caSecret: {name: smtp-ca}}\n"},
		map[string]string{"public-url": "https://manager.example.com", "approval-upgrade-level": "patch", "approval-counts": "production=2,breakingCRD=1",
			"approval-ttl": "24h0m0s", "smtp-address": "smtp.example.com:587", "smtp-from": "Slipway <slipway@example.com>",
			"approval-recipients": "Admin=a@example.com,b@example.com;EnvironmentOwner:Production=c@example.com", "smtp-username": "slipway",
			"smtp-ca-file": "/etc/slipway-manager/smtp-ca/ca.crt"}, nil},
	{"telemetry, registries, limits, extra arguments", []string{managerBase,
		"logLevel: debug\nlogFormat: text\notlpEndpoint: http://otel-collector.monitoring:4318\nplainHTTPRegistries: [\"registry.local:5000\", \"10.0.0.1:5000\"]\n",
		"rateLimits: \"POST /api/v1/clusters=5/min,GET /api/v1/operators=120/min\"\nshutdownGrace: 20s\nmetrics: {port: 9100}\noperatorRefreshInterval: 90s\n",
		"extraArgs: [--max-concurrent-deployments=40, --cluster-health-interval=2m]\n"},
		map[string]string{"log-level": "debug", "log-format": "text", "otlp-endpoint": "http://otel-collector.monitoring:4318",
			"plain-http-registries": "registry.local:5000,10.0.0.1:5000", "rate-limits": "POST /api/v1/clusters=5/min,GET /api/v1/operators=120/min",
			"shutdown-grace": "20s", "metrics-address": ":9100", "max-concurrent-deployments": "40", "cluster-health-interval": "2m0s",
			"operator-refresh-interval": "1m30s"}, nil},
	{"approvals, notifications, rollouts, health checks, requests, refresh", []string{managerBase,
		"approvals: {environments: \"Staging, Production\", upgradeLevel: minor, ttl: 48h}\n",
		"notifications: {timeout: 5s, retryFor: 6h, maxAttempts: 50, maxPerChannel: 2}\n",
		"rollouts: {maxConcurrentDeployments: 40, maxParallelInstalls: 16, installTimeout: 10m, deploymentLease: 30s, rollbackAfterFailures: 5, blueRetention: 2h, switchMonitor: 10m, bakeWindow: 30m}\n",
		"clusterHealthInterval: 2m\nclusterHealthConcurrency: 25\noperatorHealthInterval: 45s\nmaxBodyBytes: 8388608\nrequestTimeout: 2m\noperatorRefreshConcurrency: 8\n"},
		map[string]string{"approval-environments": "Staging, Production", "approval-upgrade-level": "minor", "approval-ttl": "48h0m0s",
			"notification-timeout": "5s", "notification-retry-for": "6h0m0s", "notification-max-attempts": "50", "notification-max-per-channel": "2",
			"max-concurrent-deployments": "40", "max-parallel-installs": "16", "install-timeout": "10m0s", "deployment-lease": "30s",
			"rollback-after-failures": "5", "blue-retention": "2h0m0s", "switch-monitor": "10m0s", "bake-window": "30m0s", "cluster-health-interval": "2m0s",
			"cluster-health-concurrency": "25", "operator-health-interval": "45s", "max-body-bytes": "8388608", "request-timeout": "2m0s",
			"operator-refresh-concurrency": "8"}, nil},
	{"cert-manager", []string{"encryptionKeys: {secretName: k, key: keyring}\nauth: {jwtSecret: {name: j, key: hs256}}\n",
		"tls: {certManager: {enabled: true, issuerRef: {name: ca}}}\n"},
		map[string]string{"tls-cert-file": "/etc/slipway-manager/tls/tls.crt", "encryption-key-file": "/etc/slipway-manager/keys/keys",
			"jwt-secret-file": "/etc/slipway-manager/jwt/secret"}, nil},
}

// TestManagerChart_ArgsAreFlagsTheManagerAccepts parses the rendered arguments of both containers
// with the manager's own flag sets (app.FlagSet: the ones `manager serve` and `manager migrate`
// parse), so an unknown flag, a value a flag refuses, or an argument that is not a flag fails;
// each case checks that its values reach the flags they are meant for. The environment names
// only variables the manager reads. Every flag the templates can write is rendered by some case.
func TestManagerChart_ArgsAreFlagsTheManagerAccepts(t *testing.T) {
	rendered := map[string]bool{}
	for _, tc := range managerArgCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := deployment(t, renderManager(t, tc.values...), managerRelease).Spec.Template.Spec
			for _, c := range []struct {
				ctr  corev1.Container
				cmd  string
				want map[string]string
			}{{pod.InitContainers[0], "migrate", tc.migrate}, {pod.Containers[0], "serve", tc.serve}} {
				if len(c.ctr.Args) == 0 || c.ctr.Args[0] != c.cmd {
					t.Fatalf("%s runs %q, want manager %s", c.ctr.Name, c.ctr.Args, c.cmd)
				}
				fs := parseManagerArgs(t, c.cmd, c.ctr.Args[1:])
				fs.Visit(func(f *flag.Flag) { rendered[f.Name] = true })
				for name, want := range c.want {
					if f := fs.Lookup(name); f == nil || f.Value.String() != want {
						t.Errorf("manager %s --%s = %v, want %q", c.cmd, name, f, want)
					}
				}
				for _, e := range c.ctr.Env {
					if e.Name != "HOME" && !slices.Contains(app.SecretEnv, e.Name) && !strings.HasPrefix(e.Name, "EXTRA_") {
						t.Errorf("%s: environment variable %s is none the manager reads (%v)", c.ctr.Name, e.Name, app.SecretEnv)
					}
				}
			}
		})
	}
	for _, file := range []string{"slipway-manager/templates/_helpers.tpl", "slipway-manager/templates/deployment.yaml"} {
		tmpl, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range managerTemplateArg.FindAllStringSubmatch(string(tmpl), -1) {
			if !rendered[m[1]] {
				t.Errorf("--%s is in %s but no case above renders it; add one", m[1], file)
			}
		}
	}
}

// managerTuningFlags are the `manager serve` flags the chart renders from values whose defaults
// are the manager's, and only when the value is set (not empty, not 0).
var managerTuningFlags = []string{"approval-environments", "approval-upgrade-level", "approval-ttl", "notification-timeout",
	"notification-retry-for", "notification-max-attempts", "notification-max-per-channel", "max-concurrent-deployments",
	"max-parallel-installs", "install-timeout", "deployment-lease", "rollback-after-failures", "blue-retention", "switch-monitor",
	"bake-window", "cluster-health-interval", "cluster-health-concurrency", "operator-health-interval", "max-body-bytes", "request-timeout",
	"operator-refresh-concurrency"}

// TestManagerChart_DefaultsAreTheManagers: with values.yaml's defaults every `manager serve` flag
// the chart renders parses to the manager's own default (the flag's DefValue), but the ones the
// chart sets for the pod (the metrics port, the files, the migration by the init container): the
// values file shows the binary's defaults, and installing the chart changes none of them. An
// empty or 0 value renders no flag, which is the manager's default too. The approval environments
// rendered are ones the manager accepts.
func TestManagerChart_DefaultsAreTheManagers(t *testing.T) {
	podFlags := []string{"metrics-address", "migrate", "database-path", "encryption-key-file", "jwt-secret-file", "tls-cert-file", "tls-key-file"}
	c := deployment(t, renderManager(t, managerBase), managerRelease).Spec.Template.Spec.Containers[0]
	fs := parseManagerArgs(t, "serve", c.Args[1:])
	rendered := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		rendered[f.Name] = true
		if !slices.Contains(podFlags, f.Name) && f.Value.String() != f.DefValue {
			t.Errorf("values.yaml's default renders --%s=%s; the manager's default is %q", f.Name, f.Value, f.DefValue)
		}
	})
	for _, name := range managerTuningFlags {
		if def := fs.Lookup(name).DefValue; !rendered[name] && def != "0" {
			t.Errorf("--%s is not rendered with values.yaml's defaults: values.yaml should show the manager's %s", name, def)
		}
	}

	unset := []string{managerBase, "approvals: {environments: \"\", upgradeLevel: \"\", ttl: \"\"}\n",
		"notifications: {timeout: \"\", retryFor: \"\", maxAttempts: 0, maxPerChannel: 0}\n",
		"rollouts: {maxConcurrentDeployments: 0, maxParallelInstalls: 0, installTimeout: \"\", deploymentLease: \"\", rollbackAfterFailures: 0, blueRetention: \"\", switchMonitor: \"\", bakeWindow: \"\"}\n",
		"clusterHealthInterval: \"\"\nclusterHealthConcurrency: 0\noperatorHealthInterval: \"\"\nmaxBodyBytes: 0\nrequestTimeout: \"\"\noperatorRefreshConcurrency: 0\n"}
	args := deployment(t, renderManager(t, unset...), managerRelease).Spec.Template.Spec.Containers[0].Args
	for _, name := range managerTuningFlags {
		if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+name+"=") }) {
			t.Errorf("an empty or 0 value renders --%s: %q", name, args)
		}
	}

	for _, envs := range []string{"Dev,Staging,Production", "none", "Production", "Staging, Production"} {
		c := deployment(t, renderManager(t, managerBase, "approvals: {environments: \""+envs+"\"}\n"), managerRelease).Spec.Template.Spec.Containers[0]
		got := parseManagerArgs(t, "serve", c.Args[1:]).Lookup("approval-environments").Value.String()
		if _, err := approvals.ParseEnvironments(got); err != nil || got != envs {
			t.Errorf("approvals.environments %q: --approval-environments=%q, which the manager refuses: %v", envs, got, err)
		}
	}
}

// managerTemplateArg finds an argument in the templates: `- --name=` or `- {{ printf "--name=`.
var managerTemplateArg = regexp.MustCompile(`(?m)^\s*- (?:\{\{ printf ")?--([a-z0-9-]+)=`)

// TestManagerChart_ExtraArgsAreParsedToo: an extra argument the manager does not know fails the
// same parse, so the test above catches a wrong flag wherever it comes from.
func TestManagerChart_ExtraArgsAreParsedToo(t *testing.T) {
	c := deployment(t, renderManager(t, managerBase, "extraArgs: [--max-concurent-deployments=40]\n"), managerRelease).Spec.Template.Spec.Containers[0]
	fs, err := app.FlagSet("serve", &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(c.Args[1:]); err == nil || !strings.Contains(err.Error(), "max-concurent-deployments") {
		t.Errorf("parsing a misspelt extra argument: %v, want it refused", err)
	}
	if _, err := app.FlagSet("token", &bytes.Buffer{}); err == nil {
		t.Error("app.FlagSet(token): want an error, the chart runs serve and migrate only")
	}
}

// TestManagerChart_Lints runs helm lint --strict with each engine and every optional part on.
func TestManagerChart_Lints(t *testing.T) {
	for _, values := range [][]string{{managerBase}, {managerBase, managerPG}, managerArgCases[2].values,
		{"encryptionKeys: {secretName: k}\nauth: {jwtSecret: {name: j}}\ntls: {certManager: {enabled: true, issuerRef: {name: ca}}}\n",
			"metrics: {serviceMonitor: {enabled: true}}\ningress: {enabled: true, hosts: [m.example.com]}\n"}} {
		l := action.NewLint()
		l.Strict, l.Namespace = true, managerNS
		res := l.Run([]string{managerChartDir}, managerValues(t, values...))
		for _, err := range res.Errors {
			t.Errorf("values %q: %v", values, err)
		}
		for _, m := range res.Messages {
			t.Logf("values %q: %s", values, m)
		}
	}
}

func parseManagerArgs(t *testing.T, cmd string, args []string) *flag.FlagSet {
	t.Helper()
	var out bytes.Buffer
	fs, err := app.FlagSet(cmd, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("manager %s refuses its arguments %q: %v", cmd, args, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("manager %s: %q are not flags", cmd, fs.Args())
	}
	return fs
}

// managerValues merges values documents, later ones over earlier ones, key by key.
func managerValues(t testing.TB, layers ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, l := range layers {
		mergeValues(out, parseValues(t, l))
	}
	return out
}

func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

// renderManager renders the manager's chart as release slipway-manager in slipway-manager-system.
func renderManager(t testing.TB, layers ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderManagerErr(t, managerNS, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderManagerErr(t testing.TB, ns string, layers ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	ch, err := loader.Load(managerChartDir)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(action.NewConfiguration())
	in.DryRunStrategy = action.DryRunClient
	in.Replace = true
	in.ReleaseName, in.Namespace = managerRelease, ns
	r, err := in.Run(ch, managerValues(t, layers...))
	if err != nil {
		return nil, err
	}
	return manifestObjects(t, r.(*release.Release).Manifest), nil
}

// checkRestricted: what Pod Security "restricted" asks of the pod and of both containers, and a
// read-only root filesystem, no service account token, the image's user.
func checkRestricted(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	pod := d.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || psc.FSGroup == nil || *psc.FSGroup != 65532 {
		t.Errorf("pod security context %+v", psc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.HostNetwork || pod.HostPID {
		t.Error("the pod mounts a service account token or shares the host's namespaces")
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
			!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			len(sc.Capabilities.Add) > 0 || sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s security context %+v", c.Name, sc)
		}
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
		if v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440) {
			t.Errorf("Secret volume %s: mode %v, want 0440 (the pod's group only)", v.Name, v.Secret.DefaultMode)
		}
	}
}

// checkProbes: startup and readiness on /health in the API's scheme, liveness on the API's port.
func checkProbes(t *testing.T, c corev1.Container, scheme corev1.URIScheme) {
	t.Helper()
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/health" || p.HTTPGet.Port != intstr.FromString("api") || p.HTTPGet.Scheme != scheme {
			t.Errorf("%s probe %+v: want GET %s /health on the API", name, p, scheme)
		}
	}
	if p := c.LivenessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port != intstr.FromString("api") {
		t.Errorf("liveness probe %+v: want the API's port", p)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "api" && p.ContainerPort == 8443 }) {
		t.Errorf("ports %+v: want api 8443", c.Ports)
	}
}

func checkServicePorts(t *testing.T, svc *unstructured.Unstructured, want map[string]int64) {
	t.Helper()
	var s corev1.Service
	convert(t, svc, &s)
	got := map[string]int64{}
	for _, p := range s.Spec.Ports {
		got[p.Name] = int64(p.Port)
		if p.TargetPort.StrVal != map[bool]string{true: "api", false: "metrics"}[p.Name != "metrics"] {
			t.Errorf("Service port %s targets %s", p.Name, p.TargetPort.String())
		}
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("Service ports %v, want %v", got, want)
	}
}

func checkSecretEnv(t *testing.T, c corev1.Container, name, secret, key string) {
	t.Helper()
	e := envNamed(c, name)
	if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != secret || e.ValueFrom.SecretKeyRef.Key != key || e.Value != "" {
		t.Errorf("%s: $%s = %+v, want Secret %s key %s", c.Name, name, e, secret, key)
	}
}

func envNamed(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func mounts(c corev1.Container, volume, path string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume && m.MountPath == path })
}

func volume(t *testing.T, d *appsv1.Deployment, name string) corev1.Volume {
	t.Helper()
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("Deployment %s has no volume %s", d.Name, name)
	return corev1.Volume{}
}

// labelsMatch: every label of sel is in labels.
func labelsMatch(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// TestManagerChart_ValuesDocumented: every value of values.yaml is in the values table of
// docs/manager.md (Install in a cluster), by its full path, or a path under it; objects the
// schema describes key by key are documented key by key.
func TestManagerChart_ValuesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/manager.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Install in a cluster\n")
	if !ok {
		t.Fatal("docs/manager.md has no section Install in a cluster")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	data, err := os.ReadFile(managerChartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	schemaData, err := os.ReadFile(managerChartDir + "/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(schemaData, &schema); err != nil {
		t.Fatal(err)
	}
	var paths []string
	valuePaths("", parseValues(t, string(data)), schema, &paths)
	if len(paths) < 40 {
		t.Fatalf("only %d values found: %v", len(paths), paths)
	}
	for _, p := range paths {
		if !strings.Contains(section, "`"+p+"`") && !strings.Contains(section, "`"+p+".") {
			t.Errorf("value %s is not in docs/manager.md, Install in a cluster", p)
		}
	}
}

// valuePaths appends the dotted paths of values' leaves: a map is descended into when its schema
// lists its properties inline, otherwise it is one value.
func valuePaths(prefix string, values map[string]any, schema map[string]any, out *[]string) {
	props, _ := schema["properties"].(map[string]any)
	for k, v := range values {
		path := strings.TrimPrefix(prefix+"."+k, ".")
		sub, _ := props[k].(map[string]any)
		if m, ok := v.(map[string]any); ok && sub["properties"] != nil {
			valuePaths(path, m, sub, out)
			continue
		}
		*out = append(*out, path)
	}
}
