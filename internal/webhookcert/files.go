package webhookcert

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// dataLink is the symlink that points at the current version of the files, as in a Secret volume.
const dataLink = "..data"

// writeFiles replaces the files in dir the way the kubelet updates a Secret volume: the new
// versions go into a fresh hidden directory, the "..data" symlink is switched to it with one
// rename, and every name is a symlink through "..data". All names switch at the same instant and
// no file is ever half-written; a reader that straddles the switch (certificate read before,
// key after) gets a mismatched pair, which controller-runtime's certwatcher rejects, and re-reads
// on the events that follow (the old version directory is removed).
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	version, err := os.MkdirTemp(dir, "..version-")
	if err != nil {
		return fmt.Errorf("creating a version directory in %s: %w", dir, err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(version, name), data, 0o600); err != nil {
			_ = os.RemoveAll(version)
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	if err := replaceWithSymlink(filepath.Join(dir, dataLink), filepath.Base(version)); err != nil {
		_ = os.RemoveAll(version)
		return err
	}
	for name := range files {
		link := filepath.Join(dir, name)
		target := filepath.Join(dataLink, name)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		if err := replaceWithSymlink(link, target); err != nil {
			return err
		}
	}
	if old != "" && old != filepath.Base(version) && strings.HasPrefix(old, "..version-") {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("removing the previous version %s: %w", old, err)
		}
	}
	return nil
}

// replaceWithSymlink atomically makes path a symlink to target, whatever path was before.
func replaceWithSymlink(path, target string) error {
	tmp := filepath.Join(filepath.Dir(path), "..tmp-"+filepath.Base(path))
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("switching %s: %w", path, err)
	}
	return nil
}

// filesEqual reports whether every file in dir already has the given content.
func filesEqual(dir string, files map[string][]byte) bool {
	for name, data := range files {
		cur, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(cur, data) {
			return false
		}
	}
	return true
}
