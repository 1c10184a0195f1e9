package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LogTails returns the last lines of every component log (*.log) in dir, each under a header with
// its path: what a failed test prints, so the cause is in its output and not only on a disk that
// may be gone by the time someone looks (a CI machine).
func LogTails(dir string, lines int) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(files)
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "----- %s (last %d lines) -----\n%s\n", f, lines, tail(data, lines))
	}
	return b.String()
}

// tail is the last n lines of data.
func tail(data []byte, n int) []byte {
	data = bytes.TrimRight(data, "\n")
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == '\n' {
			if n--; n == 0 {
				return data[i+1:]
			}
		}
	}
	return data
}
