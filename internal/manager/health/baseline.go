package health

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
)

// Where a baseline comes from (Baseline.Source).
const (
	// BaselineDeploymentStart: captured on the cluster when a deployment started there, before
	// its install: the previous version's picture.
	BaselineDeploymentStart = "deployment-start"
	// BaselineLastHealthy: what the health loop's last Healthy check of the cluster saw.
	BaselineLastHealthy = "last-healthy"
)

// Baseline is what an operator's custom resources and metrics looked like on one cluster before
// a deployment (or at its last Healthy check): the picture a check compares with, so that a
// resource already failing then stays the tenant's and only what changed under the new version
// counts against it. The rollout engine stores it (store.OperatorBaseline, EncodeBaseline).
type Baseline struct {
	CapturedAt   time.Time `json:"capturedAt"`
	Source       string    `json:"source"`
	DeploymentID string    `json:"deploymentId,omitempty"`
	// Resources are the custom resources seen, by CRD name.
	Resources map[string][]BaselineResource `json:"resources"`
	// Metrics is the operator's metrics at capture; nil when they could not be read.
	Metrics *MetricsSnapshot `json:"metrics,omitempty"`
	// Before is the snapshot of the last Healthy check before this one, when there was one:
	// the error rate between Before and Metrics is the rate "before the deployment".
	Before *MetricsSnapshot `json:"before,omitempty"`
	// BeforeWindow, when set, is the window before the deployment as a check already computed
	// it: a release a rollback restored is judged on its own reconciles since it was restored
	// (Metrics is then that moment's snapshot), against the same window before the deployment
	// the deployment's checks used, not one that holds the failed version's errors.
	BeforeWindow *api.RateWindow `json:"beforeWindow,omitempty"`

	index map[string]*BaselineResource
}

// BaselineResource is one custom resource at capture time, in short keys (a baseline holds
// hundreds of them on every cluster).
type BaselineResource struct {
	// Name is "namespace/name" ("name" when cluster-scoped); UID tells a resource from a new one
	// of the same name.
	Name string `json:"n"`
	UID  string `json:"u"`
	// Generation is metadata.generation: a resource its user changed since is judged on its own.
	Generation int64 `json:"g,omitempty"`
	// Ready is whether it was Ready (Ready=True, or reconciled without a Ready condition);
	// Reason the reason it reported when it was not.
	Ready  bool   `json:"r,omitempty"`
	Reason string `json:"why,omitempty"`
}

// resource is the baseline's record of the resource with uid, or nil.
func (b *Baseline) resource(uid string) *BaselineResource {
	if b.index == nil {
		b.index = map[string]*BaselineResource{}
		for crd := range b.Resources {
			for i := range b.Resources[crd] {
				r := &b.Resources[crd][i]
				b.index[r.UID] = r
			}
		}
	}
	return b.index[uid]
}

// Summary is the baseline as the health detail shows it.
func (b *Baseline) Summary() *api.BaselineSummary {
	if b == nil {
		return nil
	}
	s := &api.BaselineSummary{CapturedAt: b.CapturedAt, Source: b.Source, DeploymentID: b.DeploymentID, Metrics: b.Metrics != nil}
	for _, rs := range b.Resources {
		s.Resources += len(rs)
		for _, r := range rs {
			if !r.Ready {
				s.Failing++
			}
		}
	}
	return s
}

// EncodeBaseline is the baseline as stored: gzipped JSON (500 resources take a few kB).
func EncodeBaseline(b *Baseline) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeBaseline reads a baseline EncodeBaseline wrote.
func DecodeBaseline(raw []byte) (*Baseline, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	return &b, nil
}
