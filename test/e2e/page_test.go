package e2e

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// The web page's job page against the local cluster, read as the daemon reads it (informers
// for the objects, the API server's pod-log path for the logs): a pod's log lines that hold
// HTML stay text, and the page shows the last 200 lines; a job that cannot be scheduled shows
// why, in its pod and its events.
func TestJobPage(t *testing.T) {
	c := testcluster.Current()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	ns := logsNamespace(t, kube, "page-e2e")
	// Running while the page is read (kwok completes a Job's pod after a second otherwise: one
	// CI run under load read the page after that).
	trainingJob(t, kube, ns, "evil-logs", 1, 1, false, func(p *corev1.PodTemplateSpec) { testcluster.RunFor(p, 10*time.Minute) })
	pod := startedPods(t, kube, ns, "evil-logs", 1)[0].Name
	var lines []string
	for i := 1; i <= 250; i++ {
		lines = append(lines, fmt.Sprintf("step %03d loss 0.%03d", i, 1000-i))
	}
	hostile := []string{`<script>alert(1)</script>`, `</pre><img src=x onerror=alert(2)>`, `&amp; <b>bold</b>`}
	writeLog(t, ns, pod, append(lines, hostile...)...)
	trainingJob(t, kube, ns, "page-pending", 1, 64, false)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h := httpapi.New(httpapi.Options{Kube: kube, Objects: cluster.StartInformers(ctx, kube, nil, ""), Tokens: oneToken{},
		Registry: prometheus.NewRegistry()})
	page := func(path string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.SetBasicAuth("someone", "tok")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}

	code, body := page("/jobs/" + ns + ".evil-logs")
	if code != http.StatusOK {
		t.Fatalf("job page: %d\n%s", code, body)
	}
	for _, raw := range []string{"<script", "<img", "<b>bold"} {
		if strings.Contains(body, raw) {
			t.Errorf("the job page holds the log's markup %q", raw)
		}
	}
	pre := regexp.MustCompile(`(?s)<pre id="log-lines" class="log">(.*?)</pre>`).FindStringSubmatch(body)
	if pre == nil {
		t.Fatalf("no log on the job page:\n%s", body)
	}
	shown := strings.Split(strings.TrimSuffix(html.UnescapeString(pre[1]), "\n"), "\n")
	want := append(lines[len(lines)+len(hostile)-200:], hostile...)
	if len(shown) != 200 || shown[0] != "["+pod+"] "+want[0] || shown[199] != "["+pod+"] "+hostile[2] {
		t.Fatalf("the page shows %d lines, from %q to %q; want the last 200, from %q to %q",
			len(shown), shown[0], shown[len(shown)-1], want[0], hostile[2])
	}
	for i, l := range shown {
		if l != "["+pod+"] "+want[i] {
			t.Errorf("line %d: %q, want %q", i, l, want[i])
		}
	}
	if !strings.Contains(body, `badge-ok">Running</span>`) || !strings.Contains(body, ">"+pod+"</code>") {
		t.Error("the job page lacks the job's status or its pod")
	}

	// The pending job: the scheduler's reason in its pod's row and in its events.
	waitUntil(t, "the job page of page-pending to show FailedScheduling", func(context.Context) bool {
		code, body = page("/jobs/page-pending")
		return code == http.StatusOK && strings.Contains(body, "FailedScheduling")
	})
	row := regexp.MustCompile(`(?s)<tr class="pod-row">.*?</tr>`).FindString(body)
	if !strings.Contains(row, `badge-warn">Pending</span>`) || !strings.Contains(row, "insufficient nvidia.com/gpu") {
		t.Errorf("the pending pod's row does not say why:\n%s", row)
	}
	if !strings.Contains(body, "No log yet: job "+ns+".page-pending: none of its 1 pods has started a container yet") {
		t.Errorf("the pending job's page does not say why it has no log:\n%s", body)
	}

	// The overview links both.
	code, body = page("/")
	for _, id := range []string{ns + ".evil-logs", ns + ".page-pending"} {
		if code != http.StatusOK || !strings.Contains(body, `<a class="job-link" href="/jobs/`+id+`">`) {
			t.Errorf("the overview does not link %s", id)
		}
	}
	start := time.Now()
	if code, _ := page("/jobs/" + ns + ".evil-logs"); code != http.StatusOK || time.Since(start) > 3*time.Second {
		t.Errorf("job page again: %d in %s", code, time.Since(start))
	}
}
