package joblog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/slipway-dev/slipway/internal/joblog"
	"github.com/slipway-dev/slipway/internal/joblog/ctrlpods"
	"github.com/slipway-dev/slipway/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Light, func(e *testenv.Env) { env = e }) }

func TestLastPod_IsTheNewestPodOfTheJob(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "build", Namespace: "default"}}
	if _, err := joblog.LastPod(ctx, ctrlpods.Pods(env.Client), job); !errors.Is(err, joblog.ErrNoPods) {
		t.Fatalf("no pods: err = %v, want ErrNoPods", err)
	}
	for _, name := range []string{"build-first", "build-second"} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{batchv1.JobNameLabel: "build"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
		}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // creation timestamps have a one-second resolution
	}
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "default", Labels: map[string]string{batchv1.JobNameLabel: "other"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}},
	}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	last, err := joblog.LastPod(ctx, ctrlpods.Pods(env.Client), job)
	if err != nil {
		t.Fatal(err)
	}
	if last.Name != "build-second" {
		t.Errorf("LastPod = %s, want build-second", last.Name)
	}
}
