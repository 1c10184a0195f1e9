package devenv

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/registry"
)

// The sample operator the manager registers: the project's own chart, published in several
// versions to the local registry as <registry>/charts/slipway:<version>.
const (
	// SampleOperator is the operator's name in the manager, and its chart's name.
	SampleOperator = "slipway"
	// SampleOperatorNamespace is where the sample operator is installed in each cluster.
	SampleOperatorNamespace = "slipway-system"
	// DevCluster is the name the local control plane is registered under, environment Dev.
	DevCluster = "dev"
	// sampleChartPath is the repository path the chart is pushed under.
	sampleChartPath = "charts"
	// chartDir is the chart's directory relative to the module root.
	chartDir = "charts/slipway"
	// chartRepoDir holds the HTTP chart repository in the state directory.
	chartRepoDir = "chart-repo"
)

// SampleOperatorVersions are the versions of charts/slipway that make dev publishes, oldest first.
var SampleOperatorVersions = []string{"0.1.0", "0.2.0"}

// chartRepos are where the sample operator's chart is published: as an OCI chart in the local
// registry, and as an HTTP chart repository (index.yaml and archives) on the same address.
type chartRepos struct {
	oci, http string
}

// publishSampleOperator loads the chart in dir with the Helm SDK and, once per version with
// Chart.yaml's version set to it, pushes it to the registry at addr as an OCI chart
// (<addr>/charts/slipway:<version>) and packages it into repoDir, which the registry's server
// serves as the chart repository http://<addr>/charts (index.yaml written last).
func publishSampleOperator(ctx context.Context, addr, dir, repoDir string, versions []string) (chartRepos, error) {
	repos := chartRepos{oci: "oci://" + addr + "/" + sampleChartPath, http: "http://" + addr + "/" + sampleChartPath}
	for _, v := range versions {
		c, err := chartAt(dir, v)
		if err != nil {
			return repos, err
		}
		files, err := chartFiles(c)
		if err != nil {
			return repos, err
		}
		ref := addr + "/" + sampleChartPath + "/" + SampleOperator + ":" + strings.ReplaceAll(v, "+", "_")
		if _, err := registry.PushChart(ctx, ref, files, true, nil); err != nil {
			return repos, fmt.Errorf("publishing the sample operator chart: %w", err)
		}
		if _, err := chartutil.Save(c, repoDir); err != nil {
			return repos, fmt.Errorf("packaging the sample operator chart %s: %w", v, err)
		}
	}
	index, err := repo.IndexDirectory(repoDir, repos.http)
	if err != nil {
		return repos, fmt.Errorf("indexing the sample operator's chart repository: %w", err)
	}
	index.SortEntries()
	if err := index.WriteFile(filepath.Join(repoDir, "index.yaml"), 0o644); err != nil {
		return repos, err
	}
	return repos, nil
}

// chartRepoHandler serves the chart repository in repoDir under /charts/ and everything else
// with next (the registry).
func chartRepoHandler(repoDir string, next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/"+sampleChartPath+"/", http.StripPrefix("/"+sampleChartPath+"/", http.FileServer(http.Dir(repoDir))))
	mux.Handle("/", next)
	return mux
}

// chartAt loads the chart in dir (the Helm SDK checks it, honouring .helmignore) and sets its
// version.
func chartAt(dir, version string) (*chart.Chart, error) {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	if c.Name() != SampleOperator {
		return nil, fmt.Errorf("the chart in %s is named %q, want %q", dir, c.Name(), SampleOperator)
	}
	c.Metadata.Version = version
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("the chart %s at version %s: %w", dir, version, err)
	}
	return c, nil
}

// chartFiles returns a loaded chart's files for registry.PushChart, Chart.yaml from its metadata.
func chartFiles(c *chart.Chart) (registry.ChartFiles, error) {
	meta, err := yaml.Marshal(c.Metadata)
	if err != nil {
		return nil, err
	}
	files := registry.ChartFiles{"Chart.yaml": string(meta)}
	for _, f := range c.Raw {
		if f.Name != "Chart.yaml" {
			files[f.Name] = string(f.Data)
		}
	}
	return files, nil
}

// findChartDir returns charts/slipway of the repository around the working directory.
func findChartDir() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	c := filepath.Join(root, chartDir)
	if _, err := os.Stat(filepath.Join(c, "Chart.yaml")); err != nil {
		return "", fmt.Errorf("no chart at %s (pass --chart-dir): %w", c, err)
	}
	return c, nil
}

// moduleRoot returns the nearest directory at or above the working directory that holds a
// go.mod: devenv runs from the repository (make dev, or its tests from their package directory).
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("not inside the slipway repository (no go.mod at or above " + wd + "): run make dev from it")
		}
	}
}
