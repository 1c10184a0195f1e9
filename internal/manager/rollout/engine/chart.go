package engine

import (
	"context"
	"fmt"
	"sync"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/slipway-dev/slipway/internal/manager/operators"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// fetched is a chart version and the names of its CRDs. chart is shared by every step that
// reads it; an install takes a chart of its own (installable).
type fetched struct {
	chart   *chart.Chart
	archive []byte
	crds    []string
	defs    []*apiextensionsv1.CustomResourceDefinition
}

// installable loads the chart again from its archive for one install: Helm changes the chart it
// installs (Validate rewrites its metadata, dependencies are enabled or dropped, imported values
// written), so installs running at once on several clusters must not share one.
func (f *fetched) installable() (*chart.Chart, error) {
	return operators.LoadArchive(f.archive)
}

// chartCache keeps the charts fetched recently: a deployment's steps, on one replica, fetch its
// chart once.
type chartCache struct {
	mu      sync.Mutex
	entries map[string]*fetched
	order   []string
}

const chartCacheSize = 32

func (c *chartCache) get(key string) *fetched {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[key]
}

func (c *chartCache) put(key string, f *fetched) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]*fetched{}
	}
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = f
	for len(c.order) > chartCacheSize {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// chartOf fetches the operator's chart at version (cached) with its CRDs.
func (e *Engine) chartOf(ctx context.Context, op *store.Operator, version string) (*fetched, error) {
	key := op.ChartRepository + "\x00" + op.ChartName + "\x00" + version
	if f := e.charts.get(key); f != nil {
		return f, nil
	}
	ref := operators.ChartRef{Repository: op.ChartRepository, Name: op.ChartName}
	if e.cfg.Credentials != nil {
		var err error
		if ref.Auth, err = e.cfg.Credentials(ctx, op); err != nil {
			return nil, fmt.Errorf("fetching %s %s: %w", op.Name, version, err)
		}
	}
	ch, err := e.cfg.Charts.Fetch(ctx, ref, version)
	if err != nil {
		return nil, fmt.Errorf("fetching %s %s: %w", op.Name, version, err)
	}
	defs, err := operators.ExtractCRDs(ch.Chart)
	if err != nil {
		return nil, fmt.Errorf("reading the CRDs of %s %s: %w", op.Name, version, err)
	}
	f := &fetched{chart: ch.Chart, archive: ch.Archive}
	for _, d := range defs {
		f.crds = append(f.crds, d.Name)
		f.defs = append(f.defs, d)
	}
	e.charts.put(key, f)
	return f, nil
}
