package detector_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// suspendedJob is a suspended Job manifest; queued adds the queue label as the renderer does
// with queueing: kueue.
func suspendedJob(ns, name string, queued bool) string {
	labels := ""
	if queued {
		labels = ", labels: {" + keys.KueueQueueName + ": " + keys.KueueLocalQueue + "}"
	}
	return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name + ", namespace: " + ns + labels + "}\n" +
		"spec:\n  suspend: true\n  template:\n    spec:\n      restartPolicy: Never\n" +
		"      containers: [{name: main, image: busybox, command: [\"true\"]}]\n"
}

// TestKueueAdmissionIsNotDrift runs the detector in correct mode (which re-applies with force)
// with a full re-evaluation every 200ms. Kueue's admission of a queue-managed Job — an Update
// by kueue-job-controller that resumes it and adds a node selector and a template annotation —
// is not drift: the Job is never reported nor suspended again, neither by the detector nor by
// the daemon's next sync; its preemption is left alone too. The control: a Job without the
// queue label resumed by hand is drift, and corrected (suspended again).
func TestKueueAdmissionIsNotDrift(t *testing.T) {
	run := uniq()
	ns := "drift-kueue-" + run
	h := newHarness(t, "kueue-"+run, detector.Options{Mode: drift.ModeCorrect, Resync: 200 * time.Millisecond},
		map[string]string{"train.yaml": suspendedJob(ns, "train", true), "plain.yaml": suspendedJob(ns, "plain", false)}, ns)
	update := func(name, manager string, change func(*batchv1.Job)) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			j, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(j)
			_, err = h.kube.BatchV1().Jobs(ns).Update(h.ctx, j, metav1.UpdateOptions{FieldManager: manager})
			return err
		})
		if err != nil {
			t.Fatalf("%s update of Job %s: %v", manager, name, err)
		}
	}
	job := func(name string) *batchv1.Job {
		t.Helper()
		j, err := h.kube.BatchV1().Jobs(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	isSuspended := func(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }
	// leftAlone waits for two full evaluations after now, then checks that train was never
	// reported and is suspended as Kueue left it.
	leftAlone := func(when string, wantSuspended bool) {
		t.Helper()
		after := time.Now()
		for range 2 {
			r, _ := h.waitReport(when+": a full evaluation", func(r drift.Report) bool { return r.Generated.After(after) })
			after = r.Generated
		}
		time.Sleep(100 * time.Millisecond) // what the last one queued is evaluated
		r, hist, _ := h.det.Current()
		for _, e := range hist {
			if e.Item.Object.Name == "train" {
				t.Fatalf("%s: history of the queue-managed Job: %s %s %v", when, e.Text(), e.Item.Message, e.Item.Fields)
			}
		}
		if it := item(r, drift.Modified, "Job", "train"); it != nil {
			t.Fatalf("%s: reported: %s", when, it.Message)
		}
		j := job("train")
		if isSuspended(j) != wantSuspended || (!wantSuspended && j.Spec.Template.Spec.NodeSelector[keys.Pool] != "training-pool") {
			t.Fatalf("%s: suspend %v, node selector %v", when, isSuspended(j), j.Spec.Template.Spec.NodeSelector)
		}
	}

	update("train", "kueue-job-controller", func(j *batchv1.Job) {
		j.Spec.Suspend = new(bool)
		j.Spec.Template.Spec.NodeSelector = map[string]string{keys.Pool: "training-pool"}
		if j.Spec.Template.Annotations == nil {
			j.Spec.Template.Annotations = map[string]string{}
		}
		j.Spec.Template.Annotations["kueue.x-k8s.io/workload"] = "job-train"
	})
	update("plain", "kubectl-edit", func(j *batchv1.Job) { j.Spec.Suspend = new(bool) })
	h.poll("the plain Job corrected", func() (bool, string) {
		_, hist, _ := h.det.Current()
		for _, e := range hist {
			if e.Item.Object.Name == "plain" && e.Change == drift.Corrected && isSuspended(job("plain")) {
				return true, ""
			}
		}
		return false, "no correction of the plain Job in the history"
	})
	if _, hist, _ := h.det.Current(); !strings.Contains(historyText(hist, "plain"), "spec.suspend") {
		t.Fatalf("the plain Job's drift does not name spec.suspend: %s", historyText(hist, "plain"))
	}
	leftAlone("admitted", false)

	// The daemon's sync of a new revision (correct mode applies everything) leaves it running.
	before, _, _ := h.status.Read(h.ctx)
	h.write("other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: "+ns+"}\ndata: {k: v}\n")
	st := h.waitStatus("the next sync", func(s daemon.Status) bool {
		return s.Revision != before.Revision && s.Result != daemon.ResultPending && s.Result != ""
	})
	if st.Result != daemon.ResultSucceeded || len(st.TakenBack) > 0 {
		t.Fatalf("sync: %s %q, taken back %q, errors %q", st.Result, st.Message, st.TakenBack, st.Errors)
	}
	leftAlone("after a sync", false)

	update("train", "kueue-job-controller", func(j *batchv1.Job) { j.Spec.Suspend = new(bool); *j.Spec.Suspend = true })
	leftAlone("preempted", true)
}

// historyText is the history of one object's items, one entry a line.
func historyText(hist []drift.Entry, name string) string {
	var out []string
	for _, e := range hist {
		if e.Item.Object.Name == name {
			out = append(out, e.Text()+": "+e.Item.Message)
		}
	}
	return strings.Join(out, "\n")
}
