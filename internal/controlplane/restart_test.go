//go:build e2e

package controlplane

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRestartAPIServer_SameEtcdPortAndCertificates restarts kube-apiserver of a full control
// plane: it serves again on the same address with the same certificates (a kubeconfig written
// before still works), the objects written before are there (same etcd), the new process is this
// one's child (started, like the first, with a parent-death signal), and the controller-manager, scheduler and kwok carry on without being restarted
// (a Deployment made afterwards becomes available and a Job completes).
func TestRestartAPIServer_SameEtcdPortAndCertificates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := Start(ctx, Options{Mode: Full, LogDir: testLogDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if err := cp.Client.Create(ctx, before); err != nil {
		t.Fatal(err)
	}
	path, err := cp.UserKubeconfig(filepath.Join(t.TempDir(), "user.kubeconfig"), "written-before", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	host, oldPIDs := cp.Config.Host, cp.apiserverPIDs
	runs := map[string]int{}
	for _, p := range cp.procs {
		runs[p.name] = p.runs()
	}

	down, err := cp.RestartAPIServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the API was unavailable for %s", down.Round(time.Millisecond))

	if cp.Config.Host != host {
		t.Errorf("the apiserver moved from %s to %s", host, cp.Config.Host)
	}
	if len(cp.apiserverPIDs) != 1 || slices.Equal(cp.apiserverPIDs, oldPIDs) {
		t.Errorf("apiserver PIDs %v after the restart, %v before: want one new process", cp.apiserverPIDs, oldPIDs)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	old, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := old.Get(ctx, client.ObjectKeyFromObject(before), &got); err != nil {
		t.Fatalf("reading with a kubeconfig written before the restart: %v", err)
	}
	if got.UID != before.UID || got.Data["k"] != "v" {
		t.Errorf("the ConfigMap written before the restart came back as %+v", got)
	}

	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "after", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "after"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "after"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
			},
		},
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "after", Namespace: "default"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "run", Image: "busybox:1.36"}},
		}}},
	}
	for _, o := range []client.Object{dep, job} {
		if err := cp.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for {
		errD := cp.Client.Get(ctx, client.ObjectKeyFromObject(dep), dep)
		errJ := cp.Client.Get(ctx, client.ObjectKeyFromObject(job), job)
		if errD == nil && errJ == nil && dep.Status.AvailableReplicas == 2 && job.Status.Succeeded == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after the restart: Deployment %d/2 available, Job %d succeeded (%v, %v)",
				dep.Status.AvailableReplicas, job.Status.Succeeded, errD, errJ)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range cp.procs {
		if exited, err := p.exited(); exited {
			t.Errorf("%s exited after the apiserver restart: %v", p.name, err)
		}
		if p.runs() != runs[p.name] {
			t.Errorf("%s exited with the apiserver away and was started again (%d runs, %d before the restart)",
				p.name, p.runs(), runs[p.name])
		}
	}
}
