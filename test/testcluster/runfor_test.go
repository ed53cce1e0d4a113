package testcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/testcluster"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Job pod marked with RunFor stays Running for that long, one without completes in about a
// second: two Jobs started together finish at least the difference apart.
func TestRunForHoldsAJobPodRunning(t *testing.T) {
	t.Parallel()
	client, ns := newClient(t), newNamespace(t)
	start := func(name string, runFor time.Duration) {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{
				BackoffLimit: new(int32(0)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{gpuContainer(1)},
				}},
			},
		}
		if runFor > 0 {
			testcluster.RunFor(&job.Spec.Template, runFor)
		}
		if _, err := client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start("quick", 0)
	start("slow", 6*time.Second)
	done := map[string]time.Time{}
	poll(t, "both jobs to complete", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"quick", "slow"} {
			if _, ok := done[name]; ok {
				continue
			}
			j, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if j.Status.Succeeded == 1 {
				done[name] = time.Now()
			}
		}
		return len(done) == 2, nil
	})
	if gap := done["slow"].Sub(done["quick"]); gap < 3*time.Second {
		t.Errorf("the job held for 6s finished %s after the quick one, want at least 3s", gap)
	}
}
