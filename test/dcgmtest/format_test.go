package dcgmtest

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeGPUs are the GPUs of testdata/scrape.txt: a whole GPU a pod holds, a free one, a MIG
// instance a pod holds and a free one.
var scrapeGPUs = []GPU{
	{Node: "gpu-node-17", Index: 0, UUID: "GPU-0", Model: DefaultModel, Namespace: "ml-research", Pod: "llama-ft-worker-0", Container: "trainer", Util: 61, MemUsedMiB: 41372, MemTotalMiB: 81559, PowerW: 231.448},
	{Node: "gpu-node-17", Index: 1, UUID: "GPU-1", Model: DefaultModel},
	{Node: "gpu-node-17", Index: 2, UUID: "GPU-2", Model: DefaultModel, Namespace: "inference", Pod: "embedder-5d8f7c9b4-x2kqp", Container: "server", MIG: true, MIGInstance: 7},
	{Node: "gpu-node-17", Index: 2, UUID: "GPU-2", Model: DefaultModel, MIG: true, MIGInstance: 8},
}

// shape is what the format test compares of an exposition: per family in order, its TYPE, HELP
// and the distinct label-name sequences of its series.
type shape struct {
	name, typ, help string
	labelSets       []string
}

// shapeOf parses an exposition with expfmt (failing the test on a syntax error) and returns its
// shape; the family order is that of its TYPE lines.
func shapeOf(t *testing.T, text []byte) []shape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt cannot parse the exposition: %v\n%s", err, text)
	}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "# TYPE "); ok {
			order = append(order, strings.Fields(rest)[0])
		}
	}
	var out []shape
	for _, name := range order {
		mf := fams[name]
		s := shape{name: name, typ: strings.ToLower(mf.GetType().String()), help: mf.GetHelp()}
		for _, m := range mf.GetMetric() {
			if set := labelNames(m); !slices.Contains(s.labelSets, set) {
				s.labelSets = append(s.labelSets, set)
			}
		}
		slices.Sort(s.labelSets)
		out = append(out, s)
	}
	return out
}

// labelNames is the comma-separated label names of m, in the order written.
func labelNames(m *dto.Metric) string {
	var names []string
	for _, l := range m.GetLabel() {
		names = append(names, l.GetName())
	}
	return strings.Join(names, ",")
}

// TestExpositionMatchesRealScrape: what the Exporter serves has the metric families of a real
// dcgm-exporter scrape in its order, with its TYPE and HELP lines and the same label names in
// the same order for each kind of GPU (whole or MIG, held by a pod or free).
func TestExpositionMatchesRealScrape(t *testing.T) {
	real, err := os.ReadFile("testdata/scrape.txt")
	if err != nil {
		t.Fatal(err)
	}
	e, err := Start(Plain, scrapeGPUs)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	resp, err := http.Get(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	served, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", e.URL, resp.StatusCode, err)
	}
	if !bytes.Equal(served, e.Text()) {
		t.Errorf("GET /metrics served other bytes than Text()")
	}
	want, got := shapeOf(t, real), shapeOf(t, served)
	if len(got) != len(want) {
		t.Fatalf("%d families served, the real scrape has %d:\n%s", len(got), len(want), served)
	}
	for i := range want {
		if !slices.Equal(got[i].labelSets, want[i].labelSets) || got[i].name != want[i].name ||
			got[i].typ != want[i].typ || got[i].help != want[i].help {
			t.Errorf("family %d:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
}

// TestExpositionValues: the sample lines carry the GPUs' values as dcgm-exporter formats them
// (integers for DCGM's int64 fields, %f for its doubles; ENGINE_ACTIVE a ratio), FB_FREE is total
// minus used, and a MIG instance has no GPU_UTIL series.
func TestExpositionValues(t *testing.T) {
	g := GPU{Node: "n1", Index: 3, UUID: "GPU-x", Model: DefaultModel, Namespace: "team-a", Pod: "p", Container: "c",
		Util: 87.4, MemUsedMiB: 1000, MemTotalMiB: 81559, PowerW: 300.5, XID: 79}
	mig := GPU{Node: "n1", Index: 4, UUID: "GPU-y", Model: DefaultModel, MIG: true, MIGProfile: "3g.40gb", MIGInstance: 2, Util: 50}
	text := string(exposition(Plain, []GPU{g, mig}))
	for _, want := range []string{
		`DCGM_FI_DEV_GPU_UTIL{gpu="3",UUID="GPU-x",pci_bus_id="00000000:48:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.127.05",container="c",namespace="team-a",pod="p"} 87` + "\n",
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="3",UUID="GPU-x",` + "",
		`pod="p"} 0.874000` + "\n",
		`DCGM_FI_DEV_FB_FREE{gpu="3",UUID="GPU-x",pci_bus_id="00000000:48:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.127.05",container="c",namespace="team-a",pod="p"} 80559` + "\n",
		`DCGM_FI_DEV_POWER_USAGE{gpu="3",UUID="GPU-x",pci_bus_id="00000000:48:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.127.05",container="c",namespace="team-a",pod="p"} 300.500000` + "\n",
		`DCGM_FI_DEV_XID_ERRORS{gpu="3",UUID="GPU-x",pci_bus_id="00000000:48:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.127.05",container="c",err_code="79",err_msg="GPU has fallen off the bus",namespace="team-a",pod="p"} 79` + "\n",
		`DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="4",UUID="GPU-y",pci_bus_id="00000000:58:00.0",device="nvidia4",modelName="NVIDIA H100 80GB HBM3",GPU_I_PROFILE="3g.40gb",GPU_I_ID="2",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.127.05"} 0.500000` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, `DCGM_FI_DEV_GPU_UTIL{gpu="4"`) {
		t.Errorf("a MIG instance has a GPU_UTIL series:\n%s", text)
	}
}

// TestLabelStyles: Lowercase writes hostname; Exported writes the holder as exported_* beside
// the exporter pod's own namespace and pod, and a free GPU only the exporter's.
func TestLabelStyles(t *testing.T) {
	held := GPU{Node: "n1", UUID: "GPU-a", Model: DefaultModel, Namespace: "team-a", Pod: "p", Container: "c"}
	free := GPU{Node: "n1", Index: 1, UUID: "GPU-b", Model: DefaultModel}
	lower := string(exposition(Lowercase, []GPU{held}))
	if !strings.Contains(lower, `,hostname="n1",`) || strings.Contains(lower, "Hostname") {
		t.Errorf("Lowercase:\n%s", lower)
	}
	exported := string(exposition(Exported, []GPU{held, free}))
	pod := exporterPod("n1")
	wantHeld := `DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.127.05",container="nvidia-dcgm-exporter",endpoint="gpu-metrics",exported_container="c",exported_namespace="team-a",exported_pod="p",namespace="gpu-operator",pod="` + pod + `",service="nvidia-dcgm-exporter"} 0` + "\n"
	wantFree := `DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",pci_bus_id="00000000:28:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",DCGM_FI_DRIVER_VERSION="550.127.05",container="nvidia-dcgm-exporter",endpoint="gpu-metrics",namespace="gpu-operator",pod="` + pod + `",service="nvidia-dcgm-exporter"} 0` + "\n"
	for _, want := range []string{wantHeld, wantFree} {
		if !strings.Contains(exported, want) {
			t.Errorf("Exported lacks %q:\n%s", want, exported)
		}
	}
	if !strings.HasPrefix(pod, "nvidia-dcgm-exporter-") || len(pod) != len("nvidia-dcgm-exporter-")+5 || exporterPod("n2") == pod {
		t.Errorf("exporter pod names: %q, %q", pod, exporterPod("n2"))
	}
}

// TestSetReplacesServed: Set changes what the next GET returns.
func TestSetReplacesServed(t *testing.T) {
	e, err := Start(Plain, []GPU{{Node: "n", UUID: "GPU-a", Util: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.Set([]GPU{{Node: "n", UUID: "GPU-a", Util: 90}})
	resp, err := http.Get(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `DCGM_FI_DRIVER_VERSION="550.127.05"} 90`+"\n") {
		t.Errorf("after Set(90 %%):\n%s", body)
	}
}

// TestOpenMetrics: every step from from to to is a sample with a millisecond timestamp, the
// values come from the Sample function, each family's series are together, and it ends in
// # EOF. (test/promtest backfills it into a real Prometheus.)
func TestOpenMetrics(t *testing.T) {
	from := time.Unix(1_700_000_000, 0)
	gpus := []GPU{{Node: "n", Index: 0, UUID: "GPU-a", Model: DefaultModel, Pod: "p", Namespace: "ns", Container: "c"}}
	burst := func(g GPU, t time.Time) GPU {
		if t.Sub(from) >= 2*time.Minute {
			g.Util = 100
		}
		return g
	}
	text := string(OpenMetrics(Plain, gpus, from, from.Add(3*time.Minute), time.Minute, burst))
	if !strings.HasSuffix(text, "\n# EOF\n") {
		t.Errorf("does not end with # EOF:\n%s", text)
	}
	var util []string
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, MetricGPUUtil+"{") {
			util = append(util, line[strings.Index(line, "} ")+2:])
		}
	}
	want := []string{"0 1700000000.000\n", "0 1700000060.000\n", "100 1700000120.000\n", "100 1700000180.000\n"}
	if !slices.Equal(util, want) {
		t.Errorf("GPU_UTIL samples %q, want %q", util, want)
	}
	if n := strings.Count(text, "# TYPE "); n != len(families) {
		t.Errorf("%d TYPE lines, want %d (one per family, its samples together)", n, len(families))
	}
}
