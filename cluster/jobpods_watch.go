package cluster

import (
	"context"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watchSettle is how long WatchJobPods waits after a change for the changes that come with it
// (a pod's status, its job's counts) before it computes the rows again.
const watchSettle = 100 * time.Millisecond

// WatchJobPods calls emit with the rows that JobPods would answer, first when it has read
// them, then each time they change, until ctx ends (it then returns nil) or emit fails. It
// watches the jobs and their pods, and Kueue's Workloads and ClusterQueues and gpuctl's JobSets
// when the cluster serves them and Dynamic is set, so the rows come within moments of a change.
func (r *Reader) WatchJobPods(ctx context.Context, f JobPodFilter, emit func(JobPodList) error) error {
	sel, err := f.selector()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := func(selector string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector })
	}
	podFactory := informers.NewSharedInformerFactoryWithOptions(r.Client, 0,
		informers.WithNamespace(f.Namespace), opts(managedPods.String()))
	jobFactory := informers.NewSharedInformerFactoryWithOptions(r.Client, 0,
		informers.WithNamespace(f.Namespace), opts(sel.String()))
	defer podFactory.Shutdown()
	defer jobFactory.Shutdown()

	changed := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(changed) },
		UpdateFunc: func(any, any) { signal(changed) },
		DeleteFunc: func(any) { signal(changed) },
	}
	pods := podFactory.Core().V1().Pods()
	jobs := jobFactory.Batch().V1().Jobs()
	deps := jobFactory.Apps().V1().Deployments()
	sets := jobFactory.Apps().V1().StatefulSets()
	for _, inf := range []cache.SharedIndexInformer{pods.Informer(), jobs.Informer(), deps.Informer(), sets.Informer()} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			return err
		}
	}
	podFactory.Start(ctx.Done())
	jobFactory.Start(ctx.Done())
	for _, synced := range podFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil // ctx ended
		}
	}
	for _, synced := range jobFactory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil
		}
	}
	var kueue *kueueCache
	var jss *jobSetCache
	if r.Dynamic != nil {
		d := r.Client.Discovery()
		if servesKueue(d) {
			if kueue, err = startKueue(ctx, r.Dynamic, f.Namespace, notify); err != nil {
				return err
			}
		}
		if servesJobSets(d) {
			if jss, err = startJobSets(ctx, r.Dynamic, f.Namespace, sel.String(), notify); err != nil {
				return err
			}
		}
	}

	rows := func() (JobPodList, error) {
		multi, err := jss.list("", nil)
		if err != nil {
			return JobPodList{}, err
		}
		ws := appendAll(nil, multi, fromJobSet)
		js, err := jobs.Lister().List(labels.Everything())
		if err != nil {
			return JobPodList{}, err
		}
		ws = appendAll(ws, js, fromJob)
		ds, err := deps.Lister().List(labels.Everything())
		if err != nil {
			return JobPodList{}, err
		}
		ws = appendAll(ws, ds, fromDeployment)
		ss, err := sets.Lister().List(labels.Everything())
		if err != nil {
			return JobPodList{}, err
		}
		ws = appendAll(ws, ss, fromStatefulSet)
		sortWorkloads(ws)
		ps, err := pods.Lister().List(labels.Everything())
		if err != nil {
			return JobPodList{}, err
		}
		byNS := byNamespace(ps)
		kueue.queues().attach(ws, byNS)
		return jobPodRows(ws, byNS, f, histories{}), nil
	}
	var last *JobPodList
	for {
		list, err := rows()
		if err != nil {
			return err
		}
		if last == nil || !reflect.DeepEqual(*last, list) {
			if err := emit(list); err != nil {
				return err
			}
			last = &list
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		select { // let the changes that come together arrive
		case <-ctx.Done():
			return nil
		case <-time.After(watchSettle):
		}
	}
}

// signal marks c without blocking; one mark stands for any number of changes.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// appendAll appends the workloads of the objects.
func appendAll[T any](ws []workload, objs []*T, conv func(*T) workload) []workload {
	for _, o := range objs {
		ws = append(ws, conv(o))
	}
	return ws
}
