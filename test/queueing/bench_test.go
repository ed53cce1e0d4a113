package queueing

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gpuctl/gpuctl/internal/keys"
)

// BenchmarkQueueAdmission: one commit of 100 training jobs of 1 GPU to team lat (16 GPUs, no
// borrowing), synced with `gpuctl sync --local`: how long until the 16 that fit hold their
// quota, counted from the end of the sync (bar: 2 s) and from its start; against the floor of
// the same 100 Jobs created straight through the API in team lat2 and admitted by the same
// Kueue. Then `gpuctl get jobs -A -o wide` shows the 84 that wait with their places.
func BenchmarkQueueAdmission(b *testing.B) {
	const jobs, fit = 100, 16
	_, dyn := clients(b)
	r := newRepo(b)
	r.sync() // the queues
	for i := range jobs {
		r.training("lat", fmt.Sprintf("l%03d", i), "medium", 1, 1)
	}
	start := time.Now()
	r.sync()
	synced := time.Now()
	admitted := waitAdmitted(b, dyn, "lat", fit)
	b.ReportMetric(admitted.Sub(synced).Seconds(), "s-after-sync")
	b.ReportMetric(admitted.Sub(start).Seconds(), "s-after-commit")
	b.ReportMetric(synced.Sub(start).Seconds(), "s-sync")

	// Kueue makes the Workloads of the ones that wait a little later.
	poll(b, "a Workload for each job", func(ctx context.Context) (bool, error) {
		ws, err := workloads(ctx, dyn, "lat")
		return len(ws) == jobs, err
	})
	queued := time.Now()
	out, _, code := gpuctl(b, "get", "jobs", "-A", "-o", "wide")
	places := regexp.MustCompile(`\blat #\d+\b`).FindAllString(out, -1)
	if code != 0 || len(places) < jobs-3*fit {
		b.Fatalf("get jobs -A -o wide: exit %d, no queue places:\n%s", code, out)
	}

	client, _ := clients(b)
	floorStart := time.Now()
	for i := range jobs {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d%03d", i), Labels: map[string]string{keys.KueueQueueName: keys.KueueLocalQueue}},
			Spec: batchv1.JobSpec{
				Suspend:      new(true),
				BackoffLimit: new(int32(0)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{keys.Pool: "training-pool"},
					Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/train:v1", Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{keys.ResourceGPU: resource.MustParse("1")},
					}}},
				}},
			},
		}
		if _, err := client.BatchV1().Jobs("lat2").Create(b.Context(), job, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	created := time.Now()
	floorAdmitted := waitAdmitted(b, dyn, "lat2", fit)
	b.ReportMetric(floorAdmitted.Sub(created).Seconds(), "floor-s-after-create")
	b.ReportMetric(floorAdmitted.Sub(floorStart).Seconds(), "floor-s-after-first-create")
	fmt.Printf("queue admission of %d jobs (%d fit): %.2f s after the sync (bar 2 s), %.2f s after the commit (sync %.2f s); "+
		"floor (the same Jobs created through the API, same Kueue): %.2f s after the last create, %.2f s after the first; ratio %.2f; "+
		"every job had its Workload %.2f s after the sync, and get jobs -A showed %d places in the queue\n",
		jobs, fit, admitted.Sub(synced).Seconds(), admitted.Sub(start).Seconds(), synced.Sub(start).Seconds(),
		floorAdmitted.Sub(created).Seconds(), floorAdmitted.Sub(floorStart).Seconds(),
		admitted.Sub(start).Seconds()/floorAdmitted.Sub(floorStart).Seconds(), queued.Sub(synced).Seconds(), len(places))
	if err := client.BatchV1().Jobs("lat2").DeleteCollection(context.Background(), metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationBackground)}, metav1.ListOptions{}); err != nil {
		b.Error(err)
	}
	r.emptyTeam("lat")
}

// waitAdmitted returns when n Workloads of the namespace have held quota (polled every 20 ms).
func waitAdmitted(b *testing.B, dyn dynamic.Interface, ns string, n int) time.Time {
	b.Helper()
	seen := map[string]bool{}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ws, err := workloads(b.Context(), dyn, ns)
		if err != nil {
			b.Fatal(err)
		}
		for job, wl := range ws {
			if wl.reserved || wl.finished {
				seen[job] = true
			}
		}
		if len(seen) >= n {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("%d of %d jobs of %s held quota after a minute", len(seen), n, ns)
	return time.Time{}
}
