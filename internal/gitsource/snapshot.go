package gitsource

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Snapshot is the tree of one fetched commit, held in memory. Read paths with Stat and ReadFile,
// or write the whole tree out with Checkout (any billy filesystem), CheckoutDir or
// CheckoutMemory. Paths are slash-separated and relative to the repository root; "./" and "."
// are accepted, ".." that leaves the root is not. A Snapshot is safe for concurrent use: the
// controllers share one per commit between reconciles.
type Snapshot struct {
	commit *object.Commit
	// mu guards tree's lookups: go-git's Tree fills a map of its entries and of its subtrees on
	// the first FindEntry or File and is not safe for concurrent use. Walks (Files) only read.
	mu               sync.Mutex
	tree             *object.Tree
	shallow          bool
	maxCheckoutBytes int64
}

// Commit is the full hash of the commit.
func (s *Snapshot) Commit() string { return s.commit.Hash.String() }

// CommitTime is when the commit was made (committer time).
func (s *Snapshot) CommitTime() time.Time { return s.commit.Committer.When }

// Shallow reports whether only the commit itself was downloaded, without its history.
func (s *Snapshot) Shallow() bool { return s.shallow }

// Kind of a path in the tree.
type Kind int

// Kinds of paths.
const (
	KindFile Kind = iota + 1
	KindDir
	KindSymlink
)

// Stat returns the kind of p. It returns ErrPathNotFound when p does not exist and
// ErrInvalidPath when it is absolute or leaves the repository. The root, ".", is a directory.
func (s *Snapshot) Stat(p string) (Kind, error) {
	clean, err := cleanPath(p)
	if err != nil {
		return 0, err
	}
	if clean == "" {
		return KindDir, nil
	}
	entry, err := s.findEntry(clean)
	// A path through a file makes go-git look for a tree object that does not exist.
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, plumbing.ErrObjectNotFound) {
		return 0, fmt.Errorf("%w: %q at commit %s", ErrPathNotFound, p, s.Commit())
	}
	if err != nil {
		return 0, fmt.Errorf("looking up %q at commit %s: %w", p, s.Commit(), err)
	}
	switch entry.Mode {
	case filemode.Dir:
		return KindDir, nil
	case filemode.Symlink:
		return KindSymlink, nil
	case filemode.Submodule:
		return 0, fmt.Errorf("%w: %q is a submodule, which is not fetched", ErrPathNotFound, p)
	}
	return KindFile, nil
}

func (s *Snapshot) findEntry(p string) (*object.TreeEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tree.FindEntry(p)
}

func (s *Snapshot) file(p string) (*object.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tree.File(p)
}

// RequireDir returns nil when p is a directory, ErrPathNotFound otherwise (for a Helm chart,
// a manifest directory or a kustomization).
func (s *Snapshot) RequireDir(p string) error {
	kind, err := s.Stat(p)
	if err != nil {
		return err
	}
	if kind != KindDir {
		return fmt.Errorf("%w: %q at commit %s is not a directory", ErrPathNotFound, p, s.Commit())
	}
	return nil
}

// ReadFile returns the content of the file at p.
func (s *Snapshot) ReadFile(p string) ([]byte, error) {
	clean, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	f, err := s.file(clean)
	if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: %q at commit %s", ErrPathNotFound, p, s.Commit())
	}
	if err != nil {
		return nil, fmt.Errorf("reading %q at commit %s: %w", p, s.Commit(), err)
	}
	if f.Size > s.maxCheckoutBytes {
		return nil, fmt.Errorf("%w: %q has %d bytes, the bound is %d", ErrTooLarge, p, f.Size, s.maxCheckoutBytes)
	}
	r, err := f.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Checkout writes every file of the tree into dst (which should be empty), after checking their
// total size against the bound and that no symbolic link leaves the tree. Executable files get
// mode 0755, others 0644; submodules are left out.
func (s *Snapshot) Checkout(dst billy.Filesystem) error {
	var total int64
	err := s.tree.Files().ForEach(func(f *object.File) error {
		total += f.Size
		if total > s.maxCheckoutBytes {
			return fmt.Errorf("%w: the files of commit %s exceed %d bytes", ErrTooLarge, s.Commit(), s.maxCheckoutBytes)
		}
		if f.Mode == filemode.Symlink {
			target, err := f.Contents()
			if err != nil {
				return err
			}
			if !symlinkStaysInside(f.Name, target) {
				return fmt.Errorf("%w: %s -> %s at commit %s", ErrUnsafeSymlink, f.Name, target, s.Commit())
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.tree.Files().ForEach(func(f *object.File) error {
		if err := dst.MkdirAll(path.Dir(f.Name), 0o755); err != nil {
			return err
		}
		if f.Mode == filemode.Symlink {
			target, err := f.Contents()
			if err != nil {
				return err
			}
			return dst.Symlink(target, f.Name)
		}
		perm := os.FileMode(0o644)
		if f.Mode == filemode.Executable {
			perm = 0o755
		}
		return writeFile(dst, f, perm)
	})
}

// CheckoutDir writes the tree into dir (created when missing, and expected to be empty). File
// access is confined to dir.
func (s *Snapshot) CheckoutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return s.Checkout(osfs.New(dir, osfs.WithBoundOS()))
}

// CheckoutMemory writes the tree into a new in-memory filesystem. Wrap it with go-billy's
// helper/iofs for an io/fs.FS.
func (s *Snapshot) CheckoutMemory() (billy.Filesystem, error) {
	fsys := memfs.New()
	if err := s.Checkout(fsys); err != nil {
		return nil, err
	}
	return fsys, nil
}

func writeFile(dst billy.Filesystem, f *object.File, perm os.FileMode) (err error) {
	r, err := f.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := dst.OpenFile(f.Name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	_, err = io.Copy(w, r)
	return err
}

// cleanPath turns a user path into a tree path: "" for the root.
func cleanPath(p string) (string, error) {
	if path.IsAbs(p) || strings.HasPrefix(p, "\\") {
		return "", fmt.Errorf("%w: %q is absolute; paths are relative to the repository root", ErrInvalidPath, p)
	}
	clean := path.Clean("/" + p)[1:]
	if !fs.ValidPath(cleanOrDot(clean)) || leaves(p) {
		return "", fmt.Errorf("%w: %q leaves the repository", ErrInvalidPath, p)
	}
	return clean, nil
}

func cleanOrDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// leaves reports whether the relative path p climbs above its starting point at any step.
func leaves(p string) bool {
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

func symlinkStaysInside(name, target string) bool {
	if path.IsAbs(target) || strings.HasPrefix(target, "\\") {
		return false
	}
	return !leaves(path.Join(path.Dir(name), target)) && !leaves(path.Dir(name)+"/"+target)
}
