package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	corev1 "k8s.io/api/core/v1"
)

// TestPageInBrowser opens the web page in headless Chromium (Debian's chromium, installed by
// `make chromium`): it checks the page as the browser built it, then saves a full-page
// screenshot to $GPUCTL_ARTIFACTS/ui.png or <repo>/_artifacts/ui.png; then it follows the link
// of a job to its page, whose pod and event carry markup that must stay text, and saves that
// page to ui-job.png.
func TestPageInBrowser(t *testing.T) {
	chromium := os.Getenv("GPUCTL_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("no chromium for the browser test of the web page (%v): run `make chromium` "+
			"(hack/chromium.sh installs Debian's chromium), or set GPUCTL_CHROMIUM", err)
	}

	now := time.Now()
	hostilePod := startedPod(`sft-<img src=x onerror=alert(1)>`)
	hostilePod.Spec.NodeName = ""
	hostilePod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	hostileMsg := `<script>document.title="pwned"</script></td><b>bold</b>`
	// Prometheus serves 5 points of sft-run and 2 of the hostile pod, and 6 h of gpu-1.
	prom := newPromStub(t)
	prom.util["sft-run"], prom.memMiB["sft-run"] = []float64{0, 25, 50, 75, 100}, []float64{1024, 2048, 4096, 8192, 16384}
	prom.util[hostilePod.Name], prom.memMiB[hostilePod.Name] = []float64{10, 20}, []float64{512, 512}
	prom.nodeUtil["gpu-1"] = []float64{80, 40}
	h, b := testServerWith(t, func(o *Options) { o.Usage = prom.client(t) }, append(clusterfixture.Objects(), startedPod("sft-run"), hostilePod,
		podEvent("e1", hostilePod.Name, "BackOff", hostileMsg, now.Add(-time.Minute)))...)
	b.drift, b.hist = testDrift(now)
	b.status.AppliedRevision = "main@4f9c2a71d0e8b3c5a6f7e8d9c0b1a2f3e4d5c6b7"
	b.status.Revision = b.status.AppliedRevision
	b.status.LastAttempt, b.status.LastSuccess = now.Add(-37*time.Second), now.Add(-2*time.Minute)
	b.status.Duration = 312475106 * time.Nanosecond
	b.drift.Revision = "main@4f9c2a71d0e8b3c5a6f7e8d9c0b1a2f3e4d5c6b7"
	b.status.Summary = "12 unchanged, 1 to update"
	b.status.Mode = "report"
	srv := httptest.NewServer(h)
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	// Start the browser before the deadline: a timeout on the first Run would stop it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	// Collect what the page writes to the console: errors, exceptions and browser log
	// entries (a refused stylesheet, a failed request).
	var (
		mu      sync.Mutex
		console []string
	)
	consoleCtx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(consoleCtx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				console = append(console, m.String())
				mu.Unlock()
			}
		}
	}()

	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("viewer:"+userToken))
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders,
		network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatalf("set the Authorization header: %v", err)
	}
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(srv.URL+"/"))
	if err != nil {
		t.Fatalf("open the page: %v", err)
	}
	if resp.Status != 200 {
		t.Fatalf("GET /: status %d", resp.Status)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#drift-items"), chromedp.WaitVisible("#quota-chart")); err != nil {
		t.Fatalf("wait for the page: %v", err)
	}

	// The drift table, as the browser laid it out.
	type row struct {
		Category, Object, Who string
		Fields                []string
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll("#drift-items tbody tr")].map(tr => ({
		Category: tr.querySelector(".badge").textContent.trim(),
		Object: tr.querySelector(".object").textContent.trim(),
		Who: tr.querySelector(".who").innerText.trim(),
		Fields: [...tr.querySelectorAll(".fields li")].map(li => li.innerText.trim()),
	}))`))
	if err != nil {
		t.Fatalf("read the drift table: %v", err)
	}
	if len(rows) != len(b.drift.Items) {
		t.Fatalf("drift table has %d rows, want %d: %+v", len(rows), len(b.drift.Items), rows)
	}
	for i, it := range b.drift.Items {
		r := rows[i]
		if r.Category != string(it.Category) || r.Object != it.Object.String() || !strings.HasPrefix(r.Who, it.Manager) ||
			len(r.Fields) != len(it.Fields) {
			t.Errorf("drift row %d: %+v, want %s %s by %s with %d fields", i, r, it.Category, it.Object,
				it.Manager, len(it.Fields))
		}
	}
	if rows[0].Category != string(drift.Modified) || rows[0].Fields[0] != "spec.replicas: 3 (Git: 2)" {
		t.Errorf("first row %+v", rows[0])
	}
	history, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#drift-history tbody tr").length`))
	if err != nil || history != 4 {
		t.Errorf("history rows: %d, %v; want 4", history, err)
	}

	// The bars of the quota chart: widths from the rects' attributes and as drawn.
	type svgBar struct {
		Name              string
		Used, Limit       float64
		Track, Bar        float64
		DrawnTrack, Drawn float64
		Label, Fill       string
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[[]svgBar](`[...document.querySelectorAll("#quota-chart g.row")].map(g => {
		const track = g.querySelector("rect.track"), bar = g.querySelector("rect.bar");
		return {
			Name: g.dataset.name, Used: +g.dataset.used, Limit: +g.dataset.limit,
			Track: +track.getAttribute("width"), Bar: +bar.getAttribute("width"),
			DrawnTrack: track.getBoundingClientRect().width, Drawn: bar.getBoundingClientRect().width,
			Label: g.querySelector("text.value").textContent, Fill: getComputedStyle(bar).fill,
		};
	})`))
	if err != nil {
		t.Fatalf("read the quota chart: %v", err)
	}
	want := []svgBar{{Name: "alice", Used: 4, Limit: 4, Label: "4 / 4 GPUs", Fill: "rgb(198, 40, 40)"},
		{Name: "bob", Used: 1, Limit: 2, Label: "1 / 2 GPUs", Fill: "rgb(47, 111, 222)"}}
	if len(bars) != len(want) {
		t.Fatalf("quota chart has %d bars, want %d: %+v", len(bars), len(want), bars)
	}
	for i, got := range bars {
		w := want[i]
		if got.Name != w.Name || got.Used != w.Used || got.Limit != w.Limit || got.Label != w.Label || got.Fill != w.Fill {
			t.Errorf("quota bar %d: %+v, want %+v", i, got, w)
		}
		frac := got.Used / got.Limit
		if got.Track <= 0 || math.Abs(got.Bar-frac*got.Track) > 0.01 {
			t.Errorf("quota bar %s: width %.2f of %.2f, want %.0f%%", got.Name, got.Bar, got.Track, 100*frac)
		}
		if got.DrawnTrack <= 0 || math.Abs(got.Drawn/got.DrawnTrack-frac) > 0.01 {
			t.Errorf("quota bar %s drawn %.1f px of %.1f px, want %.0f%%", got.Name, got.Drawn, got.DrawnTrack, 100*frac)
		}
	}
	// The pool without nodes and without use is not drawn; the note names it.
	pools, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#pool-chart g.row")].map(g => g.dataset.name)`))
	if err != nil || strings.Join(pools, ",") != "default,training-pool" {
		t.Errorf("pool chart rows: %v, %v; want default and training-pool", pools, err)
	}
	// The pools' utilization charts: default's GPUs report nothing, training-pool's 6 h of 60 %.
	type lineChart struct {
		Title  string
		Points []int
		Width  float64
	}
	poolLines, err := chromedp.Run(ctx, chromedp.Evaluate[[]lineChart](`[...document.querySelectorAll("#pool-usage svg")].map(svg => ({
		Title: svg.querySelector("title").textContent, Width: svg.getBoundingClientRect().width,
		Points: [...svg.querySelectorAll("polyline")].map(p => p.points.numberOfItems),
	}))`))
	if err != nil || len(poolLines) != 2 || poolLines[1].Title != "GPU utilization of pool training-pool, last 6 h, %" ||
		len(poolLines[1].Points) != 1 || poolLines[1].Points[0] != 121 || poolLines[0].Points[0] != 0 || poolLines[1].Width <= 0 {
		t.Errorf("pool usage charts %+v, %v: want default's empty and training-pool's 121 points (6 h at 3 m)", poolLines, err)
	}

	// What a person reads: rounded durations, ages as kubectl prints them, short revisions,
	// plurals.
	texts, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`({
		sync: document.querySelector("#sync").innerText,
		revision: document.querySelector("#drift-revision").innerText,
		revisionTitle: document.querySelector("#drift-revision").title,
		shadow: [...document.querySelectorAll("#drift-items .badge-bad")].map(b => b.innerText).join("|"),
		pools: document.querySelector("#pools").innerText,
		page: document.body.innerText,
	})`))
	if err != nil {
		t.Fatalf("read the page's text: %v", err)
	}
	for _, c := range []struct{ what, in, want string }{
		{"the sync's duration", texts["sync"], "took 312ms"},
		{"the applied revision", texts["sync"], "main@4f9c2a71d0e8"},
		{"the drift's revision", texts["revision"], "main@4f9c2a71d0e8"},
		{"the drift revision's title", texts["revisionTitle"], b.drift.Revision},
		{"the shadow's GPUs", texts["shadow"], "8 GPUs"},
		{"the pool note", texts["pools"], "1 pool without nodes not shown: inference-pool."},
	} {
		if !strings.Contains(c.in, c.want) {
			t.Errorf("%s: %q lacks %q", c.what, c.in, c.want)
		}
	}
	// 37 s before the page was asked for, plus the browser's start.
	if !regexp.MustCompile(`Last attempt\n\d\ds ago · took 312ms\n`).MatchString(texts["sync"]) {
		t.Errorf("the last attempt: %q, want an age in seconds and the rounded duration", texts["sync"])
	}
	for _, bad := range []string{"312.475106ms", "1 GPUs", "4f9c2a71d0e8b3c5a6f7e8d9c0b1a2f3e4d5c6b7", "0 / 0 GPUs"} {
		if strings.Contains(texts["page"], bad) {
			t.Errorf("the page shows %q", bad)
		}
	}
	// The inline stylesheet applied (the Content-Security-Policy allows it by its digest).
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil || bg != "rgb(244, 246, 249)" {
		t.Errorf("body background %q, %v: the stylesheet did not apply", bg, err)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	jobShot := checkJobPageInBrowser(t, ctx, hostilePod.Name, hostileMsg)
	stopConsole()
	<-consoleDone
	mu.Lock()
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	mu.Unlock()

	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is no PNG: %v", err)
	}
	size := img.Bounds().Size()
	if size.X < 800 || size.Y < 600 {
		t.Errorf("screenshot is %dx%d, want at least 800 px wide", size.X, size.Y)
	}
	if n := colours(img, 200); n < 200 {
		t.Errorf("screenshot has %d colours: a blank page?", n)
	}
	path, err := artifactPath("ui.png")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(shot)
	t.Logf("ui screenshot: %s (%dx%d, %d bytes, sha256 %s)", path, size.X, size.Y, len(shot), hex.EncodeToString(sum[:]))
	if path, err = artifactPath("ui-job.png"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, jobShot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("job page screenshot: %s", path)
}

// checkJobPageInBrowser clicks the link of alice.sft on the overview and checks its page as the
// browser built it: no script anywhere, the hostile pod name and event message shown as the
// text they are, the log lines; it returns the page's screenshot.
func checkJobPageInBrowser(t *testing.T, ctx context.Context, hostilePod, hostileMsg string) []byte {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(`a.job-link[href="/jobs/alice.sft"]`), chromedp.WaitVisible("#job-name")); err != nil {
		t.Fatalf("follow the job's link: %v", err)
	}
	type jobPage struct {
		URL, Title, Name, Status, Log string
		Scripts, Images, Bold         int
		Pods, Messages                []string
		ChartTitle                    string
		ChartLines                    []string
		MemoryLines                   int
		ChartHeight                   float64
	}
	p, err := chromedp.Run(ctx, chromedp.Evaluate[jobPage](`({
		URL: location.pathname, Title: document.title,
		Name: document.querySelector("#job-name").textContent,
		Status: document.querySelector("#job-status").textContent.trim(),
		Log: document.querySelector("#log-lines").textContent,
		Scripts: document.scripts.length, Images: document.images.length,
		Bold: document.querySelectorAll("#event-list b").length,
		Pods: [...document.querySelectorAll("#pod-list tbody tr td:first-child")].map(td => td.textContent),
		Messages: [...document.querySelectorAll("#event-list tbody tr td:last-child")].map(td => td.textContent),
		ChartTitle: document.querySelector("#usage-util title").textContent,
		ChartLines: [...document.querySelectorAll("#usage-util g.series")].map(g => g.dataset.name + ":" + g.querySelector("polyline").points.numberOfItems),
		MemoryLines: document.querySelectorAll("#usage-memory polyline").length,
		ChartHeight: document.querySelector("#usage-util").getBoundingClientRect().height,
	})`))
	if err != nil {
		t.Fatalf("read the job page: %v", err)
	}
	want := jobPage{URL: "/jobs/alice.sft", Title: "alice.sft · Running · gpuctl", Name: "sft", Status: "Running",
		Log: "[sft-run] fake logs\n", Pods: []string{hostilePod, "sft-abcde", "sft-run"}, Messages: []string{hostileMsg}}
	if p.URL != want.URL || p.Title != want.Title || p.Name != want.Name || p.Status != want.Status || p.Log != want.Log ||
		strings.Join(p.Pods, "|") != strings.Join(want.Pods, "|") || strings.Join(p.Messages, "|") != hostileMsg {
		t.Errorf("job page as built:\n got %+v\nwant %+v", p, want)
	}
	// The GPU usage charts: a line per pod with series, of the points Prometheus served, the
	// hostile name as text.
	if p.ChartTitle != "GPU utilization of alice.sft, %" || strings.Join(p.ChartLines, "|") != hostilePod+":2|sft-run:5" ||
		p.MemoryLines != 2 || p.ChartHeight < 100 {
		t.Errorf("usage chart as built: %q, lines %q, %d memory lines, %.0f px high; want a line of 2 points for %s and of 5 for sft-run",
			p.ChartTitle, p.ChartLines, p.MemoryLines, p.ChartHeight, hostilePod)
	}
	if p.Scripts != 0 || p.Images != 0 || p.Bold != 0 {
		t.Errorf("the job page's markup came from the cluster: %d scripts, %d images, %d bold", p.Scripts, p.Images, p.Bold)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of the job page: %v", err)
	}
	return shot
}

// colours counts the distinct colours of an image, up to limit.
func colours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, ca := img.At(x, y).RGBA()
			seen[[4]uint32{cr, cg, cb, ca}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// artifactPath is where a test artifact goes: $GPUCTL_ARTIFACTS (relative to the repository's
// root) or <repo>/_artifacts; the directory is created.
func artifactPath(name string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir := os.Getenv("GPUCTL_ARTIFACTS")
	if dir == "" {
		dir = "_artifacts"
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// repoRoot is the nearest directory above the working directory with a go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
