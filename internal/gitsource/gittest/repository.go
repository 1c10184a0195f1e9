package gittest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Repository is a repository with a work tree, served by a Server.
type Repository struct {
	// Dir is the repository's work tree on disk.
	Dir string
	// URL is where clients fetch it.
	URL string
}

// Files maps slash-separated paths, relative to the repository root, to their content. A nil
// content (Delete) removes the file.
type Files map[string][]byte

// Delete marks a path for removal in Commit.
var Delete []byte = nil

// Merge returns one file set with the files of all sets; later sets win.
func Merge(sets ...Files) Files {
	out := Files{}
	for _, s := range sets {
		maps.Copy(out, s)
	}
	return out
}

// commitEnv gives commits a fixed identity.
var commitEnv = []string{
	"GIT_AUTHOR_NAME=gittest", "GIT_AUTHOR_EMAIL=gittest@example.invalid",
	"GIT_COMMITTER_NAME=gittest", "GIT_COMMITTER_EMAIL=gittest@example.invalid",
}

// Commit writes files into the work tree of the current branch, commits everything and returns
// the new commit's hash. A commit with no files is allowed (an empty commit).
func (r *Repository) Commit(message string, files Files) (string, error) {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p, err := r.path(name)
		if err != nil {
			return "", err
		}
		content := files[name]
		if content == nil {
			if err := os.RemoveAll(p); err != nil {
				return "", err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return "", err
		}
	}
	if _, err := r.git("add", "--all"); err != nil {
		return "", err
	}
	if _, err := r.git("commit", "--quiet", "--allow-empty", "--no-verify", "-m", message); err != nil {
		return "", err
	}
	return r.Head()
}

// Symlink adds a symbolic link at name pointing to target (not committed until Commit).
func (r *Repository) Symlink(name, target string) error {
	p, err := r.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

// Head is the hash of the current branch's last commit.
func (r *Repository) Head() (string, error) { return r.git("rev-parse", "HEAD") }

// CreateBranch creates branch name at commit (a hash or a branch) and switches to it.
func (r *Repository) CreateBranch(name, from string) error {
	_, err := r.git("switch", "--quiet", "--create", name, from)
	return err
}

// SwitchBranch makes branch name current, for the next Commit.
func (r *Repository) SwitchBranch(name string) error {
	_, err := r.git("switch", "--quiet", name)
	return err
}

// DeleteBranch removes a branch (not the current one); its commits stay in the object store
// until git gc.
func (r *Repository) DeleteBranch(name string) error {
	_, err := r.git("branch", "--quiet", "-D", name)
	return err
}

// Git runs any git command in the repository and returns its trimmed output.
func (r *Repository) Git(args ...string) (string, error) { return r.git(args...) }

func (r *Repository) git(args ...string) (string, error) {
	return runGit(r.Dir, commitEnv, args...)
}

func (r *Repository) path(name string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(name))
	if name == "" || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) || clean == ".git" || strings.HasPrefix(clean, ".git"+string(filepath.Separator)) {
		return "", fmt.Errorf("invalid file path %q", name)
	}
	return filepath.Join(r.Dir, clean), nil
}
