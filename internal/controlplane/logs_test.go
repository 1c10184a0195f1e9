package controlplane

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testLogDir is a log directory for one test's control plane: removed when the test passes, kept
// when it fails, with its path and the last lines of every component's log in the test's output.
// Call it before Start, so its cleanup runs after the control plane's Stop.
func testLogDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("SLIPWAY_TEST_LOGS")
	if base == "" {
		base = filepath.Join(os.TempDir(), "slipway-test-logs")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control-plane logs kept in %s\n%s", dir, LogTails(dir, 40))
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

func TestLogTails_LastLinesOfEveryComponentLog(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"kwok.log":           "k1\nk2\nk3\n",
		"kube-scheduler.log": "s1\n",
		"kubeconfig":         "not a log\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := LogTails(dir, 2)
	for _, want := range []string{"kwok.log (last 2 lines) -----\nk2\nk3\n", "kube-scheduler.log (last 2 lines) -----\ns1\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("LogTails lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "k1") || strings.Contains(got, "not a log") {
		t.Errorf("LogTails shows more than the last lines of the logs:\n%s", got)
	}
	if strings.Index(got, "kube-scheduler.log") > strings.Index(got, "kwok.log") {
		t.Errorf("LogTails is not in file-name order:\n%s", got)
	}
}
