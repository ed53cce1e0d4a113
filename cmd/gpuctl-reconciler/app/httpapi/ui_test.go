package httpapi

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/prometheus/client_golang/prometheus"
)

// getPage GETs a path with an Authorization header ("" for none).
func getPage(t *testing.T, h http.Handler, path, authorization string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// okPage GETs the page with Basic authentication and wants a 200 HTML answer.
func okPage(t *testing.T, h http.Handler) string {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth("anyone", userToken)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /: code %d, body %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	return w.Body.String()
}

func TestPageAuthentication(t *testing.T) {
	h, _ := testServer(t)
	for name, auth := range map[string]string{
		"none":                 "",
		"wrong basic password": "Basic " + basic("alice", "nope"),
		"token as user name":   "Basic " + basic(userToken, ""),
		"wrong bearer":         "Bearer nope",
		"not base64":           "Basic !!!",
	} {
		for _, path := range []string{"/", "/index.html"} {
			w := getPage(t, h, path, auth)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s %s: code %d, want 401", name, path, w.Code)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != `Basic realm="gpuctl"` {
				t.Errorf("%s %s: WWW-Authenticate %q", name, path, got)
			}
			if strings.Contains(w.Body.String(), "<html") {
				t.Errorf("%s %s: 401 shows the page", name, path)
			}
		}
	}
	for name, auth := range map[string]string{
		"basic":            "Basic " + basic("whoever", userToken),
		"basic, no user":   "Basic " + basic("", adminToken),
		"bearer":           "Bearer " + userToken,
		"bearer lowercase": "bearer " + adminToken,
	} {
		for _, path := range []string{"/", "/index.html"} {
			if w := getPage(t, h, path, auth); w.Code != http.StatusOK {
				t.Errorf("%s %s: code %d, want 200; body %s", name, path, w.Code, w.Body)
			}
		}
	}
	// The API itself stays bearer-only, and paths outside /api other than the page stay 404s.
	w := getPage(t, h, "/api/v1/status", "Basic "+basic("alice", userToken))
	wantError(t, w, http.StatusUnauthorized)
	wantError(t, getPage(t, h, "/nope", "Bearer "+userToken), http.StatusNotFound)
	wantError(t, getPage(t, h, "/index.htm", ""), http.StatusNotFound)
}

func basic(user, password string) string {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.SetBasicAuth(user, password)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

func TestPage(t *testing.T) {
	h, b := testServer(t)
	b.drift, b.hist = testDrift(time.Now())
	b.status.AppliedRevision = "main@0123456789abcdef0123456789abcdef01234567"
	b.status.Errors = []string{"Job alice/x: forbidden"}
	body := okPage(t, h)

	for _, want := range []string{
		`<meta http-equiv="refresh" content="30">`,
		`id="sync-result" class="badge badge-ok">Succeeded</span>`,
		"git https://example.com/gpus.git",
		">main@0123456789ab</code>",
		"Job alice/x: forbidden",
		"4 drifted: 1 modified, 1 deleted, 1 node-label, 1 shadow (8 GPUs)",
		"spec.replicas: 3 (Git: 2)",
		"metadata.labels.g8s.host/pool: &lt;none&gt; (Git: training-pool)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Each item's row names its object and who changed it.
	rows := regexp.MustCompile(`(?s)<tr class="drift-row".*?</tr>`).FindAllString(body, -1)
	if len(rows) != len(b.drift.Items) {
		t.Fatalf("%d drift rows, want %d", len(rows), len(b.drift.Items))
	}
	for i, it := range b.drift.Items {
		for _, want := range []string{html.EscapeString(it.Object.String()), ">" + it.Manager + "<",
			`cat-` + string(it.Category)} {
			if !strings.Contains(rows[i], want) {
				t.Errorf("row %d lacks %q:\n%s", i, want, rows[i])
			}
		}
	}
	// The history: the last 24 h, newest first.
	hist := regexp.MustCompile(`(?s)<tr class="history-row".*?</tr>`).FindAllString(body, -1)
	if len(hist) != 4 || !strings.Contains(hist[0], "bob/llm") || !strings.Contains(hist[3], "Node gpu-2") {
		t.Errorf("history rows %d:\n%s", len(hist), strings.Join(hist, "\n"))
	}
	if strings.Contains(body, "alice/web") {
		t.Error("history shows an entry older than 24 h")
	}

	// alice uses her 4 GPUs of 4 (red), bob 1 of 2.
	wantBars(t, body, "quota-chart", []bar{{"alice", 4, 4, true}, {"bob", 1, 2, false}})
	// inference-pool has no nodes and nothing running: not drawn, named in the note.
	wantBars(t, body, "pool-chart", []bar{{"default", 1, 4, false}, {"training-pool", 6, 16, false}})
	if !strings.Contains(body, "1 pool without nodes not shown: inference-pool.") {
		t.Error("the pool chart does not name the pool it leaves out")
	}
}

// bar is what a chart row shows.
type bar struct {
	name        string
	used, limit int64
	over        bool
}

// wantBars checks a chart's rows from their text labels and the widths of their rects.
func wantBars(t *testing.T, body, id string, want []bar) {
	t.Helper()
	svg := regexp.MustCompile(`(?s)<svg id="` + id + `".*?</svg>`).FindString(body)
	if svg == "" {
		t.Fatalf("no svg#%s", id)
	}
	rowRE := regexp.MustCompile(`(?s)<g class="row( over)?" data-name="([^"]*)".*?` +
		`<rect class="track"[^>]* width="([0-9.]+)".*?<rect class="bar"[^>]* width="([0-9.]+)".*?` +
		`<text class="value"[^>]*>(\d+) / (\d+) GPUs</text>`)
	rows := rowRE.FindAllStringSubmatch(svg, -1)
	if len(rows) != len(want) {
		t.Fatalf("svg#%s: %d rows, want %d:\n%s", id, len(rows), len(want), svg)
	}
	for i, m := range rows {
		used, _ := strconv.ParseInt(m[5], 10, 64)
		limit, _ := strconv.ParseInt(m[6], 10, 64)
		got := bar{m[2], used, limit, m[1] != ""}
		if got != want[i] {
			t.Errorf("svg#%s row %d: %+v, want %+v", id, i, got, want[i])
		}
		track, _ := strconv.ParseFloat(m[3], 64)
		width, _ := strconv.ParseFloat(m[4], 64)
		frac := 0.0
		if limit > 0 {
			frac = float64(used) / float64(limit)
		}
		if track <= 0 || abs(width-frac*track) > 0.01 {
			t.Errorf("svg#%s row %d: bar %.2f of track %.2f, want %.0f%%", id, i, width, track, 100*frac)
		}
	}
}

func abs(f float64) float64 { return max(f, -f) }

func TestPageNoDrift(t *testing.T) {
	h, _ := testServer(t)
	body := okPage(t, h)
	for _, want := range []string{`id="no-drift"`, "No drift", "No changes in the last 24 hours."} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, `id="drift-items"`) {
		t.Error("an empty report shows a table")
	}
}

// A failed data source shows its error in its section; the others still render.
func TestPageSectionErrors(t *testing.T) {
	h, b := testServer(t)
	b.err = errBoom
	body := okPage(t, h)
	for _, want := range []string{"<b>Status unavailable:</b> status: boom", "<b>Drift unavailable:</b> drift: boom"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	wantBars(t, body, "quota-chart", []bar{{"alice", 4, 4, true}, {"bob", 1, 2, false}})

	// Without a cluster client: the charts fail, status and drift render.
	h = New(Options{Backend: &fakeBackend{}, Tokens: testTokens, Registry: prometheus.NewRegistry()})
	body = okPage(t, h)
	if n := strings.Count(body, "<b>Unavailable:</b> "+errNoKube.Error()); n != 2 {
		t.Errorf("%d chart errors, want 2", n)
	}
	if !strings.Contains(body, `id="no-drift"`) || !strings.Contains(body, `id="sync-result"`) {
		t.Error("status or drift did not render")
	}
}

func TestPageEscapes(t *testing.T) {
	h, b := testServer(t)
	evil := `<script>alert(1)</script>`
	b.status.Message = evil
	b.drift = drift.Report{Mode: drift.ModeReport, Items: []drift.Item{{
		Object:   object.Ref{Kind: "Deployment", Namespace: "bob", Name: `x"><img src=x onerror=alert(1)>`},
		Category: drift.Shadow, Message: evil, Manager: `"><b>mallory</b>`, GPUs: 1,
		Fields: []drift.Field{{Path: "spec.x", Live: evil, Desired: map[string]any{"a": "</code>"}}},
	}}}
	b.hist = []drift.Entry{{Time: time.Now(), Change: drift.Detected, Item: b.drift.Items[0]}}
	body := okPage(t, h)
	for _, raw := range []string{"<script", "<img", "<b>mallory", "</code>\"}"} {
		if strings.Contains(body, raw) {
			t.Errorf("page contains unescaped %q", raw)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("page lacks the escaped message")
	}
	if csp := getPage(t, h, "/", "Bearer "+userToken).Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// TestPageReadsAsAPersonWrites: the page says "1 GPU", rounds durations ("took 312ms"),
// prints ages as kubectl does ("37s ago"), shortens every revision to 12 digits (the whole one
// in the title), and says why a resolved drift item resolved.
func TestPageReadsAsAPersonWrites(t *testing.T) {
	h, b := testServer(t)
	now := time.Now()
	full := "main@0123456789abcdef0123456789abcdef01234567"
	b.status.AppliedRevision, b.status.Revision = full, full
	b.status.LastAttempt, b.status.LastSuccess = now.Add(-37*time.Second), now.Add(-5*time.Minute-10*time.Second)
	b.status.Duration = 312475106 * time.Nanosecond
	shadow := drift.Item{Object: object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "bob", Name: "quick"},
		Category: drift.Shadow, Message: "requests 1 GPU in namespace bob, which gpuctl manages, and is not in Git", GPUs: 1, Manager: "kubectl-create",
		Detected: now.Add(-3 * time.Hour)}
	b.drift = drift.Report{Generated: now.Add(-2 * 24 * time.Hour), Mode: drift.ModeReport, Revision: full, Items: []drift.Item{shadow}}
	done := shadow
	done.Object.Name = "done"
	b.hist = []drift.Entry{
		{Time: now.Add(-3 * time.Hour), Change: drift.Detected, Item: shadow},
		{Time: now.Add(-90 * time.Second), Change: drift.Detected, Item: done},
		{Time: now.Add(-80 * time.Second), Change: drift.Resolved, Item: done, Reason: "completed"},
	}
	body := okPage(t, h)
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, ""))

	for _, want := range []string{
		"1 drifted: 1 shadow (1 GPU)",
		`<span class="badge badge-bad">1 GPU</span>`,
		`· took 312ms</span>`,
		`>37s ago</time>`,
		`>5m ago</time>`,
		`>2d ago</time>`,
		`<code title="` + full + `">main@0123456789ab</code>`,
		`<code id="drift-revision" title="` + full + `">main@0123456789ab</code>`,
		`<span class="badge change-resolved">resolved</span> <span class="reason">completed</span>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, bad := range []string{"1 GPUs", "312.475106ms", "0123456789abcdef0123456789abcdef01234567", "just now"} {
		if strings.Contains(text, bad) {
			t.Errorf("the page's text shows %q", bad)
		}
	}
	// The resolved row comes first (newest) and says why.
	hist := regexp.MustCompile(`(?s)<tr class="history-row".*?</tr>`).FindAllString(body, -1)
	if len(hist) != 3 || !strings.Contains(hist[0], "bob/done") || !strings.Contains(hist[0], "completed") {
		t.Errorf("history rows:\n%s", strings.Join(hist, "\n"))
	}
}

// TestPageShowsASlowFetchAndAnApply: the sync card says since when a slow fetch has waited
// for the source ("fetching for 45s") and which apply has not ended (issue 32, findings 4 and 1).
func TestPageShowsASlowFetchAndAnApply(t *testing.T) {
	h, b := testServer(t)
	b.status.FetchingSince = time.Now().Add(-45 * time.Second)
	b.status.Applying = &daemon.Applying{Revision: "main@4f9c2a71d0e8aa55bb66cc77dd88ee99ff001122", Since: time.Now().Add(-2 * time.Minute)}
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(okPage(t, h), ""))
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`Fetchingfor 4[56]s: the source has not answered yet`),
		regexp.MustCompile(`Applyingrevision main@4f9c2a71d0e8 since \S+ \(2m ago\): not ended`),
	} {
		if !want.MatchString(text) {
			t.Errorf("the page's text lacks %s", want)
		}
	}
}

func TestUIWhen(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	html := func(n interface{ Render(io.Writer) error }) string {
		var b strings.Builder
		if err := n.Render(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for d, want := range map[time.Duration]string{
		37 * time.Second:               ">37s ago</time>",
		5*time.Minute + 10*time.Second: ">5m ago</time>",
		3*time.Hour + 5*time.Minute:    ">3h ago</time>",
		50 * time.Hour:                 ">2d ago</time>",
		-10 * time.Second:              ">0s ago</time>",
	} {
		if got := html(uiWhen(now, now.Add(-d))); !strings.Contains(got, want) {
			t.Errorf("uiWhen(-%v) = %s, want %s", d, got, want)
		}
	}
	if got := html(uiWhen(now, time.Time{})); !strings.Contains(got, "never") {
		t.Errorf("uiWhen(zero) = %s", got)
	}
}

// TestPageShowsAnAPIServerOutage: while the daemon cannot reach the API server, the sync card
// says since when, with the error, from the daemon's memory (issue 32: the status ConfigMap
// cannot be written meanwhile, and showed the last sync before the outage).
func TestPageShowsAnAPIServerOutage(t *testing.T) {
	h, b := testServer(t)
	b.status.APIServer = &daemon.Unreachable{Since: time.Now().Add(-2 * time.Minute), Error: "dial tcp 10.96.0.1:443: connect: connection refused"}
	text := html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(okPage(t, h), ""))
	want := regexp.MustCompile(`API serverunreachable since \S+Z \(2m\): dial tcp 10\.96\.0\.1:443: connect: connection refused; nothing is synced or recorded until it answers`)
	if !want.MatchString(text) {
		t.Errorf("the page's text lacks %s", want)
	}
	b.status.APIServer = nil
	if text := okPage(t, h); strings.Contains(text, "unreachable") {
		t.Error("the page shows an outage while the API server answers")
	}
}

// TestPageNamesTheCluster (issue 37): the page of a daemon of cluster gpu-a (--cluster) says
// so in the title of the overview and of a job's page, ahead of gpuctl, and in the top bar;
// without a cluster it names none.
func TestPageNamesTheCluster(t *testing.T) {
	h, _ := testServerWith(t, func(o *Options) { o.Cluster = "gpu-a" })
	badge := `<span id="cluster" class="badge badge-neutral" title="the cluster of this gpuctl-reconciler (--cluster)">cluster gpu-a</span>`
	for path, title := range map[string]string{"/": "<title>gpu-a · gpuctl · ", "/jobs/alice.sft": "<title>alice.sft · Running · gpu-a · gpuctl</title>"} {
		body := jobPage(t, h, path, http.StatusOK)
		if !strings.Contains(body, title) || !strings.Contains(body, badge) {
			t.Errorf("GET %s lacks %q or the cluster's badge:\n%s", path, title, strings.Join(pageHead.FindAllString(body, 2), "\n"))
		}
	}
	h, _ = testServer(t)
	if body := okPage(t, h); strings.Contains(body, `id="cluster"`) || !strings.Contains(body, "<title>gpuctl · ") {
		t.Errorf("a page without a cluster names one:\n%s", strings.Join(pageHead.FindAllString(body, 2), "\n"))
	}
}

// pageHead finds a page's title and top bar (its first two matches: the SVG charts have titles too).
var pageHead = regexp.MustCompile(`<title>.*?</title>|(?s)<header class="topbar">.*?</header>`)
