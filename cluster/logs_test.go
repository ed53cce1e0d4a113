package cluster

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The lines themselves come from the API server: the tests against the local cluster (test/e2e)
// read them through kwok. The fake clientset answers every log request with "fake logs".

// runningPod is a pod of app whose containers run, created at T0 + age.
func runningPod(name, app string, age time.Duration, index string, containers ...string) *corev1.Pod {
	p := fx.Pod("alice", name, app, "gpu-1", corev1.PodRunning, 0, fx.At(age))
	p.CreationTimestamp = *fx.At(age)
	if index != "" {
		p.Labels[batchv1.JobCompletionIndexAnnotation] = index
	}
	if len(containers) == 0 {
		containers = []string{"main"}
	}
	p.Spec.Containers = nil
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return p
}

func collect(t *testing.T, r *Reader, id string, opts LogOptions) ([]LogLine, error) {
	t.Helper()
	var got []LogLine
	err := r.Logs(ctx, id, opts, func(l LogLine) error { got = append(got, l); return nil })
	return got, err
}

func TestLogsPrefixesByRankAndContainer(t *testing.T) {
	done := runningPod("sft-1-old", "sft", 0, "1")
	done.Status.Phase = corev1.PodFailed
	r := testReader(t, fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{Active: 2}),
		runningPod("sft-1-b", "sft", time.Minute, "1"), runningPod("sft-0-a", "sft", 2*time.Minute, "0", "main", "sidecar"),
		done, runningPod("other", "web", 0, ""))
	got, err := collect(t, r, "alice.sft", DefaultLogOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := []LogLine{
		{Pod: "sft-0-a", Container: "main", Prefix: "rank-0/main", Text: "fake logs"},
		{Pod: "sft-0-a", Container: "sidecar", Prefix: "rank-0/sidecar", Text: "fake logs"},
		{Pod: "sft-1-b", Container: "main", Prefix: "rank-1", Text: "fake logs"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines\n got %+v\nwant %+v", got, want)
	}
	opts := DefaultLogOptions()
	opts.AllPods = true
	if got, _ := collect(t, r, "sft", opts); len(got) != 4 || got[2].Pod != "sft-1-old" {
		t.Errorf("--all-pods: %+v, want the failed pod of rank 1 before its replacement", got)
	}
	opts = DefaultLogOptions()
	opts.Pod = "sft-1-b"
	if got, _ := collect(t, r, "sft", opts); len(got) != 1 || got[0].Pod != "sft-1-b" {
		t.Errorf("--pod: %+v", got)
	}
	opts.Pod = "other"
	if _, err := collect(t, r, "sft", opts); !errors.As(err, new(*NotFoundError)) {
		t.Errorf("a pod of another job: %v, want a *NotFoundError", err)
	}
	opts = DefaultLogOptions()
	opts.Grep = "nothing like it"
	if got, err := collect(t, r, "sft", opts); len(got) != 0 || err != nil {
		t.Errorf("grep: %+v, %v", got, err)
	}
	if l := want[2]; l.Format(nil) != "[rank-1] fake logs" || l.Format(func(s string) string { return "<" + s + ">" }) != "<[rank-1]> fake logs" {
		t.Errorf("format: %q", l.Format(nil))
	}
}

func TestLogsOfAJobWithoutStartedContainers(t *testing.T) {
	pending := fx.Pod("alice", "sft-x", "sft", "", corev1.PodPending, 8, nil)
	for objs, want := range map[int]string{
		0: "job alice.sft has no pods yet (status Pending)",
		1: "job alice.sft: none of its 1 pods has started a container yet (status Pending)",
	} {
		r := testReader(t, fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{}))
		if objs == 1 {
			r = testReader(t, fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{}), pending)
		}
		_, err := collect(t, r, "sft", DefaultLogOptions())
		var nl *NoLogsError
		if !errors.As(err, &nl) || err.Error() != want {
			t.Errorf("%d pods: %v, want %q", objs, err, want)
		}
	}
}

func TestLogsRefusesFollowWithPrevious(t *testing.T) {
	opts := DefaultLogOptions()
	opts.Follow, opts.Previous = true, true
	_, err := collect(t, testReader(t), "alice.sft", opts)
	wantFilterError(t, err, "previous")
}

func TestPodLogOptions(t *testing.T) {
	o := podLogOptions(LogOptions{Tail: 5, Since: 1500 * time.Millisecond, Follow: true}, "main")
	if o.Container != "main" || *o.TailLines != 5 || *o.SinceSeconds != 2 || !o.Follow {
		t.Errorf("%+v", o)
	}
	if o := podLogOptions(DefaultLogOptions(), "main"); o.TailLines != nil || o.SinceSeconds != nil {
		t.Errorf("defaults: %+v", o)
	}
}

func TestToEvent(t *testing.T) {
	seen := metav1.NewMicroTime(fx.T0.Add(time.Minute))
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "alice"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "sft-0-a"},
		Type:           "Warning", Reason: "FailedScheduling", Message: "0/4 nodes are available\n",
		EventTime: metav1.NewMicroTime(fx.T0),
		Series:    &corev1.EventSeries{Count: 3, LastObservedTime: seen},
	}
	want := Event{LastSeen: seen.UTC(), FirstSeen: fx.T0.UTC(), Type: "Warning", Reason: "FailedScheduling",
		JobID: "alice.sft", Namespace: "alice", Object: "pod/sft-0-a", Message: "0/4 nodes are available", Count: 3}
	if got := toEvent(e, "alice.sft"); got != want {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

func TestEventsOfJobs(t *testing.T) {
	ev := func(name, kind, obj string, at time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "alice"},
			InvolvedObject: corev1.ObjectReference{Kind: kind, Name: obj}, Reason: name, Type: "Normal",
			FirstTimestamp: *fx.At(at), LastTimestamp: *fx.At(at), Count: 1}
	}
	objs := append(fx.Objects(), runningPod("sft-0-a", "sft", 0, "0"),
		ev("created", "Pod", "sft-0-a", 2*time.Minute), ev("started", "Job", "sft", time.Minute),
		ev("unrelated", "Pod", "someone-else", 0), ev("nb", "StatefulSet", "nb", 3*time.Minute))
	r := testReader(t, objs...)
	l, err := r.JobEvents(ctx, "alice.sft")
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range l.Items {
		reasons = append(reasons, e.Reason+" "+e.Object)
	}
	if want := []string{"started job/sft", "created pod/sft-0-a"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("job events %v, want %v (oldest first)", reasons, want)
	}
	all, err := r.Events(ctx, "")
	if err != nil || len(all.Items) != 3 || all.Items[2].JobID != "alice.nb" {
		t.Errorf("all events: %+v, %v", all.Items, err)
	}
	if none, err := r.Events(ctx, "bob"); err != nil || len(none.Items) != 0 {
		t.Errorf("bob's events: %+v, %v", none.Items, err)
	}
}

// A follow shows the running containers' lines, then those of a pod created after it began,
// and ends without error when its context ends.
func TestLogsFollowPicksUpNewPods(t *testing.T) {
	r := testReader(t, fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{Active: 2}), runningPod("sft-0-a", "sft", 0, "0"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	opts := DefaultLogOptions()
	opts.Follow = true
	lines := make(chan LogLine, 10)
	done := make(chan error)
	go func() { done <- r.Logs(ctx, "sft", opts, func(l LogLine) error { lines <- l; return nil }) }()
	next := func() string {
		select {
		case l := <-lines:
			return l.Format(nil)
		case <-time.After(5 * time.Second):
			return "(nothing within 5s)"
		}
	}
	if l := next(); l != "[rank-0] fake logs" {
		t.Fatalf("first line %q", l)
	}
	time.Sleep(100 * time.Millisecond) // the watch is open
	if _, err := r.Client.CoreV1().Pods("alice").Create(ctx, runningPod("sft-1-b", "sft", 0, "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "[rank-1] fake logs" {
		t.Fatalf("line of the new pod %q", l)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("follow ended with %v", err)
	}
}

// TestNoLogsErrorSaysWhy: a job whose pods are gone after it ended is not told apart as
// "not started yet", and the message points at its events.
func TestNoLogsErrorSaysWhy(t *testing.T) {
	for e, want := range map[*NoLogsError]string{
		{JobID: "alice.sft", Status: StatusPending}:          "job alice.sft has no pods yet (status Pending)",
		{JobID: "alice.sft", Status: StatusFailed}:           "job alice.sft has no pods left (status Failed; `gpuctl events alice.sft` says why)",
		{JobID: "alice.sft", Status: StatusPending, Pods: 2}: "job alice.sft: none of its 2 pods has started a container yet (status Pending)",
	} {
		if got := e.Error(); got != want {
			t.Errorf("%+v: %q, want %q", *e, got, want)
		}
	}
}

// TestLogsKeepAJobsFinishedRanks: a multi-node training whose rank 0 has finished while rank 1
// still runs shows both ranks' logs; a Deployment's terminated pod beside a running one (an
// old replica) is left out.
func TestLogsKeepAJobsFinishedRanks(t *testing.T) {
	jobRef := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "sft", UID: "u", Controller: new(bool)}}
	*jobRef[0].Controller = true
	finished := runningPod("sft-0", "sft", 2*time.Minute, "0")
	finished.Status.Phase = corev1.PodSucceeded
	finished.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}
	running := runningPod("sft-1", "sft", time.Minute, "1")
	finished.OwnerReferences, running.OwnerReferences = jobRef, jobRef
	r := testReader(t, fx.Job("alice", "sft", "training-pool", 8, batchv1.JobStatus{Active: 1, Succeeded: 1}), finished, running)
	got, err := collect(t, r, "alice.sft", DefaultLogOptions())
	if err != nil || len(got) != 2 || got[0].Prefix != "rank-0" || got[1].Prefix != "rank-1" {
		t.Errorf("a finished rank beside a running one: %+v, %v", got, err)
	}
	old := runningPod("old", "sft", 3*time.Minute, "")
	old.Status.Phase = corev1.PodFailed
	if got := currentPods([]*corev1.Pod{old, runningPod("new", "sft", 0, "")}, DefaultLogOptions()); len(got) != 1 || got[0].Name != "new" {
		t.Errorf("a replaced pod (no Job owner) is kept: %v", got)
	}
}

// TestReadLogCutsEndlessLines: a container that writes a line far longer than MaxLogLine
// (hostile, or a binary dump) reaches emit cut at MaxLogLine with a mark, and the lines after
// it still come whole; the reader never holds more than one buffer of it.
func TestReadLogCutsEndlessLines(t *testing.T) {
	long := strings.Repeat("x", 3*MaxLogLine+17)
	log := strings.NewReader("first\n" + long + "\nlast\r\n" + strings.Repeat("y", MaxLogLine+1))
	var got []string
	err := readLog(ctx, log, runningPod("p", "sft", 0, ""), "main", "", func(l LogLine) error {
		got = append(got, l.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"first", long[:MaxLogLine] + cutMark, "last", strings.Repeat("y", MaxLogLine) + cutMark}
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			t.Errorf("line %d: %d bytes, %q…", i, len(got[i]), got[i][:min(20, len(got[i]))])
		}
		t.Errorf("want %d lines: first, a cut line, last, a cut last line", len(want))
	}
}
