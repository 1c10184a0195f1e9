package charts_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// operatorDoc is where the Identities and Rights tables are (docs/operator.md, RBAC).
const operatorDoc = "../docs/operator.md"

// The verbs every identity is asked about.
var rightsVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
	"impersonate", "bind", "escalate"}

// writeVerbs change an object.
var writeVerbs = sets.New("create", "update", "patch", "delete", "deletecollection")

// TestRights_EveryIdentityHoldsExactlyTheDocumentedRights installs the RBAC exactly as shipped
// (config/default, the chart's default of one Deployment per system, the chart's single
// Deployment with every system, and with WebApp and Catalyst in another build namespace) on a
// real API server and asks it, with SubjectAccessReviews, what each ServiceAccount the install
// creates may do: every verb on every resource the server serves (subresources included), the
// impersonation targets and every resource the Rights table names, in the identity's own
// namespace, in Catalyst's build namespace, in two tenant namespaces and cluster-wide, with the
// names the rules use and others. Every answer must be what the Rights table of docs/operator.md
// says for the roles the Identities table gives the ServiceAccount (those of the systems the
// install runs): a right granted and not documented fails, so does a documented right not
// granted. An identity that runs Catalyst and not WerfBundle is attacked: it must not create a
// Job (a pod as any ServiceAccount) in kube-system, the operator's namespace, an environment's or
// a tenant's, only in the build namespace. Then Catalyst's deployer ClusterRole is bound in one
// environment namespace, as Catalyst binds it, and its ServiceAccount is asked the same, and must
// hold nothing outside that namespace, nothing cluster-scoped and no write on the guard rails.
func TestRights_EveryIdentityHoldsExactlyTheDocumentedRights(t *testing.T) {
	doc := parseRightsDoc(t, operatorDoc)
	env := testenv.New(t, testenv.Light)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// SubjectAccessReviews by the thousand: no client-side rate limit.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%04x", rand.IntN(1<<16))
	envNS, tenantNS := "env-"+suffix, "tenant-"+suffix
	for _, ns := range []string{envNS, tenantNS} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	resources := matrixResources(t, cfg, doc)

	// buildNS, deployerNS: Catalyst's build and deployer namespaces; controllers: the systems
	// the install runs (nil: all).
	const deployers = "slipway-catalyst-deployers"
	installs := []struct {
		name, ns, buildNS, deployerNS string
		controllers                   []string
		objs                          func(t *testing.T) []*unstructured.Unstructured
	}{
		{"config/default", "slipway-system", "slipway-builds", deployers, nil,
			func(t *testing.T) []*unstructured.Unstructured { return kustomizeBuild(t, "../config/default") }},
		{"chart default", "slipway", "slipway-builds", deployers, nil,
			func(t *testing.T) []*unstructured.Unstructured { return renderIn(t, "", "slipway") }},
		{"chart singleDeployment", "slipway-single", "slipway-builds", deployers, nil, func(t *testing.T) []*unstructured.Unstructured {
			return renderIn(t, "singleDeployment: true\n", "slipway-single")
		}},
		{"chart singleDeployment webapp catalyst", "slipway-pair", "pair-builds", "pair-deployers", []string{"webapp", "catalyst"},
			func(t *testing.T) []*unstructured.Unstructured {
				return renderIn(t, "singleDeployment: true\ncontrollers: [webapp, catalyst]\ncatalyst: {buildNamespace: {name: pair-builds}, deployerNamespace: {name: pair-deployers}}\n", "slipway-pair")
			}},
	}
	var shipped []*unstructured.Unstructured
	attacked := 0
	for _, in := range installs {
		t.Run(in.name, func(t *testing.T) {
			objs := in.objs(t)
			shipped = append(shipped, objs...)
			sas := installRBAC(ctx, t, env.Client, in.ns, objs)
			if len(sas) == 0 {
				t.Fatal("the install creates no ServiceAccount")
			}
			rs, names := withShippedRules(t, resources, doc.names, objs)
			for _, sa := range sas {
				roles, ok := doc.identities[sa]
				if !ok {
					t.Errorf("ServiceAccount %s is created by the install but not in the Identities table of %s", sa, operatorDoc)
					continue
				}
				id := identity{sa: sa, namespace: in.ns, buildNamespace: in.buildNS, deployerNamespace: in.deployerNS, roles: rolesOf(roles, in.controllers)}
				space := matrix(rs, names, []string{in.ns, in.buildNS, in.deployerNS, envNS, tenantNS, ""})
				checkIdentity(ctx, t, cs, doc, id, space, operatorInvariants)
				if slices.Contains(id.roles, "slipway-catalyst") {
					checkImpersonationConfined(ctx, t, cs, id, envNS)
				}
				if slices.Contains(id.roles, "slipway-catalyst") && !slices.Contains(id.roles, "slipway-werfbundle") {
					checkBuildJobsConfined(ctx, t, cs, id, envNS, tenantNS)
					attacked++
				}
			}
		})
	}
	if attacked < 3 {
		t.Errorf("%d identities ran Catalyst without WerfBundle and were attacked, want config/default's, the chart's and the pair's", attacked)
	}

	t.Run("catalyst-deployer", func(t *testing.T) {
		// As Catalyst does in each environment namespace: the RoleBinding of its deployer (a
		// ServiceAccount name of the deployer namespace, no object) to the shipped ClusterRole,
		// which no install binds.
		for _, u := range shipped {
			if u.GetKind() == "ClusterRoleBinding" || u.GetKind() == "RoleBinding" {
				var b rbacv1.RoleBinding
				convert(t, u, &b)
				if b.RoleRef.Name == "slipway-catalyst-deployer" {
					t.Errorf("%s %s binds slipway-catalyst-deployer: only Catalyst binds it, in an environment namespace", u.GetKind(), u.GetName())
				}
			}
		}
		const row = deployers + ":<environment namespace>"
		roles, ok := doc.identities[row]
		if !ok {
			t.Fatalf("no row for %s in the Identities table of %s", row, operatorDoc)
		}
		if err := env.Client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "catalyst-deployer", Namespace: envNS},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "slipway-catalyst-deployer"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: envNS, Namespace: deployers}},
		}); err != nil {
			t.Fatal(err)
		}
		id := identity{sa: envNS, namespace: deployers, environmentNamespace: envNS, roles: roles}
		rs, names := withShippedRules(t, resources, doc.names, shipped)
		space := matrix(rs, names, []string{"slipway-system", "slipway-builds", deployers, envNS, tenantNS, ""})
		checkIdentity(ctx, t, cs, doc, id, space, func(id identity, q query) string {
			if q.namespace != envNS && !kubernetesDefault(q) {
				return "a right outside its environment namespace"
			}
			if writeVerbs.Has(q.verb) && slices.Contains([]string{"networkpolicies", "resourcequotas", "limitranges"}, q.resource) {
				return "a write on a guard rail the operator keeps"
			}
			return operatorInvariants(id, q)
		})
	})
}

// identity is a ServiceAccount and the roles the Identities table gives it; buildNamespace and
// deployerNamespace are the install's build and deployer namespaces, where a "build namespace"
// or "deployer namespace" row holds; environmentNamespace that of a deployer's RoleBinding,
// where an "environment namespace" row holds.
type identity struct {
	sa, namespace, buildNamespace, deployerNamespace, environmentNamespace string
	roles                                                                  []string
}

// rolesOf returns the roles among roles an install running controllers binds (nil: all of them):
// the single Deployment's ServiceAccount holds those of the systems it runs.
func rolesOf(roles, controllers []string) []string {
	if controllers == nil {
		return roles
	}
	return slices.DeleteFunc(slices.Clone(roles), func(r string) bool {
		c, ok := strings.CutPrefix(r, "slipway-")
		return ok && c != "common" && !slices.Contains(controllers, c)
	})
}

// checkBuildJobsConfined attacks an identity that runs Catalyst and not WerfBundle: whoever may
// create a Job in a namespace may run a pod there as any of its ServiceAccounts (kube-system's
// controllers' among them), so it must create build Jobs in the build namespace and nowhere else,
// nor read pod logs or pods outside it.
func checkBuildJobsConfined(ctx context.Context, t *testing.T, cs kubernetes.Interface, id identity, envNS, tenantNS string) {
	t.Helper()
	allowed := []query{{verb: "create", group: "batch", resource: "jobs", namespace: id.buildNamespace}}
	var refused []query
	for _, ns := range []string{"kube-system", id.namespace, envNS, tenantNS, ""} {
		refused = append(refused,
			query{verb: "create", group: "batch", resource: "jobs", namespace: ns},
			query{verb: "create", group: "batch", resource: "cronjobs", namespace: ns},
			query{verb: "create", resource: "pods", namespace: ns},
			query{verb: "get", resource: "pods/log", namespace: ns},
			query{verb: "list", resource: "pods", namespace: ns})
	}
	answers := ask(ctx, t, cs, id, append(allowed, refused...))
	for i, q := range append(allowed, refused...) {
		if want := i < len(allowed); answers[i] != want {
			t.Errorf("%s: %s allowed %t, want %t: Catalyst's Jobs are confined to its build namespace %s", id.user(), q, answers[i], want, id.buildNamespace)
		}
	}
}

// checkImpersonationConfined attacks an identity that runs Catalyst: it may impersonate the
// ServiceAccounts of its deployer namespace, whatever their name (an environment namespace's),
// and no other ServiceAccount, user or group: not kube-system's controllers, not a ServiceAccount
// of an environment namespace (a pod's), not the operator itself.
func checkImpersonationConfined(ctx context.Context, t *testing.T, cs kubernetes.Interface, id identity, envNS string) {
	t.Helper()
	sa := func(ns, name string) query {
		return query{verb: "impersonate", resource: "serviceaccounts", namespace: ns, name: name}
	}
	allowed := []query{sa(id.deployerNamespace, envNS), sa(id.deployerNamespace, "any-environment")}
	refused := []query{sa("kube-system", "namespace-controller"), sa("kube-system", "default"), sa(envNS, "catalyst-deployer"),
		sa(envNS, "default"), sa(id.namespace, id.sa), sa(id.buildNamespace, "default"), sa("", ""),
		{verb: "impersonate", resource: "users", name: "catalyst:deployer:" + envNS, clusterScoped: true},
		{verb: "impersonate", resource: "users", name: "system:serviceaccount:" + id.deployerNamespace + ":" + envNS, clusterScoped: true},
		{verb: "impersonate", resource: "groups", name: "system:masters", clusterScoped: true}}
	answers := ask(ctx, t, cs, id, append(allowed, refused...))
	for i, q := range append(allowed, refused...) {
		if want := i < len(allowed); answers[i] != want {
			t.Errorf("%s: %s allowed %t, want %t: Catalyst impersonates the ServiceAccounts of its deployer namespace %s alone", id.user(), q, answers[i], want, id.deployerNamespace)
		}
	}
}

func (id identity) user() string { return "system:serviceaccount:" + id.namespace + ":" + id.sa }

// query is one SubjectAccessReview's question. resource may hold a subresource: pods/log.
type query struct {
	verb, group, resource, namespace, name string
	// clusterScoped: the resource is not namespaced.
	clusterScoped bool
}

func (q query) String() string {
	group := q.group
	if group == "" {
		group = "core"
	}
	where := "cluster-wide"
	if q.namespace != "" {
		where = "in " + q.namespace
	}
	name := ""
	if q.name != "" {
		name = " named " + q.name
	}
	return fmt.Sprintf("%s %s (%s)%s %s", q.verb, q.resource, group, name, where)
}

// operatorInvariants hold for every identity whatever the tables say: no escalate, bind of the
// one ClusterRole Catalyst binds, impersonation of the ServiceAccounts of Catalyst's deployer
// namespace alone, no exec, attach, port-forward, proxy or token.
func operatorInvariants(id identity, q query) string {
	switch {
	case q.verb == "escalate":
		return "escalate"
	case q.verb == "bind" && (q.resource != "clusterroles" || q.name != "slipway-catalyst-deployer"):
		return "bind beyond the ClusterRole slipway-catalyst-deployer"
	case q.verb == "impersonate" && (q.group != "" || q.resource != "serviceaccounts" || id.deployerNamespace == "" || q.namespace != id.deployerNamespace):
		return "impersonation beyond the ServiceAccounts of the deployer namespace"
	case slices.Contains([]string{"pods/exec", "pods/attach", "pods/portforward", "serviceaccounts/token"}, q.resource):
		return "exec, attach, port-forward or a token"
	case strings.HasSuffix(q.resource, "/proxy"):
		return "a proxy"
	}
	return ""
}

// kubernetesDefault tells whether q is what Kubernetes grants every authenticated user
// (system:basic-user: the self reviews) and every ServiceAccount
// (system:cluster-trust-bundle-discovery: reading ClusterTrustBundles).
func kubernetesDefault(q query) bool {
	selfReview := q.verb == "create" && (q.group == "authorization.k8s.io" || q.group == "authentication.k8s.io") &&
		strings.HasPrefix(q.resource, "self")
	trustBundles := q.group == "certificates.k8s.io" && q.resource == "clustertrustbundles" && slices.Contains([]string{"get", "list", "watch"}, q.verb)
	return selfReview || trustBundles
}

// checkIdentity waits until the API server grants every documented right of id that space asks
// about (its RBAC cache follows the writes within moments), then asks every query of space once
// and fails on each answer the documentation does not give, and on each right that breaks an
// invariant.
func checkIdentity(ctx context.Context, t *testing.T, cs kubernetes.Interface, doc *rightsDoc, id identity, space []query,
	invariant func(identity, query) string) {
	t.Helper()
	var documented []query
	for _, q := range space {
		if doc.allows(id, q) {
			documented = append(documented, q)
		}
	}
	if len(documented) == 0 {
		t.Errorf("%s: no documented right in the matrix", id.user())
		return
	}
	var missing []query
	deadline := time.Now().Add(30 * time.Second)
	for {
		answers := ask(ctx, t, cs, id, documented)
		missing = missing[:0]
		for i, q := range documented {
			if !answers[i] {
				missing = append(missing, q)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	answers := ask(ctx, t, cs, id, space)
	var problems []string
	for _, q := range missing {
		problems = append(problems, fmt.Sprintf("documented, not granted: %s", q))
	}
	granted := 0
	for i, q := range space {
		if !answers[i] {
			continue
		}
		granted++
		if !doc.allows(id, q) {
			problems = append(problems, fmt.Sprintf("granted, not documented: %s", q))
		}
		if why := invariant(id, q); why != "" {
			problems = append(problems, fmt.Sprintf("granted, %s: %s", why, q))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		const most = 60
		more := ""
		if len(problems) > most {
			more = fmt.Sprintf("\n... and %d more", len(problems)-most)
			problems = problems[:most]
		}
		t.Errorf("%s (roles %s): %d rights differ from %s:\n%s%s", id.user(), strings.Join(id.roles, ", "),
			len(problems), operatorDoc, strings.Join(problems, "\n"), more)
	}
	t.Logf("%s: %d questions, %d granted", id.user(), len(space), granted)
}

// ask puts every query to the API server as a SubjectAccessReview for id and returns the answers
// in order.
func ask(ctx context.Context, t *testing.T, cs kubernetes.Interface, id identity, qs []query) []bool {
	t.Helper()
	answers := make([]bool, len(qs))
	errs := make(chan error, 1)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range next {
				q := qs[i]
				resource, sub, _ := strings.Cut(q.resource, "/")
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User:   id.user(),
					Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + id.namespace, "system:authenticated"},
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Verb: q.verb, Group: q.group, Resource: resource, Subresource: sub, Namespace: q.namespace, Name: q.name,
					},
				}}
				got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
				if err != nil {
					select {
					case errs <- fmt.Errorf("%s: %w", q, err):
					default:
					}
					continue
				}
				answers[i] = got.Status.Allowed
			}
		})
	}
	for i := range qs {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	return answers
}

// resourceInfo is one resource of the matrix.
type resourceInfo struct {
	group, resource string
	clusterScoped   bool
}

// matrixResources returns every resource the API server serves (all groups and versions, with
// their subresources), the impersonation targets, and those the Rights table names that the
// server does not serve (the Gateway API's, say).
func matrixResources(t *testing.T, cfg *rest.Config, doc *rightsDoc) []resourceInfo {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []resourceInfo
	add := func(r resourceInfo) {
		if k := r.group + "/" + r.resource; !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	for _, l := range lists {
		gv, err := parseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			add(resourceInfo{group: gv, resource: r.Name, clusterScoped: !r.Namespaced})
		}
	}
	for _, want := range []string{"pods/exec", "pods/attach", "pods/portforward", "pods/log", "serviceaccounts/token", "secrets"} {
		if !seen["/"+want] {
			t.Errorf("discovery does not list %s", want)
		}
	}
	// What impersonation names besides ServiceAccounts.
	for _, r := range []resourceInfo{{"", "users", true}, {"", "groups", true}, {"authentication.k8s.io", "uids", true},
		{"authentication.k8s.io", "userextras/scopes", true}} {
		add(r)
	}
	for _, row := range doc.rows {
		for _, g := range row.groups {
			for _, r := range row.resources {
				add(resourceInfo{group: g, resource: r})
			}
		}
	}
	return out
}

func parseGroupVersion(gv string) (string, error) {
	if !strings.Contains(gv, "/") {
		return "", nil // the core group: "v1"
	}
	g, _, ok := strings.Cut(gv, "/")
	if !ok || g == "" {
		return "", fmt.Errorf("group version %q", gv)
	}
	return g, nil
}

// withShippedRules adds to resources and names (by group/resource) those the rules of the roles
// among objs name, so that a rule the tables leave out is asked about too.
func withShippedRules(t *testing.T, resources []resourceInfo, names map[string]sets.Set[string],
	objs []*unstructured.Unstructured) ([]resourceInfo, map[string]sets.Set[string]) {
	t.Helper()
	rs := slices.Clone(resources)
	seen := sets.New[string]()
	for _, r := range rs {
		seen.Insert(r.group + "/" + r.resource)
	}
	all := map[string]sets.Set[string]{}
	for k, v := range names {
		all[k] = v.Clone()
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		var role rbacv1.ClusterRole
		convert(t, o, &role)
		for _, rule := range role.Rules {
			for _, g := range rule.APIGroups {
				for _, r := range rule.Resources {
					k := g + "/" + r
					if !seen.Has(k) && g != "*" && r != "*" {
						seen.Insert(k)
						rs = append(rs, resourceInfo{group: g, resource: r})
					}
					if len(rule.ResourceNames) > 0 {
						if all[k] == nil {
							all[k] = sets.New[string]()
						}
						all[k].Insert(rule.ResourceNames...)
					}
				}
			}
		}
	}
	return rs, all
}

// matrix returns the questions about resources: every verb in each of namespaces ("" is
// cluster-wide; cluster-scoped resources are asked about cluster-wide only), without a name and,
// for the resources a rule names objects of (names, by group/resource), with each such name and
// with names no rule gives.
func matrix(resources []resourceInfo, ruleNames map[string]sets.Set[string], namespaces []string) []query {
	var out []query
	for _, r := range resources {
		names := []string{""}
		if named := ruleNames[r.group+"/"+r.resource]; len(named) > 0 {
			names = append(names, sets.List(named)...)
			names = append(names, "slipway-decoy")
			switch r.resource {
			case "clusterroles":
				names = append(names, "cluster-admin")
			case "serviceaccounts":
				names = append(names, "default")
			}
		}
		nss := namespaces
		if r.clusterScoped {
			nss = []string{""}
		}
		for _, ns := range nss {
			for _, verb := range rightsVerbs {
				for _, name := range names {
					out = append(out, query{verb: verb, group: r.group, resource: r.resource, namespace: ns, name: name, clusterScoped: r.clusterScoped})
				}
			}
		}
	}
	return out
}

// installRBAC creates the release namespace and applies, server-side, the Namespaces,
// ServiceAccounts, roles and bindings among objs (nothing else: no workload runs). It returns the
// ServiceAccounts' names.
func installRBAC(ctx context.Context, t *testing.T, c client.Client, ns string, objs []*unstructured.Unstructured) []string {
	t.Helper()
	release := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := c.Get(ctx, client.ObjectKeyFromObject(release), release); err != nil {
		if err := c.Create(ctx, release); err != nil {
			t.Fatal(err)
		}
	}
	var sas []string
	for _, kinds := range [][]string{{"Namespace"}, {"ServiceAccount", "ClusterRole", "Role"}, {"ClusterRoleBinding", "RoleBinding"}} {
		for _, u := range objs {
			if !slices.Contains(kinds, u.GetKind()) {
				continue
			}
			u = u.DeepCopy()
			if u.GetKind() == "ServiceAccount" {
				if u.GetNamespace() != ns {
					t.Errorf("ServiceAccount %s in namespace %q, want the install's %s", u.GetName(), u.GetNamespace(), ns)
				}
				sas = append(sas, u.GetName())
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("slipway-rights-test"), client.ForceOwnership); err != nil {
				t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}
	return sas
}

// kustomizeBuild builds a kustomization of config/ as kubectl apply -k does.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// rightsDoc is what docs/operator.md says: the roles of each ServiceAccount, and the rules of
// each role.
type rightsDoc struct {
	identities map[string][]string
	rows       []rightsRow
	// names are the resourceNames of the rows, by group/resource.
	names map[string]sets.Set[string]
}

// rightsRow is one row of the Rights table.
type rightsRow struct {
	line                            int
	role                            string
	groups, resources, verbs, names []string
	// scope is "cluster", "operator namespace", "build namespace", "deployer namespace" or
	// "environment namespace".
	scope, why string
}

// allows tells whether a row of one of id's roles gives q.
func (d *rightsDoc) allows(id identity, q query) bool {
	for _, row := range d.rows {
		if !slices.Contains(id.roles, row.role) || !slices.Contains(row.groups, q.group) ||
			!slices.Contains(row.resources, q.resource) || !slices.Contains(row.verbs, q.verb) {
			continue
		}
		if len(row.names) > 0 && !slices.Contains(row.names, q.name) {
			continue
		}
		switch row.scope {
		case "cluster":
			return true
		case "build namespace":
			if id.buildNamespace != "" && q.namespace == id.buildNamespace && !q.clusterScoped {
				return true
			}
		case "deployer namespace":
			if id.deployerNamespace != "" && q.namespace == id.deployerNamespace && !q.clusterScoped {
				return true
			}
		case "operator namespace":
			// A Role: the identity's own namespace.
			if q.namespace == id.namespace && !q.clusterScoped {
				return true
			}
		case "environment namespace":
			// A ClusterRole bound by Catalyst's RoleBinding in the environment namespace.
			if id.environmentNamespace != "" && q.namespace == id.environmentNamespace && !q.clusterScoped {
				return true
			}
		}
	}
	return false
}

var backticked = regexp.MustCompile("`([^`]+)`")

// parseRightsDoc reads the Identities and Rights tables of docs/operator.md.
func parseRightsDoc(t *testing.T, path string) *rightsDoc {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := &rightsDoc{identities: map[string][]string{}, names: map[string]sets.Set[string]{}}
	var table string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			table = ""
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case strings.HasPrefix(line, "| Deployment | ServiceAccount | Roles |"):
			table = "identities"
			continue
		case strings.HasPrefix(line, "| Role | API group | Resources | Verbs | Names | Scope | Why |"):
			table = "rights"
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		}
		switch table {
		case "identities":
			sa := backticked.FindStringSubmatch(cells[1])
			if len(cells) != 3 || sa == nil {
				t.Fatalf("%s:%d: an Identities row is | Deployment | `ServiceAccount` | `role`, ... |", path, n)
			}
			doc.identities[sa[1]] = ticks(cells[2])
		case "rights":
			if len(cells) != 7 {
				t.Fatalf("%s:%d: a Rights row has 7 cells, this one %d", path, n, len(cells))
			}
			row := rightsRow{line: n, role: strings.Trim(cells[0], "`"), resources: ticks(cells[2]), verbs: words(cells[3]),
				names: ticks(cells[4]), scope: cells[5], why: cells[6]}
			for _, g := range words(cells[1]) {
				if g == "core" {
					g = ""
				}
				row.groups = append(row.groups, g)
			}
			if row.why == "" || len(row.groups) == 0 || len(row.resources) == 0 || len(row.verbs) == 0 {
				t.Errorf("%s:%d: a Rights row needs its groups, resources, verbs and why", path, n)
			}
			if !slices.Contains([]string{"cluster", "operator namespace", "build namespace", "deployer namespace", "environment namespace"}, row.scope) {
				t.Errorf("%s:%d: scope %q: want cluster, operator namespace, build namespace, deployer namespace or environment namespace", path, n, row.scope)
			}
			for _, v := range row.verbs {
				if !slices.Contains(rightsVerbs, v) {
					t.Errorf("%s:%d: verb %q is not among those asked about (%s)", path, n, v, strings.Join(rightsVerbs, ", "))
				}
			}
			for _, g := range row.groups {
				for _, r := range row.resources {
					if len(row.names) > 0 {
						if doc.names[g+"/"+r] == nil {
							doc.names[g+"/"+r] = sets.New[string]()
						}
						doc.names[g+"/"+r].Insert(row.names...)
					}
				}
			}
			doc.rows = append(doc.rows, row)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(doc.identities) == 0 || len(doc.rows) == 0 {
		t.Fatalf("%s: no Identities or no Rights table", path)
	}
	// Every role an identity holds has rows, and every row's role is held by someone.
	held := sets.New[string]()
	for sa, roles := range doc.identities {
		held.Insert(roles...)
		for _, r := range roles {
			if !slices.ContainsFunc(doc.rows, func(row rightsRow) bool { return row.role == r }) {
				t.Errorf("%s: %s holds %s, which has no row in the Rights table", path, sa, r)
			}
		}
	}
	for _, row := range doc.rows {
		if !held.Has(row.role) {
			t.Errorf("%s:%d: role %s is held by no identity of the Identities table", path, row.line, row.role)
		}
	}
	return doc
}

// ticks returns the backticked words of a cell.
func ticks(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// words returns a cell's comma-separated words, backticks removed.
func words(cell string) []string {
	var out []string
	for _, w := range strings.Split(cell, ",") {
		if w = strings.Trim(strings.TrimSpace(w), "`"); w != "" {
			out = append(out, w)
		}
	}
	return out
}
