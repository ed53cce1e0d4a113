package cluster

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// reopenDelay is how long a follow waits before it tries again to open the log of a
// container that has started but whose log the API server does not serve yet.
const reopenDelay = time.Second

// follower streams the logs of a job's pods as Reader.Logs with Follow: one goroutine per
// container instance, started when the pod watch sees the instance running.
type follower struct {
	r    *Reader
	opts LogOptions
	emit func(LogLine) error
	ctx  context.Context
	stop context.CancelCauseFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	started map[string]bool                 // "<pod>/<pod uid>/<container>/<restarts>"
	cancels map[podKey][]context.CancelFunc // the streams of each pod
}

// followLogs follows the logs of the workload's pods until ctx ends or emit fails: the
// containers running now from opts.Tail and opts.Since back, then each container instance
// that starts later (a new pod, a restart) from its first line.
func (r *Reader) followLogs(ctx context.Context, wl workload, opts LogOptions, emit func(LogLine) error) error {
	ctx, stop := context.WithCancelCause(ctx)
	f := &follower{r: r, opts: opts, emit: emit, ctx: ctx, stop: stop,
		started: map[string]bool{}, cancels: map[podKey][]context.CancelFunc{}}
	factory := informers.NewSharedInformerFactoryWithOptions(r.Client, 0,
		informers.WithNamespace(wl.meta.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = wl.selector.String()
			if opts.Pod != "" {
				o.FieldSelector = "metadata.name=" + opts.Pod
			}
		}))
	defer func() { // in this order: the informer's goroutines end with ctx, and emit is not called after return
		stop(nil)
		factory.Shutdown()
		f.wg.Wait()
	}()
	pods := factory.Core().V1().Pods()
	reg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if p, ok := obj.(*corev1.Pod); ok && !initial {
				f.startPod(p, false)
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				f.startPod(p, false)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				f.stopPod(keyOf(p))
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		list, err := pods.Lister().List(wl.selector)
		if err != nil {
			return err
		}
		if opts.Pod != "" && len(list) == 0 {
			return UnknownPod(opts.Pod, wl.id())
		}
		sortPods(list)
		for _, p := range currentPods(list, opts) {
			f.startPod(p, true)
		}
	}
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return nil
}

// startPod starts a stream for each container instance of the pod that has started and has
// none yet. The streams of the pods there when the follow began (initial) start opts.Tail
// and opts.Since back; the others from the first line.
func (f *follower) startPod(p *corev1.Pod, initial bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		return
	}
	for _, c := range p.Spec.Containers {
		st := containerStatus(p, c.Name)
		if st == nil || !containerStarted(p, c.Name) {
			continue
		}
		key := p.Name + "/" + string(p.UID) + "/" + c.Name + "/" + strconv.Itoa(int(st.RestartCount))
		if f.started[key] {
			continue
		}
		f.started[key] = true
		opts := LogOptions{Follow: true, Tail: -1}
		if initial {
			opts.Tail, opts.Since = f.opts.Tail, f.opts.Since
		}
		ctx, cancel := context.WithCancel(f.ctx)
		f.cancels[keyOf(p)] = append(f.cancels[keyOf(p)], cancel)
		pod := p.DeepCopy()
		f.wg.Go(func() {
			defer cancel()
			f.stream(ctx, pod, c.Name, podLogOptions(opts, c.Name))
		})
	}
}

// podKey is a pod instance: a pod deleted and created again under its name is another.
type podKey struct {
	name string
	uid  types.UID
}

func keyOf(p *corev1.Pod) podKey { return podKey{p.Name, p.UID} }

// stopPod ends the streams of a deleted pod.
func (f *follower) stopPod(k podKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cancel := range f.cancels[k] {
		cancel()
	}
	delete(f.cancels, k)
}

// stream follows one container instance until its log ends or ctx ends. A log that cannot
// be opened yet is tried again every reopenDelay; an error of emit ends the whole follow.
func (f *follower) stream(ctx context.Context, p *corev1.Pod, container string, o *corev1.PodLogOptions) {
	for {
		rc, err := f.r.openLog(ctx, p, container, o)
		if err == nil {
			err = readLog(ctx, rc, p, container, f.opts.Grep, f.emit)
			rc.Close()
			if ee := (*emitError)(nil); errors.As(err, &ee) {
				f.stop(ee.err)
			} else if err != nil {
				f.r.log().Warn("log stream ended", "err", err)
			}
			return
		}
		f.r.log().Debug("log not served yet; trying again", "pod", p.Name, "container", container, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(reopenDelay):
		}
	}
}
