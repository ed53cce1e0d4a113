package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// --- the API server's floor ---

// floorConcurrencies are the numbers of requests in flight that the floor engine tries; it
// keeps the fastest on this machine (issue #18, bar 3).
var floorConcurrencies = []int{4, 8, 16, 32, 64}

// floorCalibrationN is how many objects each calibration round creates (and deletes).
const floorCalibrationN = 300

var jobsGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// floorEngine is what creating the objects costs the API server and no more: a bare POST of
// each object with client-go (no plan, no inventory, no apply, no discovery), at the
// concurrency that is fastest here, chosen untimed in setup by creating floorCalibrationN
// objects at each of floorConcurrencies in a scratch namespace. Its full pass is the floor of
// a full sync; its no-op pass sends nothing, the floor of a no-op.
type floorEngine struct {
	cfg     *rest.Config
	log     *progress
	dyn     dynamic.Interface
	objs    []*unstructured.Unstructured
	workers int
	done    atomic.Int64
}

func (e *floorEngine) setup(ctx context.Context, objs []*unstructured.Unstructured) error {
	dyn, err := dynamic.NewForConfig(e.cfg)
	if err != nil {
		return err
	}
	e.dyn, e.objs = dyn, objs
	return e.calibrate(ctx)
}

// calibrate picks the fastest concurrency: each round creates floorCalibrationN copies of the
// first object in the scratch namespace bench-floor-calibration, then deletes them.
func (e *floorEngine) calibrate(ctx context.Context) error {
	const ns = "bench-floor-calibration"
	ri := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	nsObj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
	if _, err := ri.Create(ctx, nsObj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	sample := make([]*unstructured.Unstructured, floorCalibrationN)
	for i := range sample {
		o := e.objs[i%len(e.objs)].DeepCopy()
		o.SetNamespace(ns)
		o.SetName(fmt.Sprintf("calibrate-%d", i))
		sample[i] = o
	}
	best, bestTime := 0, time.Duration(0)
	// Round 0 warms the API server up (its caches, its connections) at 16 in flight, untimed,
	// so that the first concurrency measured is not measured cold.
	for _, w := range append([]int{0}, floorConcurrencies...) {
		warmUp := w == 0
		if warmUp {
			w = 16
		}
		t0 := time.Now()
		if err := e.create(ctx, sample, w); err != nil {
			return fmt.Errorf("calibration at %d in flight: %w", w, err)
		}
		d := time.Since(t0)
		if err := e.dyn.Resource(jobsGVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return err
		}
		if warmUp {
			continue
		}
		if best == 0 || d < bestTime {
			best, bestTime = w, d
		}
		if e.log != nil {
			e.log.printf("floor calibration: %d Jobs at %d in flight in %s", len(sample), w, round(d))
		}
	}
	e.workers = best
	return nil
}

func (e *floorEngine) before() error { return nil }

// pass creates every object once (the full pass), or, when they exist already (the no-op
// pass), sends nothing.
func (e *floorEngine) pass(ctx context.Context, label string) (string, *Counts, error) {
	if label == "noop" {
		return "nothing sent", nil, nil
	}
	if err := e.create(ctx, e.objs, e.workers); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%d created by POST, %d in flight", len(e.objs), e.workers), nil, nil
}

// create POSTs objs with workers requests in flight.
func (e *floorEngine) create(ctx context.Context, objs []*unstructured.Unstructured, workers int) error {
	e.done.Store(0)
	next := make(chan *unstructured.Unstructured)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range workers {
		wg.Go(func() {
			for o := range next {
				if _, err := e.dyn.Resource(jobsGVR).Namespace(o.GetNamespace()).Create(ctx, o, metav1.CreateOptions{}); err != nil {
					once.Do(func() { first = fmt.Errorf("create %s/%s: %w", o.GetNamespace(), o.GetName(), err) })
				}
				e.done.Add(1)
			}
		})
	}
	for _, o := range objs {
		if ctx.Err() != nil {
			break
		}
		next <- o
	}
	close(next)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func (e *floorEngine) progress() string {
	return fmt.Sprintf("%d of %d created", e.done.Load(), len(e.objs))
}
