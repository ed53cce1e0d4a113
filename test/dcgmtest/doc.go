// Package dcgmtest serves GPU metrics in the exact exposition format of NVIDIA's dcgm-exporter,
// for tests and the demo, where there is no GPU: the metric names, `# HELP` and `# TYPE` lines of
// its etc/default-counters.csv and the label names, in the order its text template writes them
// (gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID,] Hostname or hostname,
// DCGM_FI_DRIVER_VERSION, then in Kubernetes mode container, namespace, pod). The sources each
// detail was taken from are quoted beside it in format.go.
//
// A test serves what a set of GPUs is doing and points a real Prometheus (test/promtest) at it:
//
//	gpus := dcgmtest.ForPods(pods) // the GPUs the kwok pods holding nvidia.com/gpu were given
//	gpus[0].Util, gpus[0].MemUsedMiB = 87, 40960
//	e, err := dcgmtest.Start(dcgmtest.Plain, gpus)
//	if err != nil { ... }
//	defer e.Close()
//	// scrape e.Addr (http://e.Addr/metrics); e.Set(gpus) changes what is served
//
// [OpenMetrics] writes hours of history in the OpenMetrics text format that
// `promtool tsdb create-blocks-from openmetrics` backfills, so that "idle for 2 h" is testable
// in seconds.
package dcgmtest
