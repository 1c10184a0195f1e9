package charttest

import (
	"bytes"
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
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/registry/registrytest"
)

// Repository is a Helm chart repository served over HTTP for one test: GET /index.yaml and
// GET /charts/<name>-<version>.tgz, built with Helm's own index type. index.yaml carries an ETag
// (a digest of its content) and answers a matching If-None-Match with 304, as static hosts do.
type Repository struct {
	// URL is the repository's base URL (http://127.0.0.1:<port>), as given to helm repo add.
	URL string

	mu       sync.Mutex
	index    *repo.IndexFile
	archives map[string][]byte // by path, e.g. /charts/widget-operator-1.0.0.tgz
	requests atomic.Int64
	// indexReads counts GET /index.yaml, notModified those answered 304.
	indexReads, notModified atomic.Int64
	// refused counts requests a private repository answered 401.
	refused atomic.Int64
	// gate, when set (HoldIndex), holds index.yaml requests until the test lets them through.
	gate atomic.Pointer[Gate]
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
	return r.publish(meta, archive)
}

// AddArchive publishes a packaged chart (a .tgz as helm package writes it), such as a real
// operator's chart.
func (r *Repository) AddArchive(t testing.TB, archive []byte) {
	t.Helper()
	ch, err := chartloader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("charttest: loading the archive: %v", err)
	}
	if err := r.publish(ch.Metadata, archive); err != nil {
		t.Fatalf("charttest: %v", err)
	}
}

// Remove unpublishes version of chart name: its index entry and its archive.
func (r *Repository) Remove(t testing.TB, name, version string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.index.Entries[name][:0]
	found := false
	for _, cv := range r.index.Entries[name] {
		if cv.Version == version {
			found = true
			continue
		}
		kept = append(kept, cv)
	}
	if !found {
		t.Fatalf("charttest: the repository has no %s %s", name, version)
	}
	r.index.Entries[name] = kept
	delete(r.archives, fmt.Sprintf("/charts/%s-%s.tgz", name, version))
}

func (r *Repository) publish(meta *chart.Metadata, archive []byte) error {
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

// IndexReads is how many times index.yaml was asked for.
func (r *Repository) IndexReads() int64 { return r.indexReads.Load() }

// NotModified is how many index.yaml requests were answered 304.
func (r *Repository) NotModified() int64 { return r.notModified.Load() }

func (r *Repository) serve(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if req.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if g := r.gate.Load(); g != nil && req.URL.Path == "/index.yaml" {
		g.wait(req)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case req.URL.Path == "/index.yaml":
		r.indexReads.Add(1)
		out, err := yaml.Marshal(r.index)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		sum := sha256.Sum256(out)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if req.Header.Get("If-None-Match") == etag {
			r.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
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
