package gittest

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// AddTree adds every file under the directory root of this machine to files, at dir of the
// repository (a chart kept under testdata, say), and returns files.
func AddTree(files Files, root, dir string) (Files, error) {
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		files[path.Join(dir, filepath.ToSlash(rel))] = data
		return err
	})
	return files, err
}
