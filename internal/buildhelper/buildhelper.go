// Package buildhelper is the part of a Catalyst build Job that holds credentials, run by the
// operator's own image in containers of their own (docs/catalyst.md, Build): `fetch` checks the
// commit out into a directory the build container reads, with the git credentials; `push` pushes
// the image the build container wrote as a tarball, with the registry's push credentials. The
// build container, which runs the pull request's Dockerfile, holds neither.
package buildhelper

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"

	"github.com/slipway-dev/slipway/internal/gitsource"
	"github.com/slipway-dev/slipway/internal/registry"
)

// Command is the operator's argument that runs a helper: `operator build-helper fetch|push ...`.
const Command = "build-helper"

// DefaultTimeout bounds a fetch or a push; the Job's activeDeadlineSeconds bounds the whole build.
const DefaultTimeout = 10 * time.Minute

// FetchOptions say what to check out where.
type FetchOptions struct {
	// URL, Branch and Commit of the repository (see gitsource.Options).
	URL, Branch, Commit string
	// CredentialsDir holds the git credentials as files named like the keys of a git Secret
	// (username, password, token, bearerToken); empty or missing means none.
	CredentialsDir string
	// Dest is the directory the commit's tree is written into.
	Dest    string
	Timeout time.Duration
}

// Fetch checks the commit out into o.Dest, without a .git directory: nothing of the credentials
// or the remote's configuration is left where the build reads.
func Fetch(ctx context.Context, o FetchOptions) error {
	data, err := readDir(o.CredentialsDir)
	if err != nil {
		return err
	}
	var creds *gitsource.Credentials
	if len(data) > 0 {
		if creds, err = gitsource.CredentialsFromSecretData(data); err != nil {
			return err
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	snap, err := gitsource.Fetch(ctx, gitsource.Options{URL: o.URL, Branch: o.Branch, Commit: o.Commit, Credentials: creds, Timeout: o.Timeout})
	if err != nil {
		return err
	}
	if err := snap.CheckoutDir(o.Dest); err != nil {
		return fmt.Errorf("checking out %s into %s: %w", snap.Commit(), o.Dest, err)
	}
	return nil
}

// PushOptions say what to push where.
type PushOptions struct {
	// Tarball is the image as `docker save` (and Kaniko's --tar-path, BuildKit's type=docker
	// output) write it: one image.
	Tarball string
	// Destination is the reference pushed, whatever the tarball names.
	Destination string
	// CredentialsDir holds the registry credentials: a docker config as the file
	// .dockerconfigjson (or username and password, or token, files); empty or missing means none.
	CredentialsDir string
	// Insecure allows plain HTTP and unverified TLS to the registry.
	Insecure bool
	Timeout  time.Duration
}

// Push pushes the tarball's image to o.Destination and returns its digest.
func Push(ctx context.Context, o PushOptions) (string, error) {
	var nopts []name.Option
	if o.Insecure {
		nopts = append(nopts, name.Insecure)
	}
	ref, err := name.NewTag(o.Destination, nopts...)
	if err != nil {
		return "", fmt.Errorf("destination %q: %w", o.Destination, err)
	}
	img, err := tarball.ImageFromPath(o.Tarball, nil)
	if err != nil {
		return "", fmt.Errorf("reading the built image %s: %w", o.Tarball, err)
	}
	auth, err := pushAuth(o.CredentialsDir, ref.RegistryStr())
	if err != nil {
		return "", err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ropts := []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithUserAgent("slipway-catalyst-build")}
	if o.Insecure {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // registry.insecure asks for it
		ropts = append(ropts, remote.WithTransport(t))
	}
	if err := remote.Write(ref, img, ropts...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	return digest.String(), nil
}

// pushAuth reads the registry credentials for host from dir.
func pushAuth(dir, host string) (authn.Authenticator, error) {
	data, err := readDir(dir)
	if err != nil || len(data) == 0 {
		return authn.Anonymous, err
	}
	creds, err := registry.CredentialsFromSecret(&corev1.Secret{Data: data}, host)
	if err != nil {
		return nil, err
	}
	return creds.Authenticator(), nil
}

// readDir reads the regular files of a mounted Secret volume (its keys; the ..data links and
// directories of the projection are skipped). A missing dir is empty.
func readDir(dir string) (map[string][]byte, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}

// Main runs `fetch` or `push` with args (after Command) and returns the exit code. Errors go
// to stderr (the build's log); a push writes the digest to --digest-file.
func Main(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: build-helper fetch|push [flags]")
		return 2
	}
	fs := flag.NewFlagSet(Command+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", DefaultTimeout, "bound of the whole operation")
	var run func() error
	switch args[0] {
	case "fetch":
		var o FetchOptions
		fs.StringVar(&o.URL, "url", "", "repository URL (http or https)")
		fs.StringVar(&o.Branch, "branch", "", "branch holding the commit")
		fs.StringVar(&o.Commit, "commit", "", "full commit hash")
		fs.StringVar(&o.CredentialsDir, "credentials", "", "directory of the git credentials (a mounted Secret)")
		fs.StringVar(&o.Dest, "dest", "", "directory to check the commit out into")
		run = func() error {
			o.Timeout = *timeout
			if err := Fetch(ctx, o); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "Fetched %s at %s\n", o.URL, o.Commit)
			return nil
		}
	case "push":
		var o PushOptions
		digestFile := fs.String("digest-file", "", "file to write the pushed digest to")
		fs.StringVar(&o.Tarball, "tarball", "", "the built image, a docker tarball")
		fs.StringVar(&o.Destination, "destination", "", "the reference to push, <repository>:<tag>")
		fs.StringVar(&o.CredentialsDir, "credentials", "", "directory of the registry credentials (a mounted Secret)")
		fs.BoolVar(&o.Insecure, "insecure", false, "plain HTTP or unverified TLS to the registry")
		run = func() error {
			o.Timeout = *timeout
			digest, err := Push(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "Pushed %s@%s\n", o.Destination, digest)
			if *digestFile != "" {
				return os.WriteFile(*digestFile, []byte(digest), 0o644)
			}
			return nil
		}
	default:
		fmt.Fprintf(stderr, "build-helper: unknown command %q (fetch or push)\n", args[0])
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if err := run(); err != nil {
		fmt.Fprintf(stderr, "build-helper %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
