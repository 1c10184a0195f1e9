package registry

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// manifestMediaTypes are the manifest and index types ManifestExists accepts.
var manifestMediaTypes = strings.Join([]string{
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
}, ", ")

// ManifestExists reports whether reference (host[:port]/path:tag or host[:port]/path@digest; a
// reference without either means the tag latest) names a manifest, with
// HEAD /v2/<name>/manifests/<tag-or-digest>. A 404, for an unknown manifest or repository,
// is false with no error.
func (c *Client) ManifestExists(ctx context.Context, reference string) (bool, error) {
	ref, err := name.ParseReference(reference)
	if err != nil {
		return false, &Error{Op: OpManifestExists, Repository: reference, Message: "invalid image reference", Err: err}
	}
	o, err := c.begin(ctx, OpManifestExists, ref.Context())
	if err != nil {
		return false, err
	}
	defer c.end(o)

	header := http.Header{"Accept": {manifestMediaTypes}}
	resp, err := c.send(o, http.MethodHead, c.baseURL(ref.Context())+"/manifests/"+ref.Identifier(), header)
	if err != nil {
		return false, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		_ = resp.Body.Close()
		return true, nil
	case http.StatusNotFound:
		_ = resp.Body.Close()
		return false, nil
	}
	return false, c.responseError(o, resp)
}
