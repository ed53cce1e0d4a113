package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/internal/syncbuf"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/test/dcgmtest"
	"github.com/gpuctl/gpuctl/test/promtest"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"github.com/gpuctl/gpuctl/usage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestIdlePolicyOnPrometheus (issue #34): against the real cluster and a real Prometheus that
// scrapes the dcgm-exporter stand-in and holds 3 h of backfilled history at 0 %: a training
// job whose GPUs are idle past its pause rule's 2h is paused by the daemon, once (one
// IdlePaused Event over several rounds), its file says so and its Job is suspended by the sync
// that follows; `gpuctl resume` (edit.Repo.Resume) brings it back, and the daemon does not
// pause it again: its new pod has no series (NoGPUMetrics), and unknown is not idle.
func TestIdlePolicyOnPrometheus(t *testing.T) {
	ports, err := testcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", ports[0])
	client, err := usage.New(usage.Options{URL: "http://" + listen})
	if err != nil {
		t.Fatal(err)
	}
	const ns, job = "default", "idle-sft"
	var logs syncbuf.Buffer
	h := newHarness(t, "idle", map[string]string{
		"gpuctl-policy.yaml": "version: v0.1\nidle:\n  - {name: idle-training, for: 2h, action: pause, kinds: [training]}\n",
		"sft/train.yaml": "kind: training\nversion: v0.1\njob: {name: " + job + ", namespace: " + ns + "}\n" +
			"environment: {image: trainer:v1, command: [python, train.py]}\nresources: {gpu: 2, cpu: 1, memory: 1Gi}\n",
		// kwok completes a Job's pod at once unless told to keep it running (testcluster.RunFor).
		"sft/kustomization.yaml": "resources: [train.yaml]\npatches:\n  - target: {group: batch, version: v1, kind: Job, name: " + job + "}\n" +
			"    patch: |-\n      apiVersion: batch/v1\n      kind: Job\n      metadata: {name: " + job + "}\n      spec:\n        template:\n" +
			"          metadata:\n            annotations: {" + testcluster.RunForAnnotation + ": 30m}\n",
	}, func(o *daemon.Options) {
		o.Usage, o.IdleEvery = client, time.Second
		o.Source = o.Source.(countingSource).Source // a directory, which takes the daemon's writes
		o.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	defer func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", logs.String())
		}
	}()
	h.start() // its idle rounds fail until Prometheus answers
	h.waitStatus("the first sync", func(s daemon.Status) bool { return s.Result == daemon.ResultSucceeded })
	pod := waitPod(t, h, ns, job, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" })

	gpus := dcgmtest.ForPods([]corev1.Pod{*pod})
	if len(gpus) != 2 {
		t.Fatalf("GPUs of the pod: %+v", gpus)
	}
	// The history ends now: one that ended at the last whole minute could leave, with
	// Prometheus' start, a step without a sample before the live series, which cuts the run.
	end := time.Now().Truncate(time.Second)
	history := dcgmtest.OpenMetrics(dcgmtest.Plain, gpus, end.Add(-3*time.Hour), end, time.Minute, nil) // 0 % throughout
	exp, err := dcgmtest.Start(dcgmtest.Plain, gpus)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(exp.Close)
	promtest.StartT(t, promtest.Options{Targets: []string{exp.Addr}, Backfill: history, Listen: listen})

	suspended := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			j, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, job, metav1.GetOptions{})
			if err == nil && (j.Spec.Suspend != nil && *j.Spec.Suspend) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Job %s/%s suspended is not %v after 60s (%v)", ns, job, want, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	suspended(true)
	file := filepath.Join(h.dir, "sft", "train.yaml")
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "suspend: true") {
		t.Fatalf("the job's file is not paused: %v\n%s", err, b)
	}
	time.Sleep(3 * time.Second) // rounds that still see its pod, or its paused file, write nothing more
	paused := idleEvents(t, h, ns, job, daemon.ReasonIdlePaused)
	if len(paused) != 1 || !strings.Contains(paused[0], "idle below 5% for 2h on 2 GPUs: gpuctl paused it by policy idle-training") {
		t.Fatalf("IdlePaused events %q, want one", paused)
	}

	repo, err := edit.Open(filesys.MakeFsOnDisk(), h.dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := repo.Resume(edit.JobRef{Namespace: ns, Name: job})
	if err != nil {
		t.Fatal(err)
	}
	if err := edit.Apply(filesys.MakeFsOnDisk(), h.dir, res.Changes); err != nil {
		t.Fatal(err)
	}
	suspended(false)
	waitPod(t, h, ns, job, func(p *corev1.Pod) bool { return p.Name != pod.Name && p.Status.Phase == corev1.PodRunning })
	time.Sleep(3 * time.Second)
	if b, err := os.ReadFile(file); err != nil || strings.Contains(string(b), "suspend: true") {
		t.Fatalf("the resumed job was paused again: %v\n%s", err, b)
	}
	if got := idleEvents(t, h, ns, job, daemon.ReasonIdlePaused); len(got) != 1 {
		t.Errorf("IdlePaused events after the resume %q", got)
	}
	if got := idleEvents(t, h, ns, job, daemon.ReasonNoGPUMetrics); len(got) != 1 {
		t.Errorf("NoGPUMetrics events of the new pod %q, want one", got)
	}
}

// waitPod waits for a pod of the job (label app) that ok accepts.
func waitPod(t *testing.T, h *harness, ns, job string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		list, err := h.kube.CoreV1().Pods(ns).List(h.ctx, metav1.ListOptions{LabelSelector: "app=" + job})
		if err == nil {
			for i := range list.Items {
				if p := &list.Items[i]; p.DeletionTimestamp == nil && ok(p) {
					return p
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pod of %s/%s as wanted after 60s (%v)", ns, job, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// idleEvents are the messages of the events of a reason on the job's Job.
func idleEvents(t *testing.T, h *harness, ns, job, reason string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	list, err := h.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Job", "involvedObject.name": job, "reason": reason}.String()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Message)
	}
	return out
}
