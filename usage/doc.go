// Package usage reads what GPUs do from Prometheus, where NVIDIA's dcgm-exporter's series are
// scraped: utilization, GPU memory and power per GPU, joined to gpuctl's jobs, nodes and pools.
// gpuctl queries; it does not collect. The CLI's top, idle and describe, and the daemon's
// /api/v1/jobs/{id}/metrics, web page, idle policy and gpuctl_team_gpus read it.
//
//	c, err := usage.New(usage.Options{URL: "http://prometheus.monitoring:9090"})
//	if err != nil {
//		return err // errors.Is(err, usage.ErrNoPrometheus) when URL is ""
//	}
//	gpus, err := c.GPUs(ctx, usage.Scope{Namespaces: []string{"alice"}}, 5*time.Minute)
//	jobs := usage.TopJobs(rows.UsagePods(), gpus, usage.DefaultIdleThreshold) // rows: cluster.Reader.JobPods
//
// # Series and labels
//
// A GPU's utilization is DCGM_FI_DEV_GPU_UTIL (0–100), or DCGM_FI_PROF_GR_ENGINE_ACTIVE × 100
// where the first is absent (MIG instances report only the second, as a ratio). GPU memory is
// DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE (MiB), power DCGM_FI_DEV_POWER_USAGE (W).
// dcgm-exporter names the pod that holds a GPU with the labels namespace, pod and container
// (its Kubernetes mode); behind kube-prometheus-stack's ServiceMonitor Prometheus keeps the
// exporter's own pod in those and renames them exported_namespace, exported_pod and
// exported_container. The node is Hostname (older exporters) or hostname. Every form is read;
// an exported_ label wins over the plain one.
//
// # Idle
//
// A GPU is idle while its utilization stays below a threshold (DefaultIdleThreshold). A job is
// idle at a moment when all of its GPUs are; the audit reports a job's longest idle run and the
// run going on now, not an average, which hides an idle tail behind a busy start.
package usage
