package operator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/slipway-dev/slipway/internal/operator/notes"
)

// countingRecorder counts the Events that reach the API server's recorder.
type countingRecorder struct {
	events.EventRecorder
	n int
}

func (r *countingRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {
	r.n++
}

// TestNewLogger_EveryDroppedEventIsALogLine emits one note for each of 1,000 objects in a burst,
// with the production logger (main's flags at their defaults) and an event limit that lets 10
// through: every note is a log line, with its object, so the 990 dropped Events are all in the
// logs.
func TestNewLogger_EveryDroppedEventIsALogLine(t *testing.T) {
	const objects, burst = 1000, 10
	var out bytes.Buffer
	log := NewLogger(crzap.Options{DestWriter: &out})
	inner := &countingRecorder{}
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "dropped"})
	rec := &limitedRecorder{EventRecorder: inner, limiter: newEventLimiter(0.001, burst), dropped: dropped}
	for i := range objects {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%d", i), Namespace: "ns"}}
		ctx := ctrl.LoggerInto(context.Background(), log.WithValues("configMap", klog.KObj(obj)))
		var n notes.Notes
		n.Add(false, "NewTag", "Found tag 1.1.0")
		n.Emit(ctx, rec, obj, "Reconcile")
	}

	if inner.n != burst {
		t.Fatalf("%d Events recorded, want %d (the limiter's burst)", inner.n, burst)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var line struct {
			Msg       string `json:"msg"`
			Operation string `json:"operation"`
			ConfigMap struct {
				Name string `json:"name"`
			} `json:"configMap"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("not a JSON log line: %q: %v", sc.Text(), err)
		}
		if line.Msg == "Found tag 1.1.0" && line.Operation == "NewTag" {
			seen[line.ConfigMap.Name] = true
		}
	}
	if len(seen) != objects {
		t.Errorf("%d of %d objects' notes are log lines; %d Events were dropped", len(seen), objects, objects-inner.n)
	}
}
