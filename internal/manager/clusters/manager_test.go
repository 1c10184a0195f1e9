package clusters

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/slipway-dev/slipway/internal/manager/invalid"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

func adminClient(t testing.TB, server int) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(fleet(t).Servers[server].Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// whoAmI is the user a client acts as, from SelfSubjectReview.
func whoAmI(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r.Status.UserInfo.Username
}

func register(t *testing.T, b *bundle, name string, server int) *store.Cluster {
	t.Helper()
	c, err := b.m.Register(context.Background(), RegisterParams{Name: name, Environment: store.EnvironmentDev, Kubeconfig: fleet(t).Servers[server].Kubeconfig})
	if err != nil {
		t.Fatalf("registering %s on %s: %v", name, fleet(t).Servers[server].Name, err)
	}
	return c
}

func TestRegisterSetsUpTheManagersOwnServiceAccount(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	c := register(t, b, "dev-one", 0)
	if c.KubernetesVersion == "" || !strings.HasPrefix(c.KubernetesVersion, "v1.") || c.Health != store.HealthHealthy || c.HealthCheckedAt == nil {
		t.Fatalf("registered cluster: version %q, health %q, checked %v", c.KubernetesVersion, c.Health, c.HealthCheckedAt)
	}
	if c.KeyID != b.keys.Primary() || len(c.TokenCiphertext) == 0 || c.TokenExpiresAt == nil {
		t.Fatalf("credentials: key %q, token %d bytes, expires %v", c.KeyID, len(c.TokenCiphertext), c.TokenExpiresAt)
	}
	if left := time.Until(*c.TokenExpiresAt); left < 50*time.Minute || left > 61*time.Minute {
		t.Fatalf("token expires in %s, want about the 1 h TTL", left)
	}
	if got := b.eventKinds("dev-one"); !slices.Equal(got, []string{"minted"}) {
		t.Fatalf("credential events %v, want [minted]", got)
	}

	// What the manager made in the cluster, as the admin sees it.
	admin := adminClient(t, 0)
	if _, err := admin.CoreV1().ServiceAccounts(IdentityNamespace).Get(ctx, ServiceAccountName, metav1.GetOptions{}); err != nil {
		t.Fatalf("ServiceAccount: %v", err)
	}
	cr, err := admin.RbacV1().ClusterRoles().Get(ctx, ClusterRoleName, metav1.GetOptions{})
	if err != nil || len(cr.Rules) != 2 || cr.Labels[managedByLabel] != managedByValue {
		t.Fatalf("ClusterRole: %+v, %v", cr, err)
	}
	crb, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, ClusterRoleName, metav1.GetOptions{})
	if err != nil || crb.RoleRef.Name != ClusterRoleName || len(crb.Subjects) != 1 || crb.Subjects[0].Name != ServiceAccountName {
		t.Fatalf("ClusterRoleBinding: %+v, %v", crb, err)
	}
	role, err := admin.RbacV1().Roles(IdentityNamespace).Get(ctx, TokenRoleName, metav1.GetOptions{})
	if err != nil || !slices.Equal(role.Rules[0].ResourceNames, []string{ServiceAccountName}) ||
		!slices.Equal(role.Rules[0].Resources, []string{"serviceaccounts/token"}) || !slices.Equal(role.Rules[0].Verbs, []string{"create"}) {
		t.Fatalf("token Role: %+v, %v", role, err)
	}
	if _, err := admin.RbacV1().RoleBindings(IdentityNamespace).Get(ctx, TokenRoleName, metav1.GetOptions{}); err != nil {
		t.Fatalf("token RoleBinding: %v", err)
	}

	// Day-to-day calls act as the ServiceAccount, not as the registered admin.
	cs, err := b.m.Client(ctx, "dev-one")
	if err != nil {
		t.Fatal(err)
	}
	if who := whoAmI(t, cs); who != ServiceAccountUser {
		t.Fatalf("the manager's client acts as %q, want %q", who, ServiceAccountUser)
	}
	cfg, err := b.m.RESTConfig(ctx, "dev-one")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 || cfg.BearerToken == "" || cfg.Impersonate.UserName != "" {
		t.Fatal("the RESTConfig carries the admin's client certificate, or no token")
	}
	// And the client is cached while the credentials are unchanged.
	if again, _ := b.m.Client(ctx, "dev-one"); again != cs {
		t.Fatal("a second Client call built a new clientset for unchanged credentials")
	}
	// A restarted manager (new cache) reads the sealed token back.
	m2 := b.newManager(t, b.keys)
	cs2, err := m2.Client(ctx, "dev-one")
	if err != nil || whoAmI(t, cs2) != ServiceAccountUser {
		t.Fatalf("restarted manager: %v", err)
	}
	if got := b.eventKinds("dev-one"); len(got) != 1 {
		t.Fatalf("a restart with a fresh token minted or renewed one: %v", got)
	}
}

func TestRegisterRefusesBadInputBeforeContactingTheCluster(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	kc := fleet(t).Servers[0].Kubeconfig
	register(t, b, "taken", 0)

	for _, tc := range []struct {
		name  string
		p     RegisterParams
		field string
	}{
		{"no name", RegisterParams{Environment: store.EnvironmentDev, Kubeconfig: kc}, "name"},
		{"upper case", RegisterParams{Name: "Prod", Environment: store.EnvironmentDev, Kubeconfig: kc}, "name"},
		{"64 chars", RegisterParams{Name: strings.Repeat("a", 64), Environment: store.EnvironmentDev, Kubeconfig: kc}, "name"},
		{"dots", RegisterParams{Name: "a.b", Environment: store.EnvironmentDev, Kubeconfig: kc}, "name"},
		{"environment", RegisterParams{Name: "ok", Environment: "prod", Kubeconfig: kc}, "environment"},
		{"no kubeconfig", RegisterParams{Name: "ok", Environment: store.EnvironmentDev}, "kubeconfig"},
		{"exec kubeconfig", RegisterParams{Name: "ok", Environment: store.EnvironmentDev,
			Kubeconfig: []byte(kubeconfigText(goodCluster, "    exec: {command: /bin/true, apiVersion: client.authentication.k8s.io/v1}"))}, "kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.m.Register(ctx, tc.p)
			e, ok := invalid.As(err)
			if !ok || e.Field != tc.field {
				t.Fatalf("want *invalid.Error on %q, got %v", tc.field, err)
			}
			assertNoKubeconfigIn(t, err, kc)
		})
	}

	// A taken name is refused before any contact: this kubeconfig points at a closed port.
	_, err := b.m.Register(ctx, RegisterParams{Name: "taken", Environment: store.EnvironmentProduction, Kubeconfig: rewrite(t, kc, closedPort(t), "")})
	if !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("duplicate name: want store.ErrAlreadyExists, got %v", err)
	}
	if n, _ := b.store.ClusterCount(ctx); n != 1 {
		t.Fatalf("%d clusters stored after refused registrations, want 1", n)
	}
}

func TestRegisterRefusesUnreachableAndUnauthorizedClusters(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	srv := fleet(t).Servers[0]
	noRights, err := srv.UserKubeconfig("no-rights", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	badToken := rewrite(t, srv.Kubeconfig, "", "not-a-token-this-cluster-knows")
	for _, tc := range []struct {
		name, reason, says string
		kubeconfig         []byte
	}{
		{"closed port", "unreachable", "connection refused", rewrite(t, srv.Kubeconfig, closedPort(t), "")},
		{"other cluster's CA", "unreachable", "certificate", rewrite(t, srv.Kubeconfig, fleet(t).Servers[1].Config.Host, "")},
		{"bad token", "unauthorized", "401", badToken},
		{"no rights", "unauthorized", "403", noRights},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.m.Register(ctx, RegisterParams{Name: "refused", Environment: store.EnvironmentStaging, Kubeconfig: tc.kubeconfig})
			e, ok := invalid.As(err)
			if !ok || e.Field != "kubeconfig" || e.Reason != tc.reason || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("want *invalid.Error kubeconfig/%s saying %q, got %#v", tc.reason, tc.says, err)
			}
			assertNoKubeconfigIn(t, err, tc.kubeconfig, srv.Kubeconfig)
			t.Log(err)
		})
	}
	if n, _ := b.store.ClusterCount(ctx); n != 0 {
		t.Fatalf("%d clusters stored after refused registrations", n)
	}

	// Connect alone says the same.
	_, err = Connect(ctx, badToken)
	if e, ok := invalid.As(err); !ok || e.Reason != "unauthorized" {
		t.Fatalf("Connect with a bad token: %v", err)
	}
	info, err := Connect(ctx, srv.Kubeconfig)
	if err != nil || info.KubernetesVersion == "" {
		t.Fatalf("Connect: %+v, %v", info, err)
	}
}

func TestTokenIsRenewedByTheServiceAccountAndReMintedOnceExpired(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	c := register(t, b, "renewing", 0)
	first := *c.TokenExpiresAt

	// Before half its life: nothing happens.
	b.clock.Advance(20 * time.Minute)
	if _, err := b.m.Client(ctx, "renewing"); err != nil {
		t.Fatal(err)
	}
	if got := b.eventKinds("renewing"); len(got) != 1 {
		t.Fatalf("events %v before half the token's life", got)
	}

	// Prove the renewal does not use the admin kubeconfig: replace the stored one with a
	// credential the cluster refuses.
	bogus := rewrite(t, fleet(t).Servers[0].Kubeconfig, "", "revoked-admin-token")
	kcCipher, keyID, err := b.keys.Seal(bogus, aad("kubeconfig", c.Name, c.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.ClusterUpdateCredentials(ctx, &store.ClusterUpdateCredentialsParams{
		Name: c.Name, KubeconfigCiphertext: kcCipher, TokenCiphertext: c.TokenCiphertext, TokenExpiresAt: c.TokenExpiresAt, KeyID: keyID, Now: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}

	// Past half its life: the ServiceAccount renews its own token.
	b.clock.Advance(15 * time.Minute)
	cs, err := b.m.Client(ctx, "renewing")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.eventKinds("renewing"); !slices.Equal(got, []string{"minted", "renewed"}) {
		t.Fatalf("events %v, want [minted renewed]", got)
	}
	if who := whoAmI(t, cs); who != ServiceAccountUser {
		t.Fatalf("after renewal the client acts as %q", who)
	}
	renewed, err := b.store.ClusterGetByName(ctx, "renewing")
	if err != nil || renewed.TokenExpiresAt.Before(first) || string(renewed.TokenCiphertext) == string(c.TokenCiphertext) {
		t.Fatalf("renewed token not stored: expires %v (first %v), %v", renewed.TokenExpiresAt, first, err)
	}

	// Past its expiry the admin kubeconfig is needed, and this one is refused: Unhealthy, with why.
	b.clock.Advance(2 * time.Hour)
	checked, err := b.m.Check(ctx, "renewing")
	if err != nil {
		t.Fatal(err)
	}
	if checked.Health != store.HealthUnhealthy || !strings.Contains(checked.HealthReason, "401") {
		t.Fatalf("expired token, refused admin kubeconfig: health %q reason %q", checked.Health, checked.HealthReason)
	}
	assertNoSecret(t, errors.New(checked.HealthReason), secretsOf(t, bogus)...)

	// With the real admin kubeconfig back, an expired token is re-minted.
	kcCipher, keyID, _ = b.keys.Seal(mustMinified(t, fleet(t).Servers[0].Kubeconfig), aad("kubeconfig", c.Name, c.ID))
	if _, err := b.store.ClusterUpdateCredentials(ctx, &store.ClusterUpdateCredentialsParams{
		Name: c.Name, KubeconfigCiphertext: kcCipher, TokenCiphertext: renewed.TokenCiphertext, TokenExpiresAt: renewed.TokenExpiresAt, KeyID: keyID, Now: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	checked, err = b.m.Check(ctx, "renewing")
	if err != nil || checked.Health != store.HealthHealthy {
		t.Fatalf("after restoring the admin kubeconfig: %+v, %v", checked, err)
	}
	if got := b.eventKinds("renewing"); !slices.Equal(got, []string{"minted", "renewed", "reminted"}) {
		t.Fatalf("events %v, want [minted renewed reminted]", got)
	}
}

func mustMinified(t testing.TB, kubeconfig []byte) []byte {
	t.Helper()
	kc, err := ParseKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return kc.Minified
}

func TestRotateKeysReSealsSoTheOldKeyCanBeDropped(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	register(t, b, "rot-a", 0)
	register(t, b, "rot-b", 1)
	// rot-c is sealed by oldKey; the rotated keyring has newLine first and oldKey after it.
	newLine, oldKey := newKeyLine(t), newKeyLine(t)
	oldRing := mustKeyring(t, oldKey)
	mOld := b.newManager(t, oldRing)
	if _, err := mOld.Register(ctx, RegisterParams{Name: "rot-c", Environment: store.EnvironmentProduction, Kubeconfig: fleet(t).Servers[0].Kubeconfig}); err != nil {
		t.Fatal(err)
	}
	before, _ := b.store.ClusterGetByName(ctx, "rot-c")

	rotated := mustKeyring(t, newLine, oldKey)
	mRot := b.newManager(t, rotated)
	n, err := mRot.RotateKeys(ctx)
	// rot-a and rot-b are sealed by a key this keyring does not hold: reported, and rot-c re-sealed.
	if n != 1 || err == nil || !strings.Contains(err.Error(), "rot-a") || !strings.Contains(err.Error(), "not loaded") {
		t.Fatalf("RotateKeys: %d re-sealed, %v", n, err)
	}
	after, _ := b.store.ClusterGetByName(ctx, "rot-c")
	if after.KeyID != rotated.Primary() || string(after.KubeconfigCiphertext) == string(before.KubeconfigCiphertext) ||
		string(after.TokenCiphertext) == string(before.TokenCiphertext) || !after.TokenExpiresAt.Equal(*before.TokenExpiresAt) {
		t.Fatalf("rot-c not re-sealed under %q: key %q", rotated.Primary(), after.KeyID)
	}
	if n, err := mRot.RotateKeys(ctx); n != 0 || err == nil {
		t.Fatalf("second rotation re-sealed %d (want 0: rot-c is done), err %v", n, err)
	}

	// Drop the old key: rot-c still works.
	mNew := b.newManager(t, mustKeyring(t, newLine))
	cs, err := mNew.Client(ctx, "rot-c")
	if err != nil || whoAmI(t, cs) != ServiceAccountUser {
		t.Fatalf("after dropping the old key: %v", err)
	}
	// rot-a, sealed by a key mNew lacks, is reported Unhealthy with a reason naming the key.
	c, err := mNew.Check(ctx, "rot-a")
	if err != nil || c.Health != store.HealthUnhealthy || !strings.Contains(c.HealthReason, "not loaded") {
		t.Fatalf("cluster under a missing key: %+v, %v", c, err)
	}
}

func TestTamperedCiphertextIsRefused(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	c := register(t, b, "tampered", 0)
	other := register(t, b, "other", 1)
	for name, p := range map[string]*store.ClusterUpdateCredentialsParams{
		"flipped kubeconfig byte": {KubeconfigCiphertext: flip(c.KubeconfigCiphertext, 20), TokenCiphertext: c.TokenCiphertext},
		"flipped token byte":      {KubeconfigCiphertext: c.KubeconfigCiphertext, TokenCiphertext: flip(c.TokenCiphertext, len(c.TokenCiphertext)-1)},
		"other cluster's token":   {KubeconfigCiphertext: c.KubeconfigCiphertext, TokenCiphertext: other.TokenCiphertext},
		"columns swapped":         {KubeconfigCiphertext: c.TokenCiphertext, TokenCiphertext: c.KubeconfigCiphertext},
	} {
		t.Run(name, func(t *testing.T) {
			p.Name, p.KeyID, p.TokenExpiresAt, p.Now = c.Name, c.KeyID, c.TokenExpiresAt, time.Now()
			if _, err := b.store.ClusterUpdateCredentials(ctx, p); err != nil {
				t.Fatal(err)
			}
			m := b.newManager(t, b.keys) // no cached client
			_, err := m.RESTConfig(ctx, c.Name)
			var ce *CredentialsError
			if !errors.As(err, &ce) || !errors.Is(err, ErrDecrypt) {
				t.Fatalf("want a CredentialsError wrapping ErrDecrypt, got %v", err)
			}
			checked, err := m.Check(ctx, c.Name)
			if err != nil || checked.Health != store.HealthUnhealthy || !strings.Contains(checked.HealthReason, "cannot be decrypted") {
				t.Fatalf("check: %+v, %v", checked, err)
			}
		})
	}
}

func TestRemoveDeletesTheManagersObjectsBestEffort(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	register(t, b, "leaving", 2)
	r, err := b.m.Remove(ctx, "leaving")
	if err != nil || !r.CleanedUp {
		t.Fatalf("Remove: %+v, %v", r, err)
	}
	if _, err := b.store.ClusterGetByName(ctx, "leaving"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("row after Remove: %v", err)
	}
	admin := adminClient(t, 2)
	if _, err := admin.RbacV1().ClusterRoles().Get(ctx, ClusterRoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterRole after Remove: %v", err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, ClusterRoleName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterRoleBinding after Remove: %v", err)
	}
	// No namespace controller runs here: the namespace stays Terminating (a real cluster empties it).
	ns, err := admin.CoreV1().Namespaces().Get(ctx, IdentityNamespace, metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("namespace after Remove: %v", err)
	}
	if err := b.m.Delete(ctx, "leaving"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
	// Registering again while the namespace is being deleted (here for good: no namespace
	// controller runs) is refused with the reason.
	_, err = b.m.Register(ctx, RegisterParams{Name: "back", Environment: store.EnvironmentDev, Kubeconfig: fleet(t).Servers[2].Kubeconfig})
	if e, ok := invalid.As(err); !ok || e.Reason != "conflict" || !strings.Contains(e.Message, "being deleted") {
		t.Fatalf("registration during the namespace's deletion: %v", err)
	}

	// A cluster that cannot be reached is still removed, and the Removal says why not cleaned.
	c := register(t, b, "gone", 0)
	dead := rewrite(t, fleet(t).Servers[0].Kubeconfig, closedPort(t), "")
	cipher, keyID, _ := b.keys.Seal(mustMinified(t, dead), aad("kubeconfig", c.Name, c.ID))
	if _, err := b.store.ClusterUpdateCredentials(ctx, &store.ClusterUpdateCredentialsParams{
		Name: c.Name, KubeconfigCiphertext: cipher, TokenCiphertext: c.TokenCiphertext, TokenExpiresAt: c.TokenExpiresAt, KeyID: keyID, Now: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	r, err = b.m.Remove(ctx, "gone")
	if err != nil || r.CleanedUp || !strings.Contains(r.Problem, "connection refused") {
		t.Fatalf("Remove of an unreachable cluster: %+v, %v", r, err)
	}
	assertNoSecret(t, errors.New(r.Problem), secretsOf(t, dead)...)
	if _, err := b.store.ClusterGetByName(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("row after Remove: %v", err)
	}
}

func TestHealthLoopMarksAStoppedServerUnhealthyAndOthersHealthy(t *testing.T) {
	rounds := make(chan Round, 16)
	b := setup(t, func(c *Config) {
		// A stopped server refuses at once; the live ones get a timeout a loaded machine meets.
		c.HealthInterval, c.HealthConcurrency, c.CheckTimeout = 200*time.Millisecond, 2, 10*time.Second
		c.OnRound = func(r Round) { rounds <- r }
	})
	ctx := context.Background()
	register(t, b, "stays", 1)
	register(t, b, "also-stays", 0)
	register(t, b, "stops", 3)

	if err := b.m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.m.Start(ctx); err == nil {
		t.Fatal("a second Start succeeded")
	}
	<-b.m.Started()
	r := <-rounds
	if len(r.Results) != 3 {
		t.Fatalf("first round checked %d clusters, want 3", len(r.Results))
	}
	for _, res := range r.Results {
		if res.Health != store.HealthHealthy || res.Err != nil {
			t.Fatalf("first round: %+v", res)
		}
	}

	if err := fleet(t).Servers[3].Stop(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Minute)
	for {
		select {
		case r = <-rounds:
		case <-deadline:
			t.Fatal("no round marked the stopped server's cluster Unhealthy within a minute")
		}
		if i := slices.IndexFunc(r.Results, func(c CheckResult) bool { return c.Cluster == "stops" }); r.Results[i].Health == store.HealthUnhealthy {
			break
		}
	}
	b.m.Stop()
	b.m.Stop() // safe twice

	list, err := b.store.ClusterList(ctx, &store.ClusterListParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		switch c.Name {
		case "stops":
			if c.Health != store.HealthUnhealthy || !strings.Contains(c.HealthReason, "connection refused") || c.HealthCheckedAt == nil {
				t.Fatalf("stopped server's cluster: %q %q at %v", c.Health, c.HealthReason, c.HealthCheckedAt)
			}
			assertNoSecret(t, errors.New(c.HealthReason), secretsOf(t, fleet(t).Servers[3].Kubeconfig)...)
		default:
			if c.Health != store.HealthHealthy || c.HealthReason != "" {
				t.Fatalf("%s: %q %q", c.Name, c.Health, c.HealthReason)
			}
		}
	}
	unhealthy, err := b.store.ClusterList(ctx, &store.ClusterListParams{Health: store.HealthUnhealthy})
	if err != nil || len(unhealthy) != 1 {
		t.Fatalf("Unhealthy filter: %d, %v", len(unhealthy), err)
	}
}

// A credential that may list namespaces but not grant RBAC fails half-way through the identity's
// setup: the error says which step, nothing is stored and what the call created is deleted.
func TestRegisterFailingHalfWayUndoesWhatItCreated(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	srv := fleet(t).Servers[4]
	admin := adminClient(t, 4)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "half-admin"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "serviceaccounts"}, Verbs: []string{"*"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "half-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "half-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "half-admin"}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	half, err := srv.UserKubeconfig("half-admin")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.m.Register(ctx, RegisterParams{Name: "half", Environment: store.EnvironmentDev, Kubeconfig: half})
	e, ok := invalid.As(err)
	if !ok || e.Field != "kubeconfig" || e.Reason != "unauthorized" || !strings.Contains(e.Message, "create clusterrole "+ClusterRoleName) {
		t.Fatalf("want unauthorized at the ClusterRole, got %v", err)
	}
	assertNoKubeconfigIn(t, err, half)
	if n, _ := b.store.ClusterCount(ctx); n != 0 {
		t.Fatalf("%d clusters stored", n)
	}
	if _, err := admin.CoreV1().ServiceAccounts(IdentityNamespace).Get(ctx, ServiceAccountName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ServiceAccount left behind: %v", err)
	}
	ns, err := admin.CoreV1().Namespaces().Get(ctx, IdentityNamespace, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Fatal("namespace left behind")
	}
}
