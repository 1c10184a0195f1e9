package devimage

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/slipway-dev/slipway/internal/ociimage"
)

// TestOperator_ImageIsWhatMakeImageBuilds builds the operator image from the working tree and
// checks what a pod of it depends on: the nonroot user, its HOME, the CA bundle the operator's
// TLS clients read, and the static binary as entrypoint.
func TestOperator_ImageIsWhatMakeImageBuilds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	img, err := Operator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator image built in %s", time.Since(start).Round(time.Millisecond))
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != ociimage.User || !slices.Equal(cf.Config.Entrypoint, []string{"/operator"}) {
		t.Errorf("user %q entrypoint %q, want %q [/operator]", cf.Config.User, cf.Config.Entrypoint, ociimage.User)
	}
	for _, e := range []string{"HOME=" + ociimage.HomeDir, "SSL_CERT_FILE=" + ociimage.CAPath} {
		if !slices.Contains(cf.Config.Env, e) {
			t.Errorf("env %q lacks %s", cf.Config.Env, e)
		}
	}
	files := map[string]*tar.Header{}
	r := mutate.Extract(img)
	defer func() { _ = r.Close() }()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
	}
	if h := files["operator"]; h == nil || h.Mode&0o111 == 0 || h.Size < 1<<20 {
		t.Errorf("/operator in the image: %+v", h)
	}
	if h := files["etc/ssl/certs/ca-certificates.crt"]; h == nil || h.Size == 0 {
		t.Error("no CA bundle in the image")
	}
	if h := files["home/nonroot"]; h == nil || h.Uid != ociimage.UID {
		t.Errorf("home directory %+v, want one owned by %d", h, ociimage.UID)
	}
	// Same source, same digest: a second build re-imports nothing new.
	again, err := Operator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same tree: digests %s and %s", d1, d2)
	}
}
