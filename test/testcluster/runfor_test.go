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

// A Job pod marked with RunFor, or whose container has DemoRunForEnv (the demo's), stays
// Running for that long, one without completes in about a second: Jobs started together
// finish at least the difference apart.
func TestRunForHoldsAJobPodRunning(t *testing.T) {
	t.Parallel()
	client, ns := newClient(t), newNamespace(t)
	start := func(name string, runFor time.Duration, env []corev1.EnvVar) {
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
		job.Spec.Template.Spec.Containers[0].Env = env
		if _, err := client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start("quick", 0, []corev1.EnvVar{{Name: "OTHER", Value: "6s"}})
	start("slow", 6*time.Second, nil)
	start("slow-env", 0, []corev1.EnvVar{{Name: "OTHER", Value: "x"}, {Name: testcluster.DemoRunForEnv, Value: "6s"}})
	done := map[string]time.Time{}
	poll(t, "both jobs to complete", func(ctx context.Context) (bool, error) {
		for _, name := range []string{"quick", "slow", "slow-env"} {
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
		return len(done) == 3, nil
	})
	for _, name := range []string{"slow", "slow-env"} {
		if gap := done[name].Sub(done["quick"]); gap < 3*time.Second {
			t.Errorf("the job %s held for 6s finished %s after the quick one, want at least 3s", name, gap)
		}
	}
}
