package deploy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// sourceFile is a file read from the checkout. Name is slash-separated and relative to the
// directory walked.
type sourceFile struct {
	Name string
	Info fs.FileInfo
	Data []byte
}

// budget bounds the bytes read from the checkout by one deploy.
type budget struct {
	max, left int64
}

func newBudget(n int64) *budget { return &budget{max: n, left: n} }

func (b *budget) take(name string, n int64) error {
	if n > b.left {
		return fmt.Errorf("%s: the files read exceed %d bytes", name, b.max)
	}
	b.left -= n
	return nil
}

// readTree reads the regular files under dir (a clean slash path, "." for the root) through
// root, so nothing outside the checkout is read even through symbolic links. keep is asked about
// every directory (false skips it) and file (false leaves it out), with its path relative to
// dir. A missing dir is ErrPathNotFound.
func readTree(root *os.Root, dir string, b *budget, keep func(rel string, info fs.FileInfo) bool) ([]sourceFile, error) {
	fsys := root.FS()
	st, err := fs.Stat(fsys, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %q does not exist in the repository", ErrPathNotFound, dir)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", dir, err)
	case !st.IsDir():
		return nil, fmt.Errorf("%w: %q is not a directory", ErrPathNotFound, dir)
	}
	var files []sourceFile
	err = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel := p
		if dir != "." {
			rel = strings.TrimPrefix(p, dir+"/")
		}
		var info fs.FileInfo
		if d.Type()&fs.ModeSymlink != 0 {
			// Follows the link, inside the root only.
			if info, err = fs.Stat(fsys, p); err != nil {
				return fmt.Errorf("symbolic link %s: %w", p, err)
			}
			if info.IsDir() {
				if !keep(rel, info) {
					return nil
				}
				return fmt.Errorf("%s is a symbolic link to a directory, which is not supported", p)
			}
		} else if info, err = d.Info(); err != nil {
			return err
		}
		if info.IsDir() {
			if !keep(rel, info) {
				return fs.SkipDir
			}
			return nil
		}
		if !info.Mode().IsRegular() || !keep(rel, info) {
			return nil
		}
		if err := b.take(p, info.Size()); err != nil {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files = append(files, sourceFile{Name: rel, Info: info, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// wrapAs returns err wrapped with sentinel, unless it already carries ErrPathNotFound.
func wrapAs(sentinel, err error) error {
	if errors.Is(err, ErrPathNotFound) || errors.Is(err, sentinel) {
		return err
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// hidden reports whether the last element of p starts with a dot (.git, .github, .helmignore).
func hidden(p string) bool { return strings.HasPrefix(path.Base(p), ".") }
