package dcgmtest

import (
	"net"
	"net/http"
	"slices"
	"sync"
)

// GPU is one GPU, or one MIG instance of a GPU, as dcgm-exporter reports it.
type GPU struct {
	Node  string // the node's name, which dcgm-exporter writes as Hostname (hostname)
	Index int    // the GPU's index on its node (labels gpu and device="nvidia<Index>")
	UUID  string // "GPU-…"
	Model string // e.g. "NVIDIA H100 80GB HBM3"
	// Namespace, Pod and Container name the pod's container the GPU is allocated to; Pod is ""
	// for a GPU no pod holds, whose series then carry none of the three labels, as
	// dcgm-exporter's pod mapper adds them only to allocated GPUs.
	Namespace, Pod, Container string
	Util                      float64 // utilization, 0-100 (DCGM_FI_PROF_GR_ENGINE_ACTIVE is Util/100)
	MemUsedMiB, MemTotalMiB   float64 // DCGM_FI_DEV_FB_FREE is MemTotalMiB - MemUsedMiB
	PowerW                    float64
	XID                       float64 // the last XID error, 0 for none
	// MIG marks a MIG instance: it has no DCGM_FI_DEV_GPU_UTIL, power or XID series, only
	// DCGM_FI_PROF_GR_ENGINE_ACTIVE and the framebuffer, labelled with GPU_I_PROFILE (MIGProfile,
	// "1g.10gb" when empty) and GPU_I_ID (MIGInstance).
	MIG         bool
	MIGProfile  string
	MIGInstance int
}

// migProfile is the GPU_I_PROFILE label of a MIG instance.
func (g GPU) migProfile() string {
	if g.MIGProfile == "" {
		return "1g.10gb"
	}
	return g.MIGProfile
}

// LabelStyle is the spelling of the labels the series carry.
type LabelStyle int

const (
	// Plain is dcgm-exporter up to 4.5.3-4.8.2 in Kubernetes mode: Hostname, and namespace,
	// pod and container of the pod that holds the GPU.
	Plain LabelStyle = iota
	// Lowercase is dcgm-exporter after commit d5e5f51 (#655): hostname instead of Hostname.
	Lowercase
	// Exported is what Prometheus stores behind kube-prometheus-stack's ServiceMonitor: the
	// exporter pod's own namespace (gpu-operator), pod, container, service and endpoint, and
	// the holder's as exported_namespace, exported_pod and exported_container. Served as such,
	// so that a Prometheus scraping it stores the same series.
	Exported
)

// Exporter serves /metrics like dcgm-exporter on a loopback port.
type Exporter struct {
	URL  string // http://127.0.0.1:PORT/metrics
	Addr string // 127.0.0.1:PORT, the scrape target

	style LabelStyle
	srv   *http.Server
	mu    sync.Mutex
	gpus  []GPU
}

// Start serves gpus in style on a free port of 127.0.0.1 until Close.
func Start(style LabelStyle, gpus []GPU) (*Exporter, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &Exporter{Addr: l.Addr().String(), style: style, gpus: slices.Clone(gpus)}
	e.URL = "http://" + e.Addr + "/metrics"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		// The headers of dcgm-exporter's MetricsServer.Metrics (internal/pkg/server/server.go at
		// 4.5.3-4.8.2): nosniff and no Content-Type of its own.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Write(e.Text())
	})
	e.srv = &http.Server{Handler: mux}
	go e.srv.Serve(l)
	return e, nil
}

// Set replaces the GPUs served; the next scrape sees them.
func (e *Exporter) Set(gpus []GPU) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gpus = slices.Clone(gpus)
}

// GPUs returns the GPUs served now.
func (e *Exporter) GPUs() []GPU {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.gpus)
}

// Text returns the exposition served now.
func (e *Exporter) Text() []byte { return exposition(e.style, e.GPUs()) }

// Close stops serving.
func (e *Exporter) Close() { e.srv.Close() }
