package charttest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// Repository is a Helm chart repository served over HTTP for one test: GET /index.yaml and
// GET /charts/<name>-<version>.tgz, built with Helm's own index type.
type Repository struct {
	// URL is the repository's base URL (http://127.0.0.1:<port>), as given to helm repo add.
	URL string

	mu       sync.Mutex
	index    *repo.IndexFile
	archives map[string][]byte // by path, e.g. /charts/widget-operator-1.0.0.tgz
	requests atomic.Int64
}

// ServeRepository starts a chart repository holding charts and stops it when the test ends.
func ServeRepository(t testing.TB, charts ...ChartFiles) *Repository {
	t.Helper()
	r := &Repository{index: repo.NewIndexFile(), archives: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	for _, c := range charts {
		r.Add(t, c)
	}
	return r
}

// Add publishes one more chart version.
func (r *Repository) Add(t testing.TB, files ChartFiles) {
	t.Helper()
	if err := r.add(files); err != nil {
		t.Fatalf("charttest: %v", err)
	}
}

func (r *Repository) add(files ChartFiles) error {
	meta, err := chartMetadata(files)
	if err != nil {
		return err
	}
	archive, err := Archive(files)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(archive)
	name := fmt.Sprintf("%s-%s.tgz", meta.Name, meta.Version)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.index.MustAdd(meta, name, r.URL+"/charts", hex.EncodeToString(sum[:])); err != nil {
		return err
	}
	r.index.SortEntries()
	r.archives["/charts/"+name] = archive
	return nil
}

// Requests is how many requests the repository has served.
func (r *Repository) Requests() int64 { return r.requests.Load() }

func (r *Repository) serve(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if req.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case req.URL.Path == "/index.yaml":
		out, err := yaml.Marshal(r.index)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write(out)
	case strings.HasPrefix(req.URL.Path, "/charts/"):
		a, ok := r.archives[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(a)
	default:
		http.NotFound(w, req)
	}
}

// PushOCI pushes each chart to reg as the OCI artifact <repoPath>/<chart name>:<version>, the
// layout `helm push chart.tgz oci://<host>/<repoPath>` makes, and returns the repository
// reference to register: oci://<host>/<repoPath>.
func PushOCI(t testing.TB, reg *registrytest.Registry, repoPath string, charts ...ChartFiles) string {
	t.Helper()
	for _, files := range charts {
		meta, err := chartMetadata(files)
		if err != nil {
			t.Fatalf("charttest: %v", err)
		}
		registrytest.PushChart(t, reg.Host, repoPath+"/"+meta.Name, strings.ReplaceAll(meta.Version, "+", "_"), files)
	}
	return "oci://" + reg.Host + "/" + repoPath
}

// chartMetadata parses and validates the chart's Chart.yaml.
func chartMetadata(files ChartFiles) (*chart.Metadata, error) {
	raw, ok := files["Chart.yaml"]
	if !ok {
		return nil, errors.New("charttest: the chart has no Chart.yaml")
	}
	meta := &chart.Metadata{}
	if err := yaml.Unmarshal([]byte(raw), meta); err != nil {
		return nil, fmt.Errorf("charttest: parsing Chart.yaml: %w", err)
	}
	if err := meta.Validate(); err != nil {
		return nil, fmt.Errorf("charttest: Chart.yaml: %w", err)
	}
	return meta, nil
}
