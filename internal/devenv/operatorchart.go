package devenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"github.com/slipway-dev/slipway/internal/devimage"
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
)

// SampleOperatorVersions are the versions of charts/slipway that make dev publishes, oldest first.
var SampleOperatorVersions = []string{"0.1.0", "0.2.0"}

// publishSampleOperator loads the chart in dir with the Helm SDK and pushes it to the registry
// at addr once per version, with Chart.yaml's version set to it, as an OCI chart
// (<addr>/charts/slipway:<version>). It returns the chart repository to register:
// oci://<addr>/charts.
func publishSampleOperator(ctx context.Context, addr, dir string, versions []string) (string, error) {
	for _, v := range versions {
		c, err := chartAt(dir, v)
		if err != nil {
			return "", err
		}
		files, err := chartFiles(c)
		if err != nil {
			return "", err
		}
		ref := addr + "/" + sampleChartPath + "/" + SampleOperator + ":" + strings.ReplaceAll(v, "+", "_")
		if _, err := registry.PushChart(ctx, ref, files, true, nil); err != nil {
			return "", fmt.Errorf("publishing the sample operator chart: %w", err)
		}
	}
	return "oci://" + addr + "/" + sampleChartPath, nil
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
	root, err := devimage.ModuleRoot()
	if err != nil {
		return "", err
	}
	c := filepath.Join(root, chartDir)
	if _, err := os.Stat(filepath.Join(c, "Chart.yaml")); err != nil {
		return "", fmt.Errorf("no chart at %s (pass --chart-dir): %w", c, err)
	}
	return c, nil
}
