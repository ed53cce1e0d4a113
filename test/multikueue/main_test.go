package multikueue

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The fleet's clusters: the manager and its workers, as .gpuctl.yaml names them.
const (
	hub  = "hub"
	gpuA = "gpu-a"
	gpuB = "gpu-b"
)

// clusters are the running control planes by name, started by TestMain.
var clusters = map[string]*testcluster.Cluster{}

// workerNodes: each worker has one node of 4 GPUs, of the same name in both (a job's place is
// told by the cluster, not by the node's name); the manager has no GPU: it runs no job.
var nodes = map[string][]testcluster.NodeSpec{
	hub:  {{Name: "cpu-0", CPU: "32", Memory: "128Gi"}},
	gpuA: {{Name: "gpu-0", GPUs: 4, GPUProduct: "NVIDIA-A100-SXM4-80GB", GPUType: "a100-80g", CPU: "64", Memory: "512Gi"}},
	gpuB: {{Name: "gpu-0", GPUs: 4, GPUProduct: "NVIDIA-H100-80GB-HBM3", GPUType: "h100-80g", CPU: "64", Memory: "512Gi"}},
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

// run starts the three clusters with Kueue side by side, runs the tests and stops them.
func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := testcluster.Binaries(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: cannot get the cluster binaries: %v\n", err)
		return 1
	}
	begin := time.Now()
	opts := map[string]testcluster.Options{}
	for name := range nodes {
		opts[name] = options(name, bin)
	}
	started, err := testcluster.StartSeveral(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the local clusters did not start, so no test ran:\n%v\n", err)
		return 1
	}
	clusters = started
	defer func() {
		for _, c := range clusters {
			_ = c.Stop()
		}
	}()
	fmt.Fprintf(os.Stderr, "multikueue: %d clusters with Kueue up in %s\n", len(clusters), time.Since(begin).Round(100*time.Millisecond))
	return m.Run()
}

// gpuctl runs the CLI against one cluster of the fleet.
func gpuctl(t testing.TB, cluster string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--kubeconfig", clusters[cluster].Kubeconfig)
	code := app.Run(t.Context(), app.Streams{Out: &out, Err: &errOut}, args)
	return out.String(), errOut.String(), code
}

// options are a cluster's: its nodes and Kueue, the manager's with MultiKueue's configuration.
func options(name, bin string) testcluster.Options {
	opts := testcluster.Options{BinDir: bin, Nodes: nodes[name], Kueue: true}
	if name == hub {
		opts.KueueConfig = testcluster.MultiKueueManagerConfigFile
	}
	return opts
}
