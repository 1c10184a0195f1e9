package devenv

import (
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/registry"
)

// The later version is published once its delay has passed, not before, and the status view's
// row says which: Scheduled with the time, then Published. Stop before the delay publishes nothing.
func TestLaterVersion_PublishedAfterItsDelay(t *testing.T) {
	srv := httptest.NewServer(newRegistryHandler(filepath.Join(t.TempDir(), "registry.log")))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	dir, err := findChartDir()
	if err != nil {
		t.Fatal(err)
	}
	client, err := registry.NewClient(registry.Options{Insecure: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tags := func() []string {
		list, err := client.ListTags(t.Context(), addr+"/charts/"+SampleOperator, "")
		if err != nil {
			return nil // the repository does not exist before the first push
		}
		return list.Tags
	}

	stopped := &Env{opts: Options{RegistryAddr: addr, LaterVersionDelay: time.Hour}}
	stopped.scheduleLaterVersion(dir)
	if row := stopped.later.row(); !strings.Contains(row, "\tScheduled\tto be published at ") {
		t.Errorf("row before the delay: %q", row)
	}
	stopped.later.stop()
	if got := tags(); len(got) != 0 {
		t.Fatalf("a version was published by a stopped schedule: %v", got)
	}

	e := &Env{opts: Options{RegistryAddr: addr, LaterVersionDelay: 300 * time.Millisecond}}
	e.scheduleLaterVersion(dir)
	defer e.later.stop()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(e.later.row(), "\tPublished\t") {
		if time.Now().After(deadline) {
			t.Fatalf("not published: %q", e.later.row())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := tags(); !slices.Equal(got, []string{SampleLaterVersion}) {
		t.Fatalf("tags %v, want [%s]", got, SampleLaterVersion)
	}
	if row := e.later.row(); !strings.HasPrefix(row, "registry/Chart\t\t"+SampleOperator+":"+SampleLaterVersion+"\tPublished\tat ") ||
		!strings.Contains(row, "every "+DevRefreshInterval.String()) {
		t.Errorf("row %q", row)
	}

	never := &Env{opts: Options{RegistryAddr: addr, LaterVersionDelay: -1}}
	never.scheduleLaterVersion(dir)
	if never.later != nil {
		t.Error("a negative delay scheduled a publication")
	}
}
