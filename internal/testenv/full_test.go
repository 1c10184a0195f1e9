//go:build e2e

package testenv_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/slipway-dev/slipway/internal/testenv"
)

// TestFull_WorkloadsProgress proves the full control plane: a Deployment becomes available, a Job
// completes, a Job made to fail is marked Failed, and deleting a namespace removes it and its
// objects (namespace controller and garbage collector at work).
func TestFull_WorkloadsProgress(t *testing.T) {
	full := testenv.New(t, testenv.Full)
	c := full.Client
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "workloads"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	dep := deployment(ns.Name, "web", 2)
	ok := job(ns.Name, "migrate")
	bad := testenv.WithPodFailure(job(ns.Name, "broken"))
	for _, o := range []client.Object{dep, ok, bad} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}

	testenv.Eventually(ctx, t, "Deployment web has 2 available replicas", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		return dep.Status.AvailableReplicas == 2, err
	})
	testenv.Eventually(ctx, t, "Job migrate is Complete", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ok), ok)
		return jobCondition(ok, batchv1.JobComplete), err
	})
	testenv.Eventually(ctx, t, "Job broken is Failed", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(bad), bad)
		return jobCondition(bad, batchv1.JobFailed), err
	})
	if jobCondition(bad, batchv1.JobComplete) {
		t.Error("the failing Job is also Complete")
	}

	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "namespace workloads is gone", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// TestFull_PodDurationKeepsJobRunning checks the kwok duration annotation: the Job is still
// running shortly after its pod started, and completes afterwards.
func TestFull_PodDurationKeepsJobRunning(t *testing.T) {
	full := testenv.New(t, testenv.Full)
	c := full.Client
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	j := testenv.WithPodDuration(job("default", "slow"), 8*time.Second)
	if err := c.Create(ctx, j); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(ctx, t, "Job slow has an active pod", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(j), j)
		return j.Status.Ready != nil && *j.Status.Ready == 1, err
	})
	if jobCondition(j, batchv1.JobComplete) {
		t.Fatal("Job completed although its pod should run for 8s")
	}
	testenv.Eventually(ctx, t, "Job slow is Complete", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(j), j)
		return jobCondition(j, batchv1.JobComplete), err
	})
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
			},
		},
	}
}

func job(ns, name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "run", Image: "busybox:1.36"}},
				},
			},
		},
	}
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
