package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/auth"
	"github.com/slipway-dev/slipway/internal/manager/crds"
	"github.com/slipway-dev/slipway/internal/manager/operators/charttest"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// The history test's CRD: swidgets.charttest.slipway.dev, A (Base) in 1.0.0, B (Compatible:
// allows yellow) in 2.0.0, A again in 3.0.0, dropped in 4.0.0 (which ships sgadgets instead).
const swidgets = "swidgets." + charttest.Group

func histChart(version, plural, kind string, level charttest.Level) charttest.ChartFiles {
	files := charttest.OperatorChart("hist-operator", version, level)
	delete(files, "crds/widgets.yaml")
	files["crds/"+plural+".yaml"] = charttest.YAML(charttest.NewCRD(plural, kind, level))
	return files
}

func histCharts() []charttest.ChartFiles {
	return []charttest.ChartFiles{
		histChart("1.0.0", "swidgets", "SWidget", charttest.Base),
		histChart("2.0.0", "swidgets", "SWidget", charttest.Compatible),
		histChart("3.0.0", "swidgets", "SWidget", charttest.Base),
		histChart("4.0.0", "sgadgets", "SGadget", charttest.Base),
	}
}

// TestCRDHistory_ByVersion: validate, approve and GET /crds/{name} report the schema each
// version ships (A → B → A; a dropped CRD), with migration notes given at registration and at
// POST /crds, and the CRD's status in every registered cluster (one unreachable).
func TestCRDHistory_ByVersion(t *testing.T) {
	repo := charttest.ServeRepository(t, histCharts()...)
	f := fleet(t)
	installHistCRDs(t, f.Servers[1].Config, f.Servers[2].Config)
	forEngine(t, func(t *testing.T, engine string) {
		b := setup(t, engine)
		admin, op := b.admin(), b.token("olga", auth.Operator)
		testMigrationNoteRefusals(t, b, repo.URL)
		r := b.do("POST", "/api/v1/operators", op, api.OperatorRequest{Name: "hist", Namespace: "hist-system",
			Chart: api.ChartRef{Repository: repo.URL, Name: "hist-operator"}, MigrationNotes: []api.MigrationNoteRequest{
				{CRD: swidgets, Version: "2.0.0", Text: "Yellow is allowed from 2.0.0."},
				{CRD: swidgets, Version: "3.0.0", URL: "https://docs.example.com/swidgets/a"},
			}})
		expect(t, "register", r, http.StatusCreated)

		// Registered clusters: east runs A as deployed, west B where 3.0.0 (A) was deployed,
		// north has no such CRD, south cannot be reached.
		register := func(name, env, kc string) {
			expect(t, "register "+name, b.do("POST", "/api/v1/clusters", admin,
				api.ClusterRequest{Name: name, Environment: env, Kubeconfig: kc}), http.StatusCreated)
		}
		register("east", "Staging", string(f.Servers[1].Kubeconfig))
		register("west", "Production", string(f.Servers[2].Kubeconfig))
		register("north", "Dev", string(f.Servers[0].Kubeconfig))
		proxy := startProxy(t, f.Servers[0].Config.Host)
		register("south", "Dev", withServer(t, string(f.Servers[0].Kubeconfig), "https://"+proxy.Addr().String()))
		_ = proxy.Close()
		operator, err := b.store.OperatorGetByName(context.Background(), "hist")
		if err != nil {
			t.Fatal(err)
		}
		seedLiveRelease(t, b, operator, "3.0.0", "east", "west")

		var crd api.CRD
		r = b.do("GET", "/api/v1/crds/"+swidgets, b.viewer(), nil)
		expect(t, "get", r, http.StatusOK)
		r.json(t, &crd)
		a, bb := crd.Revisions[0], crd.Revisions[1]
		if len(crd.Revisions) != 2 || a.Version != "1.0.0" || !slices.Equal(a.Versions, []string{"3.0.0", "1.0.0"}) ||
			!slices.Equal(bb.Versions, []string{"2.0.0"}) || a.MigrationNote == nil || a.MigrationNote.URL != "https://docs.example.com/swidgets/a" ||
			bb.MigrationNote == nil || bb.MigrationNote.Text != "Yellow is allowed from 2.0.0." {
			t.Fatalf("history: %s", r.body)
		}
		if len(crd.DroppedIn) != 1 || crd.DroppedIn[0] != (api.OperatorVersionRef{Operator: "hist", Version: "4.0.0"}) {
			t.Fatalf("dropped in: %+v", crd.DroppedIn)
		}
		testClusterStatus(t, crd, a.Digest, bb.Digest)

		testValidateByVersion(t, b, a.Digest, bb.Digest)

		// Approvals record the change as the versions ship it.
		for _, c := range []struct{ version, from, to string }{{"3.0.0", bb.Digest, a.Digest}, {"4.0.0", a.Digest, crds.DroppedDigest}} {
			r = b.do("POST", "/api/v1/crds/"+swidgets+"/approve", admin, api.ApproveRequest{Operator: "hist", Version: c.version, Reason: "checked"})
			expect(t, "approve "+c.version, r, http.StatusCreated)
			var got api.Approval
			r.json(t, &got)
			if got.FromDigest != c.from || got.ToDigest != c.to || got.ToVersion != c.version {
				t.Fatalf("approval of %s: %+v, want %s → %s", c.version, got, c.from, c.to)
			}
		}
		var rep api.ValidationReport
		b.do("POST", "/api/v1/crds/"+swidgets+"/validate", b.viewer(), api.ValidateRequest{Operator: "hist", Version: "4.0.0", Clusters: []string{"east"}}).json(t, &rep)
		if !rep.Approved {
			t.Fatalf("validate 4.0.0 after its approval: %+v", rep)
		}

		testPostedNote(t, b)
		testApprovalNotes(t, b, operator)
	})
}

// testValidateByVersion validates 3.0.0 (A again) and 4.0.0 (dropped) against the clusters.
func testValidateByVersion(t *testing.T, b *bundle, a, bb string) {
	t.Helper()
	var rep api.ValidationReport
	r := b.do("POST", "/api/v1/crds/"+swidgets+"/validate", b.viewer(), api.ValidateRequest{Operator: "hist", Version: "3.0.0"})
	expect(t, "validate 3.0.0", r, http.StatusOK)
	r.json(t, &rep)
	if rep.To.Digest != a || rep.To.Dropped || rep.From == nil || rep.From.Version != "2.0.0" || rep.From.Digest != bb || !rep.Breaking ||
		rep.To.MigrationNote == nil || len(rep.MigrationNotes) != 1 || rep.MigrationNotes[0].Version != "3.0.0" || rep.MigrationNotes[0].Digest != a {
		t.Fatalf("3.0.0 (A again) against 2.0.0 (B): %s", r.body)
	}
	if west := clusterCheck(t, rep, "west"); !slices.ContainsFunc(west.InvalidObjects, func(o api.InvalidObject) bool { return o.Name == "sunny" }) {
		t.Fatalf("west's yellow widget is valid under A: %+v", west)
	}
	// From 1.0.0 to 3.0.0: the notes of the way (B's at 2.0.0; A is where it starts).
	rep = api.ValidationReport{}
	b.do("POST", "/api/v1/crds/"+swidgets+"/validate", b.viewer(), api.ValidateRequest{Operator: "hist", Version: "3.0.0", BaseVersion: "1.0.0",
		Clusters: []string{"east"}}).json(t, &rep)
	if len(rep.MigrationNotes) != 1 || rep.MigrationNotes[0].Digest != bb || len(rep.Changes) != 0 || rep.Breaking {
		t.Fatalf("3.0.0 against 1.0.0 (the same A): %+v", rep)
	}

	rep = api.ValidationReport{}
	r = b.do("POST", "/api/v1/crds/"+swidgets+"/validate", b.viewer(), api.ValidateRequest{Operator: "hist", Version: "4.0.0"})
	expect(t, "validate 4.0.0", r, http.StatusOK)
	r.json(t, &rep)
	if !rep.To.Dropped || rep.To.Digest != crds.DroppedDigest || rep.From == nil || rep.From.Version != "3.0.0" || rep.From.Digest != a ||
		!rep.Breaking || !rep.ApprovalRequired || rep.Approved || len(rep.Changes) != 1 || rep.Changes[0].Kind != "crdDropped" || !rep.Changes[0].Breaking {
		t.Fatalf("4.0.0 drops the CRD: %s", r.body)
	}
	west := clusterCheck(t, rep, "west")
	if !west.Installed || west.Objects != 1 || len(west.InvalidObjects) != 1 || west.InvalidObjects[0].Name != "sunny" ||
		!strings.Contains(west.InvalidObjects[0].Errors[0], "does not ship CRD") {
		t.Fatalf("west stores a widget 4.0.0 drops: %+v", west)
	}
	if east := clusterCheck(t, rep, "east"); !east.Installed || east.Objects != 0 || len(east.InvalidObjects) != 0 {
		t.Fatalf("east stores none: %+v", east)
	}
	if south := clusterCheck(t, rep, "south"); south.Error == "" {
		t.Fatalf("south is unreachable: %+v", south)
	}
	// Without objects anywhere, dropping is compatible.
	rep = api.ValidationReport{}
	b.do("POST", "/api/v1/crds/"+swidgets+"/validate", b.viewer(), api.ValidateRequest{Operator: "hist", Version: "4.0.0", Clusters: []string{"east", "north"}}).json(t, &rep)
	if !rep.To.Dropped || rep.Breaking || rep.ApprovalRequired || rep.Changes[0].Breaking {
		t.Fatalf("4.0.0 where no object is stored: %+v", rep)
	}
	for _, tt := range []struct {
		name  string
		crd   string
		req   api.ValidateRequest
		field string
	}{
		{"unknown version", swidgets, api.ValidateRequest{Operator: "hist", Version: "5.0.0"}, "version"},
		{"base that drops it", swidgets, api.ValidateRequest{Operator: "hist", Version: "2.0.0", BaseVersion: "4.0.0"}, "baseVersion"},
		{"unknown base", swidgets, api.ValidateRequest{Operator: "hist", Version: "2.0.0", BaseVersion: "0.1.0"}, "baseVersion"},
		{"never shipped, not dropped", "sgadgets." + charttest.Group, api.ValidateRequest{Operator: "hist", Version: "1.0.0"}, "version"},
	} {
		expectInvalid(t, tt.name, b.do("POST", "/api/v1/crds/"+tt.crd+"/validate", b.viewer(), tt.req), tt.field)
	}
}

// testClusterStatus checks GET /crds/{name}'s clusters.
func testClusterStatus(t *testing.T, crd api.CRD, a, bb string) {
	t.Helper()
	by := map[string]api.CRDClusterStatus{}
	for _, c := range crd.Clusters {
		by[c.Cluster] = c
	}
	if len(crd.Clusters) != 4 {
		t.Fatalf("clusters: %+v", crd.Clusters)
	}
	east, west, north, south := by["east"], by["west"], by["north"], by["south"]
	deployed := api.DeployedCRD{Operator: "hist", Version: "3.0.0", Digest: a}
	if !east.Installed || east.Revision == nil || east.Revision.Digest != a || east.Revision.Version != "1.0.0" || east.Revision.Operator != "hist" ||
		east.Deployed == nil || east.Deployed.DeploymentID == "" || !east.MatchesDeployed || east.Environment != "Staging" ||
		!slices.Equal(east.ServedVersions, []string{"v1alpha1"}) || east.StorageVersion != "v1alpha1" || !slices.Equal(east.StoredVersions, []string{"v1alpha1"}) {
		t.Fatalf("east runs A as deployed: %+v", east)
	}
	east.Deployed.DeploymentID = ""
	if *east.Deployed != deployed {
		t.Fatalf("east's deployed: %+v", east.Deployed)
	}
	if !west.Installed || west.Revision == nil || west.Revision.Digest != bb || west.MatchesDeployed || west.Deployed == nil || west.Deployed.Digest != a {
		t.Fatalf("west runs B where A was deployed: %+v", west)
	}
	if north.Installed || north.Revision != nil || north.Deployed != nil || north.MatchesDeployed || north.Error != "" {
		t.Fatalf("north has no such CRD: %+v", north)
	}
	if south.Error == "" || south.Installed || south.Cluster != "south" {
		t.Fatalf("south is unreachable: %+v", south)
	}
}

// testMigrationNoteRefusals: bad notes at registration are 400s naming the field, and nothing is stored.
func testMigrationNoteRefusals(t *testing.T, b *bundle, repoURL string) {
	t.Helper()
	before := b.counts()
	for _, tt := range []struct {
		name  string
		notes []api.MigrationNoteRequest
		field string
	}{
		{"no CRD", []api.MigrationNoteRequest{{Text: "x"}}, "migrationNotes[0].crd"},
		{"empty note", []api.MigrationNoteRequest{{CRD: swidgets}}, "migrationNotes[0]"},
		{"ftp link", []api.MigrationNoteRequest{{CRD: swidgets, URL: "ftp://docs.example.com/x"}}, "migrationNotes[0].url"},
		{"script link", []api.MigrationNoteRequest{{CRD: swidgets, URL: "javascript:alert(1)"}}, "migrationNotes[0].url"},
		{"relative link", []api.MigrationNoteRequest{{CRD: swidgets, URL: "/guide"}}, "migrationNotes[0].url"},
		{"credentials in the link", []api.MigrationNoteRequest{{CRD: swidgets, URL: "https://u:p@docs.example.com/"}}, "migrationNotes[0].url"},
		{"long link", []api.MigrationNoteRequest{{CRD: swidgets, URL: "https://docs.example.com/" + strings.Repeat("a", crds.MaxNoteURL)}}, "migrationNotes[0].url"},
		{"long text", []api.MigrationNoteRequest{{CRD: swidgets, Text: strings.Repeat("é", crds.MaxNoteText+1)}}, "migrationNotes[0].text"},
		{"unknown version", []api.MigrationNoteRequest{{CRD: swidgets, Version: "9.9.9", Text: "x"}}, "migrationNotes[0].version"},
		{"CRD no version ships", []api.MigrationNoteRequest{{CRD: "nopes.example.com", Text: "x"}}, "migrationNotes[0].crd"},
		{"version that dropped it", []api.MigrationNoteRequest{{CRD: swidgets, Version: "4.0.0", Text: "x"}}, "migrationNotes[0].crd"},
		{"two notes for one revision", []api.MigrationNoteRequest{{CRD: swidgets, Version: "1.0.0", Text: "x"}, {CRD: swidgets, Version: "3.0.0", Text: "y"}}, "migrationNotes[1]"},
	} {
		expectInvalid(t, tt.name, b.do("POST", "/api/v1/operators", b.admin(), api.OperatorRequest{Name: "hist", Namespace: "hist-system",
			Chart: api.ChartRef{Repository: repoURL, Name: "hist-operator"}, MigrationNotes: tt.notes}), tt.field)
	}
	if after := b.counts(); after != before {
		t.Fatalf("refused registrations wrote to the store: %+v, then %+v", before, after)
	}
}

// testPostedNote: POST /crds takes a migration note for the revision it records.
func testPostedNote(t *testing.T, b *bundle) {
	t.Helper()
	def := quoted(charttest.YAML(charttest.NewCRD("pgadgets", "PGadget", charttest.Compatible)))
	expectInvalid(t, "posted note with a bad link", b.do("POST", "/api/v1/crds", b.admin(),
		`{"definition": `+def+`, "version": "r1", "migrationNote": {"url": "file:///etc/passwd"}}`), "migrationNote.url")
	r := b.do("POST", "/api/v1/crds", b.admin(), `{"definition": `+def+`, "version": "r1", "migrationNote": {"text": "Add **replicas**."}}`)
	expect(t, "post with a note", r, http.StatusCreated)
	var crd api.CRD
	r.json(t, &crd)
	if len(crd.Revisions) != 1 || crd.Revisions[0].MigrationNote == nil || crd.Revisions[0].MigrationNote.Text != "Add **replicas**." {
		t.Fatalf("posted revision: %s", r.body)
	}
}

// testApprovalNotes: an approval shows its deployment's migration notes (as planning stores them).
func testApprovalNotes(t *testing.T, b *bundle, op *store.Operator) {
	t.Helper()
	ctx := context.Background()
	d, err := b.store.DeploymentCreate(ctx, &store.Deployment{OperatorID: op.ID, Version: "3.0.0", Strategy: "Direct",
		Status: store.DeploymentWaitingApproval, RequestedBy: "olga", CreatedAt: time.Now(),
		Clusters: []*store.DeploymentCluster{{ClusterName: "north", Environment: store.EnvironmentDev}}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := b.store.ApprovalCreate(ctx, &store.Approval{DeploymentID: d.ID, Kind: "breakingCRD", RequiredRole: "Admin", Required: 1,
		RequestedBy: "olga", Status: store.ApprovalPending, Reason: "breaking changes", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	note := &store.DeploymentMigrationNote{CRDName: swidgets, Version: "3.0.0", Digest: "sha256:a", Note: store.MigrationNote{Text: "Recolour yellow widgets.", URL: "https://docs.example.com/a"}}
	if _, err := b.store.DeploymentMigrationNotesSet(ctx, d.ID, []*store.DeploymentMigrationNote{note}); err != nil {
		t.Fatal(err)
	}
	want := []api.RevisionNote{{CRD: swidgets, Version: "3.0.0", Digest: "sha256:a", Note: api.MigrationNote{Text: "Recolour yellow widgets.", URL: "https://docs.example.com/a"}}}
	var list api.ApprovalList
	b.do("GET", "/api/v1/approvals?deploymentId="+d.ID, b.viewer(), nil).json(t, &list)
	if len(list.Items) != 1 || !slices.Equal(list.Items[0].MigrationNotes, want) {
		t.Fatalf("approvals: %+v", list)
	}
	var decided api.DeploymentApproval
	r := b.do("POST", "/api/v1/approvals/"+a.ID+"/approve", b.admin(), api.DecisionRequest{Comment: "read the note"})
	expect(t, "approve", r, http.StatusOK)
	r.json(t, &decided)
	if !slices.Equal(decided.MigrationNotes, want) {
		t.Fatalf("decided approval: %s", r.body)
	}
}

func clusterCheck(t *testing.T, rep api.ValidationReport, name string) api.ClusterCheck {
	t.Helper()
	for _, c := range rep.Clusters {
		if c.Cluster == name {
			return c
		}
	}
	t.Fatalf("no check of cluster %s: %+v", name, rep.Clusters)
	return api.ClusterCheck{}
}

// seedLiveRelease records version of op as deployed and healthy on clusters, as a completed
// deployment leaves it.
func seedLiveRelease(t *testing.T, b *bundle, op *store.Operator, version string, clusters ...string) {
	t.Helper()
	d := &store.Deployment{ID: uuid.NewString(), OperatorID: op.ID, Version: version, Strategy: "Direct", Status: store.DeploymentCompleted,
		RequestedBy: "olga", CreatedAt: time.Now()}
	for _, c := range clusters {
		d.Clusters = append(d.Clusters, &store.DeploymentCluster{ClusterName: c, Environment: store.EnvironmentStaging,
			Status: store.ClusterHealthy, HelmRevision: 1, Namespace: op.Namespace, Release: op.Name})
	}
	if _, err := b.store.DeploymentCreate(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

var histCRDsOnce sync.Once

// installHistCRDs installs swidgets as the charts ship it: A (3.0.0's) in east's server, B
// (2.0.0's) with a yellow widget, which only B allows, in west's.
func installHistCRDs(t *testing.T, east, west *rest.Config) {
	t.Helper()
	var err error
	histCRDsOnce.Do(func() {
		if err = installCRD(east, charttest.NewCRD("swidgets", "SWidget", charttest.Base)); err != nil {
			return
		}
		if err = installCRD(west, charttest.NewCRD("swidgets", "SWidget", charttest.Compatible)); err != nil {
			return
		}
		err = createYellow(west)
	})
	if err != nil {
		t.Fatalf("installing swidgets: %v", err)
	}
}

func installCRD(cfg *rest.Config, crd *apiextensionsv1.CustomResourceDefinition) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if established(got) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func createYellow(cfg *rest.Config) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gvr := schema.GroupVersionResource{Group: charttest.Group, Version: "v1alpha1", Resource: "swidgets"}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": charttest.Group + "/v1alpha1", "kind": "SWidget",
		"metadata": map[string]any{"name": "sunny", "namespace": "default"},
		"spec":     map[string]any{"size": int64(3), "color": "yellow"},
	}}
	_, err = dyn.Resource(gvr).Namespace("default").Create(context.Background(), obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// tcpProxy forwards TCP connections to a host until closed; closing also ends the connections
// it carries, so pooled clients cannot keep using it.
type tcpProxy struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (p *tcpProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *tcpProxy) Close() error {
	err := p.Listener.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	return err
}

// startProxy forwards TCP connections to the host of upstream (a URL).
func startProxy(t *testing.T, upstream string) *tcpProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{Listener: l}
	t.Cleanup(func() { _ = p.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", u.Host)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.track(c)
			p.track(up)
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return p
}
