package dcgmtest

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"sort"
	"strings"
)

// Where the format comes from (NVIDIA/dcgm-exporter):
//   - the families and their HELP and TYPE: etc/default-counters.csv at tag 4.5.3-4.8.2
//     (commit 691c92762eb551313c825f6efe4ceeee20982801), lines "DCGM FIELD, Prometheus metric
//     type, help message", the help trimmed of spaces;
//   - the sample lines: internal/pkg/rendermetrics/render_metrics.go, gpuMetricsFormat, at the
//     same tag: `{{- range $counter, $metrics := . -}}` over the counters (text/template visits
//     a map's keys sorted, and a counter's first field is its DCGM field id, so the families
//     come in field-id order), HELP and TYPE, then per metric
//     gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID,] Hostname, then its
//     Labels (the "label" counters such as DCGM_FI_DRIVER_VERSION) sorted, then its Attributes
//     (container, namespace, pod from the Kubernetes pod mapper, err_code and err_msg on
//     DCGM_FI_DEV_XID_ERRORS) sorted; no blank line between families;
//   - Hostname became hostname in commit d5e5f510a1b6b393f39a43293ccd9dc985defc79 ("Rename
//     Hostname label to hostname (#655)", 2026-05-12, after 4.5.3-4.8.2): [Lowercase];
//   - values: internal/pkg/collector/gpu_collector.go toString, "%d" for DCGM's int64 fields
//     (GPU_UTIL, FB_FREE, FB_USED, XID_ERRORS), "%f" for its doubles (POWER_USAGE,
//     PROF_GR_ENGINE_ACTIVE); err_code and err_msg from toMetric and xid_errors.go
//     (xidErrCodeToText, 0 is "No Error");
//   - the Kubernetes labels: internal/pkg/transformation/kubernetes.go and const.go, which add
//     pod, namespace and container only to the metrics of a GPU a pod holds (a free GPU's
//     series have none of them);
//   - the order and spelling checked against real scrapes quoted in its issues: #512
//     (2025-08-19, H100 with MIG: ...,modelName,GPU_I_PROFILE,GPU_I_ID,Hostname,
//     DCGM_FI_DRIVER_VERSION,container,namespace,pod) and #363 (2024-07, without pci_bus_id,
//     which version 3.3.7-3.5.0 added); testdata/scrape.txt follows them.

// A family is one metric dcgm-exporter serves, as default-counters.csv declares it.
type family struct {
	fieldID int    // DCGM's field id, which orders the families
	name    string // the DCGM field name, which is the metric name
	typ     string
	help    string
	// value is the sample of g, formatted as dcgm-exporter formats that DCGM field type; ok
	// is false where dcgm-exporter serves no series of this family for g.
	value func(g GPU) (v string, ok bool)
}

// The metric names served.
const (
	MetricGPUUtil      = "DCGM_FI_DEV_GPU_UTIL"
	MetricEngineActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	MetricFBUsed       = "DCGM_FI_DEV_FB_USED"
	MetricFBFree       = "DCGM_FI_DEV_FB_FREE"
	MetricPowerUsage   = "DCGM_FI_DEV_POWER_USAGE"
	MetricXIDErrors    = "DCGM_FI_DEV_XID_ERRORS"
)

// DriverVersion is the DCGM_FI_DRIVER_VERSION label every series carries (default-counters.csv
// declares the field as a "label").
const DriverVersion = "550.127.05"

// families lists the served metrics in the order dcgm-exporter writes them: by DCGM field id
// (dcgm_fields.h: POWER_USAGE 155, GPU_UTIL 203, XID_ERRORS 230, FB_FREE 251, FB_USED 252,
// PROF_GR_ENGINE_ACTIVE 1001). A MIG instance has only the per-instance fields: engine activity
// and framebuffer; GPU_UTIL, power and XIDs are the whole GPU's.
var families = []family{
	{155, MetricPowerUsage, "gauge", "Power draw (in W).", whole(func(g GPU) string { return double(g.PowerW) })},
	{203, MetricGPUUtil, "gauge", "GPU utilization (in %).", whole(func(g GPU) string { return int64Field(g.Util) })},
	{230, MetricXIDErrors, "gauge", "Value of the last XID error encountered.", whole(func(g GPU) string { return int64Field(g.XID) })},
	{251, MetricFBFree, "gauge", "Framebuffer memory free (in MiB).", always(func(g GPU) string { return int64Field(g.MemTotalMiB - g.MemUsedMiB) })},
	{252, MetricFBUsed, "gauge", "Framebuffer memory used (in MiB).", always(func(g GPU) string { return int64Field(g.MemUsedMiB) })},
	{1001, MetricEngineActive, "gauge", "Ratio of time the graphics engine is active.", always(func(g GPU) string { return double(g.Util / 100) })},
}

// whole is a family served for whole GPUs only, not for MIG instances.
func whole(f func(GPU) string) func(GPU) (string, bool) {
	return func(g GPU) (string, bool) { return f(g), !g.MIG }
}

// always is a family served for every GPU and MIG instance.
func always(f func(GPU) string) func(GPU) (string, bool) {
	return func(g GPU) (string, bool) { return f(g), true }
}

// int64Field formats v as dcgm-exporter formats an int64 DCGM field ("%d"), rounded.
func int64Field(v float64) string { return fmt.Sprintf("%d", int64(math.Round(v))) }

// double formats v as dcgm-exporter formats a double DCGM field ("%f").
func double(v float64) string { return fmt.Sprintf("%f", v) }

// xidText is dcgm-exporter's err_msg for an XID (internal/pkg/collector/xid_errors.go); only the
// codes tests use are listed, the others read as its unknownErr.
var xidText = map[int64]string{0: "No Error", 13: "Graphics Engine Exception", 31: "GPU memory page fault", 79: "GPU has fallen off the bus"}

// label is one name="value" pair.
type label struct{ name, value string }

// labels returns the labels of g's series of family f, in the order dcgm-exporter writes them.
func labels(style LabelStyle, f family, g GPU) []label {
	ls := []label{
		{"gpu", fmt.Sprint(g.Index)},
		{"UUID", g.UUID},
		{"pci_bus_id", pciBusID(g.Index)},
		{"device", fmt.Sprintf("nvidia%d", g.Index)},
		{"modelName", g.Model},
	}
	if g.MIG {
		ls = append(ls, label{"GPU_I_PROFILE", g.migProfile()}, label{"GPU_I_ID", fmt.Sprint(g.MIGInstance)})
	}
	host := "Hostname"
	if style == Lowercase {
		host = "hostname"
	}
	if g.Node != "" {
		ls = append(ls, label{host, g.Node})
	}
	ls = append(ls, label{"DCGM_FI_DRIVER_VERSION", DriverVersion})

	var attrs []label // sorted by name below, as text/template ranges over the Attributes map
	if f.name == MetricXIDErrors {
		code := int64(math.Round(g.XID))
		msg, ok := xidText[code]
		if !ok {
			msg = "Unknown Error"
		}
		attrs = append(attrs, label{"err_code", fmt.Sprint(code)}, label{"err_msg", msg})
	}
	prefix := ""
	if style == Exported {
		// Behind kube-prometheus-stack's ServiceMonitor, Prometheus attaches the exporter
		// target's own namespace, pod, container, service and endpoint, and renames the
		// exporter's clashing labels to exported_*.
		prefix = "exported_"
		attrs = append(attrs,
			label{"namespace", ExporterNamespace}, label{"pod", exporterPod(g.Node)},
			label{"container", "nvidia-dcgm-exporter"}, label{"service", "nvidia-dcgm-exporter"},
			label{"endpoint", "gpu-metrics"})
	}
	if g.Pod != "" {
		attrs = append(attrs, label{prefix + "namespace", g.Namespace}, label{prefix + "pod", g.Pod},
			label{prefix + "container", g.Container})
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].name < attrs[j].name })
	return append(ls, attrs...)
}

// ExporterNamespace is the namespace of the dcgm-exporter pods in [Exported] style (the GPU
// Operator's).
const ExporterNamespace = "gpu-operator"

// exporterPod is the name of the DaemonSet pod of dcgm-exporter on node.
func exporterPod(node string) string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	h := fnv.New32a()
	io.WriteString(h, node)
	n := h.Sum32()
	var b strings.Builder
	for range 5 {
		b.WriteByte(letters[n%uint32(len(letters))])
		n /= uint32(len(letters))
	}
	return "nvidia-dcgm-exporter-" + b.String()
}

// pciBusID is the PCI bus id of the GPU at index i, in NVML's form.
func pciBusID(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x18+i*0x10) }

// writeSeries writes one sample line; ts is a suffix (" 1700000000.000" for OpenMetrics) or "".
func writeSeries(w *strings.Builder, name string, ls []label, value, ts string) {
	w.WriteString(name)
	w.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(l.name)
		w.WriteString(`="`)
		w.WriteString(escape(l.value))
		w.WriteByte('"')
	}
	w.WriteString("} ")
	w.WriteString(value)
	w.WriteString(ts)
	w.WriteByte('\n')
}

// escape escapes a label value as the exposition format needs (dcgm-exporter writes values raw;
// Kubernetes names and GPU models hold none of these characters).
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// writeHeader writes a family's HELP and TYPE lines.
func writeHeader(w *strings.Builder, f family) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
}

// exposition renders gpus as dcgm-exporter's /metrics does.
func exposition(style LabelStyle, gpus []GPU) []byte {
	var w strings.Builder
	for _, f := range families {
		header := false
		for _, g := range gpus {
			v, ok := f.value(g)
			if !ok {
				continue
			}
			if !header { // dcgm-exporter writes no family without series
				writeHeader(&w, f)
				header = true
			}
			writeSeries(&w, f.name, labels(style, f, g), v, "")
		}
	}
	return []byte(w.String())
}
