// Command image builds a slipway container image without a container engine (internal/ociimage):
// static binaries, one per platform, on an empty base with a nonroot user, pushed to a registry
// or written as an OCI layout or a `docker load` tarball. `make image` runs it for the operator
// and the manager:
//
//	go run ./hack/image --binary linux/amd64=bin/image/linux_amd64/manager --path /manager \
//	  --title slipway-manager --version 0.1.0 --revision "$(git rev-parse HEAD)" \
//	  --push registry.example.com/slipway/slipway-manager:0.1.0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/slipway-dev/slipway/internal/ociimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "image:", err)
		}
		os.Exit(2)
	}
}

// options are the command's flags.
type options struct {
	binaries  listFlag
	labels    listFlag
	path      string
	title     string
	desc      string
	version   string
	revision  string
	source    string
	created   string
	caBundle  string
	push      string
	insecure  bool
	layoutDir string
	tarball   string
	tag       string
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.Var(&o.binaries, "binary", "PLATFORM=FILE, a static binary per platform, e.g. linux/amd64=bin/image/linux_amd64/manager (repeat for more)")
	fs.StringVar(&o.path, "path", "", "the binary's path in the image, its entrypoint, e.g. /manager")
	fs.StringVar(&o.title, "title", "", "org.opencontainers.image.title, e.g. slipway-manager")
	fs.StringVar(&o.desc, "description", "", "org.opencontainers.image.description")
	fs.StringVar(&o.version, "version", "", "org.opencontainers.image.version")
	fs.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (the commit)")
	fs.StringVar(&o.source, "source", "https://github.com/slipway-dev/slipway", "org.opencontainers.image.source")
	fs.Var(&o.labels, "label", "KEY=VALUE, another label (repeat for more)")
	fs.StringVar(&o.created, "created", "", "creation time, Unix seconds or RFC 3339 (default $SOURCE_DATE_EPOCH, else now): the same binaries and time give the same digest")
	fs.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle installed in the image as the system's roots (\"\": none)")
	fs.StringVar(&o.push, "push", "", "push to this reference, registry/repository:tag")
	fs.BoolVar(&o.insecure, "insecure", false, "with --push: the registry speaks plain HTTP")
	fs.StringVar(&o.layoutDir, "oci-layout", "", "write into this OCI layout directory, named --tag")
	fs.StringVar(&o.tarball, "tarball", "", "write a `docker load` tarball (one platform), tagged --tag")
	fs.StringVar(&o.tag, "tag", "", "the name in --oci-layout (default --version) or the tag of --tarball (repository:tag)")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.push == "" && o.layoutDir == "" && o.tarball == "" {
		return errors.New("say where the image goes: --push, --oci-layout or --tarball")
	}
	images, err := o.build()
	if err != nil {
		return err
	}
	return o.write(ctx, images, stdout)
}

// build builds one image per --binary.
func (o *options) build() ([]v1.Image, error) {
	if len(o.binaries) == 0 {
		return nil, errors.New("--binary is required")
	}
	created, err := parseCreated(o.created)
	if err != nil {
		return nil, err
	}
	labels, err := o.imageLabels(created)
	if err != nil {
		return nil, err
	}
	var ca []byte
	if o.caBundle != "" {
		if ca, err = os.ReadFile(o.caBundle); err != nil {
			return nil, fmt.Errorf("--ca-bundle: %w (Debian's ca-certificates package provides it; \"\" builds without)", err)
		}
	}
	var images []v1.Image
	for _, b := range o.binaries {
		platform, file, ok := strings.Cut(b, "=")
		if !ok || file == "" {
			return nil, fmt.Errorf("--binary %q: want PLATFORM=FILE", b)
		}
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, fmt.Errorf("--binary %q: %w", b, err)
		}
		img, err := ociimage.Build(ociimage.Spec{Binary: file, Path: o.path, Platform: *p, Labels: labels, Created: created, CABundle: ca})
		if err != nil {
			return nil, fmt.Errorf("--binary %s: %w", b, err)
		}
		images = append(images, img)
	}
	return images, nil
}

func (o *options) imageLabels(created time.Time) (map[string]string, error) {
	labels := map[string]string{"org.opencontainers.image.created": created.UTC().Format(time.RFC3339)}
	for k, v := range map[string]string{"title": o.title, "description": o.desc, "version": o.version, "revision": o.revision, "source": o.source} {
		if v != "" {
			labels["org.opencontainers.image."+k] = v
		}
	}
	for _, l := range o.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--label %q: want KEY=VALUE", l)
		}
		labels[k] = v
	}
	return labels, nil
}

func (o *options) write(ctx context.Context, images []v1.Image, stdout io.Writer) error {
	if o.push != "" {
		d, err := ociimage.Push(ctx, o.push, images, o.insecure)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", o.push, d)
	}
	if o.layoutDir != "" {
		tag := o.tag
		if tag == "" {
			tag = o.version
		}
		if tag == "" {
			return errors.New("--oci-layout needs --tag or --version to name the image")
		}
		d, err := ociimage.WriteLayout(o.layoutDir, tag, images)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (%s) to the OCI layout %s\n", tag, d, o.layoutDir)
	}
	if o.tarball != "" {
		if o.tag == "" {
			return errors.New("--tarball needs --tag repository:tag")
		}
		if err := ociimage.WriteTarball(o.tarball, o.tag, images); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s to %s (docker load -i %s)\n", o.tag, o.tarball, o.tarball)
	}
	return nil
}

// parseCreated reads Unix seconds or RFC 3339; empty means $SOURCE_DATE_EPOCH, else now.
func parseCreated(s string) (time.Time, error) {
	if s == "" {
		s = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if s == "" {
		return time.Now().UTC().Truncate(time.Second), nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--created %q: want Unix seconds or RFC 3339", s)
	}
	return t.UTC(), nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
