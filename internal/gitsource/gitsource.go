package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Defaults of the bounds in Options.
const (
	DefaultTimeout          = 2 * time.Minute
	DefaultMaxFetchBytes    = 128 << 20
	DefaultMaxCheckoutBytes = 256 << 20
)

// Options say what to fetch and how.
type Options struct {
	// URL of the repository, http:// or https://, without credentials.
	URL string
	// Branch to fetch (or resolve). Fetch needs Branch, Commit or both.
	Branch string
	// Commit is the full hash to fetch. Empty means the head of Branch.
	Commit string
	// Credentials for the server, nil for none.
	Credentials *Credentials
	// CABundle holds extra PEM certificates trusted for https URLs.
	CABundle []byte
	// Timeout bounds the whole operation; zero means DefaultTimeout.
	Timeout time.Duration
	// MaxFetchBytes bounds the size of each pack downloaded; zero means DefaultMaxFetchBytes.
	MaxFetchBytes int64
	// MaxCheckoutBytes bounds the total size of the files of the commit's tree, checked before
	// a checkout; zero means DefaultMaxCheckoutBytes.
	MaxCheckoutBytes int64
}

var fullHash = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

func (o Options) validate() (Options, error) {
	u, err := url.Parse(o.URL)
	switch {
	case err != nil:
		return o, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return o, fmt.Errorf("%w: %q is not an http:// or https:// URL", ErrInvalidURL, u.Redacted())
	case u.User != nil:
		return o, fmt.Errorf("%w: %q carries credentials; pass them as Credentials", ErrInvalidURL, u.Redacted())
	case u.Host == "":
		return o, fmt.Errorf("%w: %q has no host", ErrInvalidURL, o.URL)
	case o.Commit != "" && !fullHash.MatchString(o.Commit):
		return o, fmt.Errorf("%w: %q is not a full lowercase commit hash", ErrCommitNotFound, o.Commit)
	case o.Branch != "" && plumbing.NewBranchReferenceName(o.Branch).Validate() != nil:
		return o, fmt.Errorf("%w: %q is not a branch name", ErrBranchNotFound, o.Branch)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxFetchBytes <= 0 {
		o.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if o.MaxCheckoutBytes <= 0 {
		o.MaxCheckoutBytes = DefaultMaxCheckoutBytes
	}
	return o, nil
}

// ResolveBranch returns the hash of the head of o.Branch, asking the server for its refs only (no
// objects are downloaded). Commit and the size bounds are ignored.
func ResolveBranch(ctx context.Context, o Options) (string, error) {
	o, err := o.validate()
	if err != nil {
		return "", err
	}
	if o.Branch == "" {
		return "", fmt.Errorf("%w: no branch given", ErrBranchNotFound)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	remote := git.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{o.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: o.Credentials.auth(), CABundle: o.CABundle})
	if err != nil {
		return "", classify(err, o.URL, o.Credentials.auth() != nil)
	}
	want := plumbing.NewBranchReferenceName(o.Branch)
	for _, ref := range refs {
		if ref.Name() == want && ref.Type() == plumbing.HashReference {
			return ref.Hash().String(), nil
		}
	}
	return "", fmt.Errorf("%w: %s has no branch %q", ErrBranchNotFound, o.URL, o.Branch)
}

// Fetch downloads the repository at o.Commit (or at the head of o.Branch when Commit is empty)
// into memory and returns a Snapshot of that commit. It downloads as little as it can:
//
//  1. the tip of Branch alone (depth 1), which is enough when Commit is that tip or empty;
//  2. otherwise Commit alone (depth 1), when the server allows asking for a commit by hash
//     (GitHub, GitLab, git with uploadpack.allowReachableSHA1InWant);
//  3. otherwise the full history of Branch, then of every branch and tag, and looks Commit up.
//
// Each download is bounded by MaxFetchBytes, the whole call by Timeout.
func Fetch(ctx context.Context, o Options) (*Snapshot, error) {
	o, err := o.validate()
	if err != nil {
		return nil, err
	}
	if o.Branch == "" && o.Commit == "" {
		return nil, fmt.Errorf("%w: give a branch or a commit", ErrCommitNotFound)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	f := &fetcher{o: o}
	snap, err := f.fetch(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
		return nil, fmt.Errorf("%w after %s: %s: %w", ErrTimeout, o.Timeout, o.URL, err)
	}
	return snap, err
}

type fetcher struct {
	o Options
}

func (f *fetcher) fetch(ctx context.Context) (*Snapshot, error) {
	o := f.o
	branchMissing := false
	if o.Branch != "" {
		repo, err := f.download(ctx, 1, branchRefSpec(o.Branch))
		var noMatch git.NoMatchingRefSpecError
		switch {
		case errors.As(err, &noMatch) && o.Commit == "":
			return nil, fmt.Errorf("%w: %s has no branch %q", ErrBranchNotFound, o.URL, o.Branch)
		case errors.As(err, &noMatch):
			branchMissing = true
		case err != nil:
			return nil, err
		default:
			tip, err := repo.Reference(remoteBranch(o.Branch), true)
			if err != nil {
				return nil, fmt.Errorf("%s: reading the fetched branch %q: %w", o.URL, o.Branch, err)
			}
			if o.Commit == "" || tip.Hash().String() == o.Commit {
				return f.snapshot(repo, tip.Hash(), true)
			}
		}
	}

	// The commit by hash, when the server allows it.
	repo, err := f.download(ctx, 1, config.RefSpec(o.Commit+":refs/catalyst/commit"))
	switch {
	case err == nil:
		return f.snapshot(repo, plumbing.NewHash(o.Commit), true)
	case errors.Is(err, git.ErrExactSHA1NotSupported):
		// Fall back to history below.
	case strings.Contains(err.Error(), "not our ref"):
		// The server supports asking by hash and refused this one: it has no such reachable
		// commit (git and GitHub say "upload-pack: not our ref <hash>").
		return nil, fmt.Errorf("%w: %s has no commit %s reachable from a ref", ErrCommitNotFound, o.URL, o.Commit)
	default:
		return nil, err
	}

	// History: the branch first, then everything.
	var specs [][]config.RefSpec
	if o.Branch != "" && !branchMissing {
		specs = append(specs, []config.RefSpec{branchRefSpec(o.Branch)})
	}
	specs = append(specs, []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"})
	repo = nil
	for _, spec := range specs {
		if repo == nil {
			if repo, err = f.download(ctx, 0, spec...); err != nil {
				return nil, err
			}
		} else if err := f.fetchInto(ctx, repo, 0, spec...); err != nil {
			return nil, err
		}
		if _, err := repo.CommitObject(plumbing.NewHash(o.Commit)); err == nil {
			return f.snapshot(repo, plumbing.NewHash(o.Commit), false)
		}
	}
	return nil, fmt.Errorf("%w: %s has no commit %s on any branch or tag", ErrCommitNotFound, o.URL, o.Commit)
}

// download fetches refspecs into a new in-memory repository.
func (f *fetcher) download(ctx context.Context, depth int, specs ...config.RefSpec) (*git.Repository, error) {
	st := &limitedStorage{
		Storage: filesystem.NewStorageWithOptions(memfs.New(), cache.NewObjectLRUDefault(), filesystem.Options{}),
		limit:   f.o.MaxFetchBytes,
	}
	repo, err := git.Init(st, nil)
	if err != nil {
		return nil, err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{f.o.URL}}); err != nil {
		return nil, err
	}
	return repo, f.fetchInto(ctx, repo, depth, specs...)
}

func (f *fetcher) fetchInto(ctx context.Context, repo *git.Repository, depth int, specs ...config.RefSpec) error {
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   specs,
		Depth:      depth,
		Auth:       f.o.Credentials.auth(),
		CABundle:   f.o.CABundle,
		Tags:       git.NoTags,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	var noMatch git.NoMatchingRefSpecError
	if errors.As(err, &noMatch) || errors.Is(err, git.ErrExactSHA1NotSupported) {
		return err
	}
	return classify(err, f.o.URL, f.o.Credentials.auth() != nil)
}

func (f *fetcher) snapshot(repo *git.Repository, hash plumbing.Hash, shallow bool) (*Snapshot, error) {
	commit, err := repo.CommitObject(hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: %s has no commit %s", ErrCommitNotFound, f.o.URL, hash)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading commit %s: %w", f.o.URL, hash, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the tree of %s: %w", f.o.URL, hash, err)
	}
	return &Snapshot{commit: commit, tree: tree, shallow: shallow, maxCheckoutBytes: f.o.MaxCheckoutBytes}, nil
}

func branchRefSpec(branch string) config.RefSpec {
	return config.RefSpec(fmt.Sprintf("+%s:%s", plumbing.NewBranchReferenceName(branch), remoteBranch(branch)))
}

func remoteBranch(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName("origin", branch)
}

// limitedStorage bounds the size of the packs written into it.
type limitedStorage struct {
	*filesystem.Storage
	limit int64
}

// PackfileWriter implements storer.PackfileWriter, which go-git uses for every fetched pack.
func (s *limitedStorage) PackfileWriter() (io.WriteCloser, error) {
	w, err := s.Storage.PackfileWriter()
	if err != nil {
		return nil, err
	}
	return &limitedWriter{WriteCloser: w, left: s.limit, limit: s.limit}, nil
}

type limitedWriter struct {
	io.WriteCloser
	left, limit int64
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > w.left {
		return 0, fmt.Errorf("%w: the pack exceeds %d bytes", ErrTooLarge, w.limit)
	}
	w.left -= int64(len(p))
	return w.WriteCloser.Write(p)
}
