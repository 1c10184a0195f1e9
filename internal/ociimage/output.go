package ociimage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// RefNameAnnotation names an image in an OCI layout's index.json.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// Push writes images to the registry reference ref (registry/repository:tag): the image itself
// when there is one, an image index of them when there are several. Credentials come from the
// Docker config ($DOCKER_CONFIG, ~/.docker/config.json) and its helpers; insecure allows plain
// HTTP (loopback registries get it anyway). It returns the digest the tag points to.
func Push(ctx context.Context, ref string, images []v1.Image, insecure bool) (v1.Hash, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	ro := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	switch len(images) {
	case 0:
		return v1.Hash{}, errors.New("no image to push")
	case 1:
		if err := remote.Write(r, images[0], ro...); err != nil {
			return v1.Hash{}, fmt.Errorf("pushing %s: %w", r, err)
		}
		return images[0].Digest()
	}
	idx, err := Index(images...)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.WriteIndex(r, idx, ro...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing %s: %w", r, err)
	}
	return idx.Digest()
}

// WriteLayout writes images into the OCI image layout directory dir under the name refName
// (index.json's org.opencontainers.image.ref.name), replacing an entry of the same name and
// keeping the others; one image is written as itself, several as an image index. It returns the
// digest of what refName names.
func WriteLayout(dir, refName string, images []v1.Image) (v1.Hash, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "index.json")); !errors.Is(statErr, os.ErrNotExist) {
			return v1.Hash{}, fmt.Errorf("OCI layout %s: %w", dir, err)
		}
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return v1.Hash{}, err
		}
	}
	annotated := layout.WithAnnotations(map[string]string{RefNameAnnotation: refName})
	same := match.Annotation(RefNameAnnotation, refName)
	switch len(images) {
	case 0:
		return v1.Hash{}, errors.New("no image to write")
	case 1:
		if err := p.ReplaceImage(images[0], same, annotated); err != nil {
			return v1.Hash{}, err
		}
		return images[0].Digest()
	}
	idx, err := Index(images...)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.ReplaceIndex(idx, same, annotated); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// WriteTarball writes one image as a `docker load` tarball tagged ref.
func WriteTarball(file, ref string, images []v1.Image) error {
	if len(images) != 1 {
		return fmt.Errorf("a docker tarball holds one platform's image, not %d: build one platform, or push", len(images))
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image tag %q: %w", ref, err)
	}
	return tarball.WriteToFile(file, tag, images[0])
}
