package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogOptions select the lines of Reader.Logs. The zero value is not every line (Tail 0 is
// none); start from DefaultLogOptions.
type LogOptions struct {
	// Follow keeps streaming: new lines as they are written, and the containers of pods that
	// start or restart meanwhile, until the context ends.
	Follow bool
	// Tail is the number of last lines of each container to show; negative shows all. With
	// Follow, it applies to the containers running when the stream starts; the containers that
	// start later are shown from their first line.
	Tail int64
	// Since shows only the lines written within this duration; 0 shows all.
	Since time.Duration
	// Grep shows only the lines that contain this string; "" shows all.
	Grep string
	// Pod is the one pod to show, by name; "" shows the job's pods.
	Pod string
	// AllPods shows the pods that have terminated too, when the job also has pods that have
	// not (a retried or rolled-out job); by default those old pods are left out.
	AllPods bool
	// Previous shows the log of each container's previous instance (after a restart); it
	// cannot be combined with Follow.
	Previous bool
}

// Validate refuses options that Logs would refuse, with a *FilterError.
func (o LogOptions) Validate() error {
	if o.Follow && o.Previous {
		return filterErrorf("previous", "cannot be combined with follow")
	}
	if o.Since < 0 {
		return filterErrorf("since", "want a positive duration, got %s", o.Since)
	}
	return nil
}

// DefaultLogOptions shows every line of the job's current pods, once.
func DefaultLogOptions() LogOptions { return LogOptions{Tail: -1} }

// LogLine is one line of a job's log.
type LogLine struct {
	// Pod and Container name where the line comes from.
	Pod       string `json:"pod"`
	Container string `json:"container"`
	// Prefix names the source in few characters: "rank-<i>" for a pod of an indexed Job
	// (one per node of a multi-node training), else the pod name; "/<container>" follows
	// when the pod has several containers.
	Prefix string `json:"prefix"`
	// Text is the line without its newline.
	Text string `json:"text"`
}

// Format is the line as gpuctl shows it, "[<prefix>] <text>", with paint (when not nil)
// applied to the bracketed prefix, e.g. to colour it.
func (l LogLine) Format(paint func(string) string) string {
	prefix := "[" + l.Prefix + "]"
	if paint != nil {
		prefix = paint(prefix)
	}
	return prefix + " " + l.Text
}

// NoLogsError is a job that has no container that has started, so no log to show yet; or a
// job that Kueue's MultiKueue runs in another cluster (Cluster), whose logs are there.
type NoLogsError struct {
	// JobID is the job; Status its status; Pods the number of its pods (none have started).
	JobID  string `json:"jobId"`
	Status string `json:"status"`
	Pods   int    `json:"pods"`
	// Cluster is the worker cluster that runs the job (QueueState.Cluster), "" for a job of
	// this cluster. Workload is then the job's Kueue Workload (QueueState.Workload), whose
	// name MultiKueue's copy in the worker carries (its Workload's, the label
	// kueue.x-k8s.io/prebuilt-workload-name): the worker's job of that id is this job's copy
	// only if its Workload has that name.
	Cluster  string `json:"cluster,omitempty"`
	Workload string `json:"workload,omitempty"`
}

// Error says why there is no log: "job alice.sft has no pods yet (status Pending)", "job
// alice.sft runs on cluster gpu-b (MultiKueue): its pods and logs are there".
func (e *NoLogsError) Error() string {
	if e.Cluster != "" {
		return fmt.Sprintf("job %s runs on cluster %s (MultiKueue): its pods and logs are there", e.JobID, e.Cluster)
	}
	if e.Pods == 0 && (e.Status == StatusSucceeded || e.Status == StatusFailed) {
		return fmt.Sprintf("job %s has no pods left (status %s; `gpuctl events %s` says why)", e.JobID, e.Status, e.JobID)
	}
	if e.Pods == 0 {
		return fmt.Sprintf("job %s has no pods yet (status %s)", e.JobID, e.Status)
	}
	return fmt.Sprintf("job %s: none of its %d pods has started a container yet (status %s)", e.JobID, e.Pods, e.Status)
}

// Logs writes the log lines of a job's pods to emit: id is a job id as Job takes it. Without
// Follow, each container's lines come in one block, the pods by rank (indexed Jobs) or by
// creation, and a job without a started container is a *NoLogsError. With Follow, lines come
// as they are written, and Logs returns nil when ctx ends. emit is never called concurrently;
// an error from it ends Logs with that error. A pod that opts.Pod names but the job does not
// have is a *NotFoundError; refused options are a *FilterError. A job that Kueue's MultiKueue
// dispatches to a worker cluster has no pod here, followed or not: a *NoLogsError, with the
// worker's name once one runs it.
func (r *Reader) Logs(ctx context.Context, id string, opts LogOptions, emit func(LogLine) error) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	wl, err := r.findWorkload(ctx, id)
	if err != nil {
		return err
	}
	if wl.multiKueue {
		pods, err := r.queuedJobPods(ctx, &wl)
		if err != nil {
			return err
		}
		e := &NoLogsError{JobID: wl.id(), Status: wl.status, Pods: len(pods), Cluster: wl.queue.Worker()}
		if e.Cluster != "" {
			e.Workload = wl.queue.Workload
		}
		return e
	}
	emit = serialize(emit)
	if opts.Follow {
		return r.followLogs(ctx, wl, opts, emit)
	}
	pods, err := r.jobPods(ctx, wl)
	if err != nil {
		return err
	}
	if opts.Pod != "" {
		pods = onePod(pods, opts.Pod)
		if len(pods) == 0 {
			return UnknownPod(opts.Pod, wl.id())
		}
	}
	pods = currentPods(pods, opts)
	var errs []error
	started := 0
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if !opts.Previous && !containerStarted(p, c.Name) {
				continue
			}
			started++
			err := r.streamLog(ctx, p, c.Name, podLogOptions(opts, c.Name), opts.Grep, emit)
			if ee := (*emitError)(nil); errors.As(err, &ee) {
				return ee.err
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if started == 0 {
		return &NoLogsError{JobID: wl.id(), Status: wl.status, Pods: len(pods)}
	}
	return errors.Join(errs...)
}

// serialize makes emit safe to call from several goroutines, one call at a time.
func serialize(emit func(LogLine) error) func(LogLine) error {
	var mu sync.Mutex
	return func(l LogLine) error {
		mu.Lock()
		defer mu.Unlock()
		return emit(l)
	}
}

// jobPods lists the workload's pods, by rank, then creation, then name.
func (r *Reader) jobPods(ctx context.Context, wl workload) ([]*corev1.Pod, error) {
	pods, err := r.ObjectSource().Pods(ctx, wl.meta.Namespace, wl.selector, nil)
	if err != nil {
		return nil, fmt.Errorf("job %s: list pods: %w", wl.id(), err)
	}
	sortPods(pods)
	return pods, nil
}

func sortPods(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		ra, oka := rank(a)
		rb, okb := rank(b)
		if oka && okb && ra != rb {
			return ra < rb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

func onePod(pods []*corev1.Pod, name string) []*corev1.Pod {
	for _, p := range pods {
		if p.Name == name {
			return []*corev1.Pod{p}
		}
	}
	return nil
}

// currentPods leaves out, while some pods have not terminated, the terminated pods that others
// replaced: a Deployment's or StatefulSet's old pods, and a Job's failed attempt at a rank
// that a newer pod now runs. A Job's finished ranks and its other pods stay: their logs are
// the job's. opts.AllPods or opts.Pod keeps every pod.
func currentPods(pods []*corev1.Pod, opts LogOptions) []*corev1.Pod {
	if opts.AllPods || opts.Pod != "" {
		return pods
	}
	live, liveRanks := false, map[int]bool{}
	for _, p := range pods {
		if !podTerminated(p) {
			live = true
			if r, ok := rank(p); ok {
				liveRanks[r] = true
			}
		}
	}
	if !live {
		return pods
	}
	var out []*corev1.Pod
	for _, p := range pods {
		r, ranked := rank(p)
		switch {
		case !podTerminated(p):
		case !ownedByJob(p):
			continue // replaced by the controller's newer pods
		case ranked && liveRanks[r]:
			continue // a newer attempt runs this rank
		}
		out = append(out, p)
	}
	return out
}

// ownedByJob reports whether a Job controls the pod.
func ownedByJob(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "Job"
}

func podTerminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// rank is the completion index of a pod of an indexed Job.
func rank(p *corev1.Pod) (int, bool) {
	v, ok := p.Labels[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Annotations[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// logPrefix names a container of a pod for LogLine.Prefix.
func logPrefix(p *corev1.Pod, container string) string {
	prefix := p.Name
	if n, ok := rank(p); ok {
		prefix = "rank-" + strconv.Itoa(n)
	}
	if len(p.Spec.Containers) > 1 {
		prefix += "/" + container
	}
	return prefix
}

// containerStarted reports whether the container's current instance has started: its log
// can be read.
func containerStarted(p *corev1.Pod, container string) bool {
	st := containerStatus(p, container)
	return st != nil && (st.State.Running != nil || st.State.Terminated != nil)
}

func containerStatus(p *corev1.Pod, container string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == container {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// podLogOptions are the API server's options for one container's log.
func podLogOptions(opts LogOptions, container string) *corev1.PodLogOptions {
	o := &corev1.PodLogOptions{Container: container, Follow: opts.Follow, Previous: opts.Previous}
	if opts.Tail >= 0 {
		o.TailLines = &opts.Tail
	}
	if opts.Since > 0 {
		secs := int64((opts.Since + time.Second - 1) / time.Second)
		o.SinceSeconds = &secs
	}
	return o
}

// emitError is an error of emit, which ends Logs.
type emitError struct{ err error }

func (e *emitError) Error() string { return e.err.Error() }
func (e *emitError) Unwrap() error { return e.err }

// streamLog reads one container's log and emits its lines that contain grep.
func (r *Reader) streamLog(ctx context.Context, p *corev1.Pod, container string, o *corev1.PodLogOptions, grep string, emit func(LogLine) error) error {
	rc, err := r.openLog(ctx, p, container, o)
	if err != nil {
		return err
	}
	defer rc.Close()
	return readLog(ctx, rc, p, container, grep, emit)
}

// openLog asks the API server for one container's log. A failure that is not an answer
// about the request itself (the kubelet or the connection to it failed) is tried once more
// after a short pause, so that one dropped connection does not leave a pod out of a log.
func (r *Reader) openLog(ctx context.Context, p *corev1.Pod, container string, o *corev1.PodLogOptions) (io.ReadCloser, error) {
	rc, err := r.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, o).Stream(ctx)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) && ctx.Err() == nil {
		r.log().Debug("log stream failed, trying again", "pod", p.Name, "container", container, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
			rc, err = r.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, o).Stream(ctx)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s container %s: log: %w", p.Name, container, err)
	}
	return rc, nil
}

// readLog emits the lines of a log that contain grep, until it ends or ctx ends. Its errors
// name the pod and the container; an error of emit is an *emitError.
func readLog(ctx context.Context, log io.Reader, p *corev1.Pod, container, grep string, emit func(LogLine) error) error {
	prefix := logPrefix(p, container)
	br := bufio.NewReaderSize(log, MaxLogLine)
	for {
		line, cut, err := nextLine(br)
		if line != "" {
			text := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			if cut {
				text += cutMark
			}
			if grep == "" || strings.Contains(text, grep) {
				if e := emit(LogLine{Pod: p.Name, Container: container, Prefix: prefix, Text: text}); e != nil {
					return &emitError{e}
				}
			}
		}
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pod %s container %s: read log: %w", p.Name, container, err)
		}
	}
}

// MaxLogLine is the longest log line, in bytes, that the read model passes on: a longer line
// is cut there and ends in cutMark, so that a container writing a line without end cannot
// fill the memory of the daemon that serves its log.
const MaxLogLine = 64 << 10

// cutMark ends a line that was longer than MaxLogLine.
const cutMark = " … [line cut at 64 KiB]"

// nextLine reads one line of at most MaxLogLine bytes, its newline included; the rest of a
// longer line is read and dropped, and cut says so. br must buffer MaxLogLine bytes.
func nextLine(br *bufio.Reader) (line string, cut bool, err error) {
	b, err := br.ReadSlice('\n')
	line = string(b)
	for errors.Is(err, bufio.ErrBufferFull) {
		cut = true
		_, err = br.ReadSlice('\n')
	}
	return line, cut, err
}

// UnknownPod is the error of a pod that a job does not have: `unknown pod "x" of job alice.sft`.
func UnknownPod(pod, jobID string) *NotFoundError {
	return &NotFoundError{Kind: "pod", Name: pod, Hint: " of job " + jobID}
}
