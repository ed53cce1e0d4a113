package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/test/dcgmtest"
	"github.com/gpuctl/gpuctl/test/promtest"
)

// gpuMetrics serves made-up GPU metrics for the demo: a dcgm-exporter stand-in
// (test/dcgmtest) for the GPUs of the cluster's running pods, refreshed every 2 s, scraped by a
// real Prometheus (test/promtest) on listen, with history hours of the same made-up values
// backfilled for the pods that run at its start. Training jobs are busy, inference services
// half busy, notebooks idle with a model loaded in GPU memory. It runs until interrupted.
func gpuMetrics(dir, listen string, history time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := (&kube.Options{Kubeconfig: filepath.Join(dir, "kubeconfig")}).RESTConfig(kube.UserAgent("gpuctl-cluster"))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	now := time.Now()
	kinds := map[string]string{} // namespace/name of a running pod → its gpuctl kind
	gpus, err := demoGPUs(ctx, client, kinds, now)
	if err != nil {
		return err
	}
	exp, err := dcgmtest.Start(dcgmtest.Plain, gpus)
	if err != nil {
		return err
	}
	defer exp.Close()
	var backfill []byte
	if history > 0 && len(gpus) > 0 {
		backfill = dcgmtest.OpenMetrics(dcgmtest.Plain, gpus, now.Add(-history), now.Add(-time.Minute), time.Minute,
			func(g dcgmtest.GPU, t time.Time) dcgmtest.GPU { return demoValues(g, kinds[g.Namespace+"/"+g.Pod], t) })
	}
	promDir := filepath.Join(dir, "prometheus")
	_ = os.RemoveAll(promDir) // the history is made up anew on every run
	if err := os.MkdirAll(promDir, 0o755); err != nil {
		return err
	}
	prom, err := promtest.Start(ctx, promtest.Options{Targets: []string{exp.Addr}, Backfill: backfill, Dir: promDir, Listen: listen, Log: os.Stderr})
	if err != nil {
		return err
	}
	defer prom.Stop()
	fmt.Printf("made-up GPU metrics of %d GPUs (dcgm-exporter's format) at %s, scraped by Prometheus at %s with %s of history\n",
		len(gpus), exp.URL, prom.URL, history)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if gpus, err := demoGPUs(ctx, client, kinds, time.Now()); err == nil {
			exp.Set(gpus)
		} else {
			fmt.Fprintln(os.Stderr, "list pods:", err)
		}
	}
}

// demoGPUs are the GPUs of the running pods with their made-up values at t; kinds records
// each running pod's gpuctl kind.
func demoGPUs(ctx context.Context, client kubernetes.Interface, kinds map[string]string, t time.Time) ([]dcgmtest.GPU, error) {
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running = append(running, p)
			kinds[p.Namespace+"/"+p.Name] = p.Labels[keys.JobType]
		}
	}
	gpus := dcgmtest.ForPods(running)
	// The GPUs that no pod holds, as the exporter serves them: without pod labels, idle.
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	held := map[string]int{}
	for _, g := range gpus {
		held[g.Node]++
	}
	for _, n := range nodes.Items {
		q := n.Status.Capacity[keys.ResourceGPU]
		for i := held[n.Name]; i < int(q.Value()); i++ {
			gpus = append(gpus, dcgmtest.GPU{Node: n.Name, Index: i, UUID: dcgmtest.UUID(n.Name, i), Model: dcgmtest.DefaultModel,
				MemTotalMiB: dcgmtest.DefaultMemTotalMiB})
		}
	}
	for i, g := range gpus {
		gpus[i] = demoValues(g, kinds[g.Namespace+"/"+g.Pod], t)
	}
	return gpus, nil
}

// demoValues are a GPU's made-up values at t for a pod of kind: a steady level per GPU with
// a slow wave.
func demoValues(g dcgmtest.GPU, kind string, t time.Time) dcgmtest.GPU {
	h := fnv.New32a()
	h.Write([]byte(g.UUID))
	seed := float64(h.Sum32()%1000) / 1000
	wave := math.Sin(float64(t.Unix())/600 + seed*6)
	switch kind {
	case "": // no pod holds it
		g.Util, g.MemUsedMiB, g.PowerW = 0, 0, 60
	case "notebook": // idle, a model loaded
		g.Util, g.MemUsedMiB, g.PowerW = 0, 0.4*g.MemTotalMiB, 72
	case "inference":
		g.Util = 35 + 20*seed + 10*wave
		g.MemUsedMiB, g.PowerW = 0.6*g.MemTotalMiB, 250+100*seed
	default: // training
		g.Util = 80 + 12*seed + 5*wave
		g.MemUsedMiB, g.PowerW = (0.75+0.2*seed)*g.MemTotalMiB, 550+100*seed
	}
	g.Util = math.Round(max(0, min(100, g.Util)))
	g.MemUsedMiB = math.Round(g.MemUsedMiB)
	return g
}
