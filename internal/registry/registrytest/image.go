package registrytest

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PushImage pushes a small container image (one random layer, a Docker v2 schema 2 manifest) to
// host/repo:tag over plain HTTP and returns its manifest digest: an image as a build would leave
// it, for code that asks whether an image exists.
func PushImage(t testing.TB, host, repo, tag string, opts ...PushOption) v1.Hash {
	t.Helper()
	cfg := pushConfig{auth: authn.Anonymous}
	for _, o := range opts {
		o(&cfg)
	}
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatalf("registrytest: building an image: %v", err)
	}
	ref, err := name.NewTag(host+"/"+repo+":"+tag, name.StrictValidation, name.Insecure)
	if err != nil {
		t.Fatalf("registrytest: bad reference: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultPushTimeout)
	defer cancel()
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuth(cfg.auth)); err != nil {
		t.Fatalf("registrytest: pushing %s: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatalf("registrytest: %v", err)
	}
	return digest
}
