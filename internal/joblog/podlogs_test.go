package joblog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/joblog/joblogtest"
)

// werfLog is a long failing deploy log: n lines of progress, then the error on the last line.
func werfLog(n int, last string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "│ ┌ Waiting for resources to become ready (step %05d) ........................................ │\n", i)
	}
	b.WriteString(last + "\n")
	return b.String()
}

// TestPodLogs_TailKeepsTheLastLine reads pod logs through the real API server's pods/log, which
// proxies to the node's kubelet API (a kwok node serving files the test writes, with the kubelet's
// own log reader): whatever the log's size, Tail returns its end, the last line included, within
// maxBytes, cut at a line start and saying that the start was cut.
func TestPodLogs_TailKeepsTheLastLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// NewPodLogs: the CLI's way (the controllers pass their clientset's core/v1 REST client).
	logs, err := joblog.NewPodLogs(env.Config)
	if err != nil {
		t.Fatal(err)
	}

	const maxBytes = 64 << 10
	longLine := strings.Repeat("0123456789abcdef", 10<<10) // 160 KiB, one line
	tests := []struct {
		name     string
		log      string
		maxBytes int64
		// wantWhole: the log is returned as it is; else its end, with the cut note.
		wantWhole bool
	}{
		{name: "short", log: werfLog(10, "Error: UPGRADE FAILED: timed out"), maxBytes: maxBytes, wantWhole: true},
		{name: "exactly-max", log: strings.Repeat("x", maxBytes-1) + "\n", maxBytes: maxBytes, wantWhole: true},
		// 3,000 lines of 100 bytes: the last 2,000 lines alone are 200 KiB, of which the API
		// server's limitBytes keeps the first 64 KiB, without the error.
		{name: "long", log: werfLog(3000, "Error: UPGRADE FAILED: release my-app failed: context deadline exceeded"), maxBytes: maxBytes},
		// More lines than maxBytes: tailLines alone must not cut the end short.
		{name: "many-short-lines", log: strings.Repeat("x\n", 5000) + "error: exit status 1\n", maxBytes: 1000},
		{name: "last-line-longer-than-max", log: werfLog(100, "Error: "+longLine), maxBytes: maxBytes},
		{name: "unterminated-last-line", log: werfLog(3000, "Error: no newline at the end"), maxBytes: maxBytes},
	}
	// The unterminated case drops the final newline.
	tests[len(tests)-1].log = strings.TrimSuffix(tests[len(tests)-1].log, "\n")

	var namespaces []string
	for _, tt := range tests {
		namespaces = append(namespaces, "logs-"+tt.name+"-"+rand.String(4))
	}
	for _, ns := range namespaces {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	node := joblogtest.StartLogNode(t, env, namespaces...)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := namespaces[i]
			node.WriteLog(t, ns, tt.log)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "werf", Namespace: ns},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "werf", Image: "werf:2"}}},
			}
			node.Bind(&pod.Spec)
			if err := env.Client.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			got, err := logs.Tail(ctx, ns, pod.Name, "werf", tt.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(got)) > tt.maxBytes {
				t.Errorf("Tail returned %d bytes, more than maxBytes %d", len(got), tt.maxBytes)
			}
			if tt.wantWhole {
				if got != tt.log {
					t.Errorf("Tail = %d bytes %q..., want the whole log of %d bytes", len(got), head(got), len(tt.log))
				}
				return
			}
			lastLine := tt.log[strings.LastIndex(strings.TrimSuffix(tt.log, "\n"), "\n")+1:]
			budget := int(tt.maxBytes) - len(joblog.CutNote)
			if end := lastLine[max(0, len(lastLine)-budget):]; !strings.HasSuffix(got, end) {
				t.Fatalf("Tail ends with %q, want the end of the log's last line %q", tail(got), tail(end))
			}
			body, cut := strings.CutPrefix(got, joblog.CutNote)
			if !cut {
				t.Fatalf("Tail = %q..., want it to start with the cut note %q", head(got), joblog.CutNote)
			}
			if !strings.HasSuffix(tt.log, body) {
				t.Fatalf("Tail's text after the note is not the end of the log: %q...%q", head(body), tail(body))
			}
			switch {
			case len(lastLine) > budget:
				// The last line alone does not fit: its end, all of the budget.
				if len(body) != budget || strings.Contains(strings.TrimSuffix(body, "\n"), "\n") {
					t.Errorf("Tail kept %d bytes %q..., want the last %d bytes of the last line", len(body), head(body), budget)
				}
			default:
				if !strings.HasSuffix(body, lastLine) {
					t.Errorf("Tail ends with %q, want the whole last line %q", tail(body), lastLine)
				}
				// Cut at a line start, losing less than one line of the budget.
				if start := len(tt.log) - len(body); tt.log[start-1] != '\n' {
					t.Errorf("Tail starts mid-line: %q", head(body))
				}
				longest := 0
				for _, l := range strings.Split(tt.log, "\n") {
					longest = max(longest, len(l)+1)
				}
				if len(body) <= budget-longest {
					t.Errorf("Tail kept %d bytes, want more than %d (the budget %d less one line)", len(body), budget-longest, budget)
				}
			}
		})
	}
}

func head(s string) string { return s[:min(len(s), 80)] }
func tail(s string) string { return s[max(0, len(s)-80):] }
