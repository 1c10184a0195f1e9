package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"
)

// Media types of a Helm chart stored in an OCI registry (helm push, werf bundle publish).
const (
	HelmConfigMediaType     types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChartLayerMediaType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	ociManifestMediaType                    = types.OCIManifestSchema1
)

// ChartFiles are the files of a Helm chart by path relative to the chart's directory, e.g.
// "Chart.yaml" or "templates/configmap.yaml".
type ChartFiles map[string]string

// MinimalChart returns a chart named name at version with a Chart.yaml, a values.yaml and one
// ConfigMap template that records the version.
func MinimalChart(name, version string) ChartFiles {
	return ChartFiles{
		"Chart.yaml":  fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ndescription: sample chart\ntype: application\n", name, version),
		"values.yaml": "message: hello\n",
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-` + name + `
data:
  version: "` + version + `"
  message: {{ .Values.message | quote }}
`,
	}
}

// PushChart pushes files as an OCI Helm chart artifact to reference (host/repo:tag), the way
// `helm push` and `werf bundle publish` store charts, and returns the manifest digest. The config
// blob is Chart.yaml as JSON and the one layer a gzipped tar of the files under a directory named
// after the chart. insecure selects plain HTTP. It is used by the tests and by make dev.
func PushChart(ctx context.Context, reference string, files ChartFiles, insecure bool, auth authn.Authenticator) (v1.Hash, error) {
	img, err := chartImage(files)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("building the chart artifact: %w", err)
	}
	opts := []name.Option{name.StrictValidation}
	if insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.NewTag(reference, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("bad reference %s: %w", reference, err)
	}
	if auth == nil {
		auth = authn.Anonymous
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuth(auth)); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", ref, err)
	}
	return img.Digest()
}

// chartImage builds the OCI artifact of a chart.
func chartImage(files ChartFiles) (v1.Image, error) {
	chartYAML, ok := files["Chart.yaml"]
	if !ok {
		return nil, errors.New("the chart has no Chart.yaml")
	}
	var meta map[string]any
	if err := yaml.Unmarshal([]byte(chartYAML), &meta); err != nil {
		return nil, fmt.Errorf("parsing Chart.yaml: %w", err)
	}
	chartName, _ := meta["name"].(string)
	if chartName == "" {
		return nil, errors.New("the chart's Chart.yaml has no name")
	}
	config, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	content, err := ChartTarball(chartName, files)
	if err != nil {
		return nil, err
	}
	configLayer := static.NewLayer(config, HelmConfigMediaType)
	chartLayer := static.NewLayer(content, HelmChartLayerMediaType)
	configDesc, err := partial.Descriptor(configLayer)
	if err != nil {
		return nil, err
	}
	chartDesc, err := partial.Descriptor(chartLayer)
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     ociManifestMediaType,
		Config:        *configDesc,
		Layers:        []v1.Descriptor{*chartDesc},
	})
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&chartArtifact{manifest: manifest, config: config, layer: chartLayer})
}

// ChartTarball is the gzipped tar of files under chartName/, with fixed times and modes so the
// same chart always has the same digest.
func ChartTarball(chartName string, files ChartFiles) ([]byte, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	epoch := time.Unix(0, 0).UTC()
	for _, p := range paths {
		body := []byte(files[p])
		hdr := &tar.Header{Name: path.Join(chartName, p), Mode: 0o644, Size: int64(len(body)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// chartArtifact is a partial.CompressedImageCore with a raw config blob, which go-containerregistry
// pushes as it is (mutate would rewrite it into an image config).
type chartArtifact struct {
	manifest, config []byte
	layer            v1.Layer
}

func (a *chartArtifact) RawConfigFile() ([]byte, error)      { return a.config, nil }
func (a *chartArtifact) MediaType() (types.MediaType, error) { return ociManifestMediaType, nil }
func (a *chartArtifact) RawManifest() ([]byte, error)        { return a.manifest, nil }

func (a *chartArtifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, err := a.layer.Digest(); err == nil && d == h {
		return a.layer, nil
	}
	return nil, fmt.Errorf("no layer %s", h)
}
