package httpapi

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpuctl/gpuctl/test/clusterfixture"
)

// svgOf is the inline SVG of that id in a page.
func svgOf(t *testing.T, body, id string) string {
	t.Helper()
	svg := regexp.MustCompile(`(?s)<svg id="` + regexp.QuoteMeta(id) + `".*?</svg>`).FindString(body)
	if svg == "" {
		t.Fatalf("no <svg id=%q> in the page:\n%s", id, body)
	}
	return svg
}

// polylines are the points of each polyline of an SVG, as [x, y] pairs.
func polylines(t *testing.T, svg string) [][][2]float64 {
	t.Helper()
	var out [][][2]float64
	for _, m := range regexp.MustCompile(`<polyline class="line" points="([^"]*)"`).FindAllStringSubmatch(svg, -1) {
		var line [][2]float64
		for pair := range strings.FieldsSeq(m[1]) {
			xs, ys, _ := strings.Cut(pair, ",")
			x, errX := strconv.ParseFloat(xs, 64)
			y, errY := strconv.ParseFloat(ys, 64)
			if errX != nil || errY != nil {
				t.Fatalf("point %q", pair)
			}
			line = append(line, [2]float64{x, y})
		}
		out = append(out, line)
	}
	return out
}

func TestChartOfAJob(t *testing.T) {
	h := usageServer(t, sftStub(t).client(t))
	body := jobPage(t, h, "/jobs/alice.sft", http.StatusOK)
	util := svgOf(t, body, "usage-util")
	if !strings.Contains(util, "<title>GPU utilization of alice.sft, %</title>") || !strings.Contains(util, `>100%</text>`) ||
		!strings.Contains(util, `>0%</text>`) || !strings.Contains(util, `>now</text>`) {
		t.Errorf("the utilization chart lacks its title or its axes' labels:\n%s", util)
	}
	lines := polylines(t, util)
	if len(lines) != 1 || len(lines[0]) != 3 {
		t.Fatalf("utilization polylines %v, want one of the 3 served points", lines)
	}
	// Served 0, 50, 100 %: the bottom, the middle and the top of the plot, from its left edge.
	b := jobChartBox
	bottom := b.height - b.bottom
	if p := lines[0]; p[0] != [2]float64{b.left, bottom} || p[1][1] != (b.top+bottom)/2 || p[2][1] != b.top || !(p[2][0] > p[1][0] && p[1][0] > p[0][0]) {
		t.Errorf("points %v: want 0 %% at (%v, %v), 50 %% at y %v, 100 %% at y %v (the top)", p, b.left, bottom, (b.top+bottom)/2, b.top)
	}
	if !strings.Contains(body, "min 0% · avg 50% · max 100% · now 100%") {
		t.Error("the legend lacks the line's min, avg, max and now")
	}
	mem := svgOf(t, body, "usage-memory")
	if ml := polylines(t, mem); len(ml) != 1 || len(ml[0]) != 3 || !strings.Contains(mem, ">100 GiB</text>") {
		t.Errorf("memory chart (68 GiB at most, so up to 100 GiB): %v\n%s", ml, mem)
	}
}

func TestChartPerPodEscapesNames(t *testing.T) {
	hostile := `sft-<script>alert(1)</script>`
	p := sftStub(t)
	p.util[hostile], p.memMiB[hostile] = []float64{100, 100}, []float64{1024, 2048}
	h := usageServer(t, p.client(t), append(clusterfixture.Objects(), startedPod(hostile))...)
	body := jobPage(t, h, "/jobs/alice.sft", http.StatusOK)
	util := svgOf(t, body, "usage-util")
	lines := polylines(t, util)
	if len(lines) != 2 || len(lines[0]) != 2 || len(lines[1]) != 3 {
		t.Fatalf("polylines %v, want one per pod by name: the hostile one's 2 points, then sft-abcde's 3", lines)
	}
	if strings.Contains(body, "<script>") || !strings.Contains(util, `data-name="sft-&lt;script&gt;alert(1)&lt;/script&gt;"`) ||
		!strings.Contains(util, "<title>sft-&lt;script&gt;alert(1)&lt;/script&gt;: ") {
		t.Errorf("the pod's name is not escaped in the chart:\n%s", util)
	}
}

func TestChartsOfPoolsAreReadOncePerTTL(t *testing.T) {
	p := newPromStub(t)
	p.nodeUtil["gpu-1"] = []float64{100, 50} // training-pool: gpu-1 and gpu-2
	p.nodeUtil["gpu-2"] = []float64{50}
	p.nodeUtil["elsewhere"] = []float64{0}
	h := usageServer(t, p.client(t))
	var wg sync.WaitGroup
	bodies := make([]string, 20)
	for i := range bodies {
		wg.Go(func() {
			w := getPage(t, h, "/", "Basic "+basic("anyone", []string{userToken, teamToken, adminToken}[i%3]))
			if w.Code == http.StatusOK {
				bodies[i] = w.Body.String()
			}
		})
	}
	wg.Wait()
	if n := p.rangeQueries("gpuctl_agg"); n != 1 || p.count() != 1 {
		t.Errorf("20 readers made %d pool queries (%d in all), want 1", n, p.count())
	}
	for i, b := range bodies {
		if b == "" {
			t.Fatalf("reader %d got no page", i)
		}
	}
	var charted []string
	for _, m := range regexp.MustCompile(`<svg id="pool-usage-\d+"[^>]*><title>GPU utilization of pool ([^,]*),`).FindAllStringSubmatch(bodies[0], -1) {
		charted = append(charted, m[1])
	}
	if strings.Join(charted, " ") != "default training-pool" {
		t.Errorf("pools charted: %v", charted)
	}
	// training-pool: the average of its three GPUs, 200/3 %.
	svg := svgOf(t, bodies[0], "pool-usage-1")
	if lines := polylines(t, svg); len(lines) != 1 || len(lines[0]) < 100 || !strings.Contains(svg, "now 66.7%") {
		t.Errorf("training-pool's chart: %d lines, want one of every step of 6 h at 66.7 %%:\n%.600s", len(lines), svg)
	}
}
