package app

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterNamesTheDaemon (issue 37): gpuctl-reconciler --cluster gpu-a, over a Git
// repository without clusters/ (which every cluster gets whole), names gpu-a in its status
// (the ConfigMap and GET /api/v1/status), its metrics (gpuctl_reconciler_info), the source of
// the Events it records on gpuctl-status, the commits of the API's writes (the trailer
// Cluster: gpu-a) and the title and top bar of its page.
func TestClusterNamesTheDaemon(t *testing.T) {
	tm := newTeam("cn")
	g := newGitRemote(t, tm)
	d := startWriteDaemon(t, tm, "--source", "git:"+g.URL, "--ref", "main", "--git-push", "--git-poll-interval", "0", "--cluster", "gpu-a")
	ctx := context.Background()

	// status
	if st, _, err := d.store.Read(ctx); err != nil || st.Cluster != "gpu-a" {
		t.Errorf("the status ConfigMap: cluster %q (%v), want gpu-a", st.Cluster, err)
	}
	var st daemon.Status
	if code, body := d.call(http.MethodGet, "/api/v1/status", aliceToken, nil, &st); code != http.StatusOK || st.Cluster != "gpu-a" {
		t.Errorf("GET /api/v1/status: %d %s", code, body)
	}

	// metrics
	if code, metrics := d.call(http.MethodGet, "/metrics", "", nil, nil); code != http.StatusOK || !strings.Contains(metrics, "\ngpuctl_reconciler_info{cluster=\"gpu-a\"} 1\n") {
		t.Errorf("/metrics (%d) has no line gpuctl_reconciler_info{cluster=\"gpu-a\"} 1", code)
	}

	// Events: the first sync's SyncSucceeded, recorded asynchronously by the broadcaster.
	var synced *corev1.Event
	waitFor(t, "the first sync's Event on gpuctl-status", func() bool {
		list, err := d.kube.CoreV1().Events(d.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=gpuctl-status,reason=" + daemon.ReasonSyncSucceeded})
		if err == nil && len(list.Items) > 0 {
			synced = &list.Items[0]
		}
		return synced != nil
	})
	if synced.Source.Component != "gpuctl-reconciler" || synced.Source.Host != "gpu-a" || synced.ReportingInstance != "gpu-a" {
		t.Errorf("the sync's Event: source %+v, reportingInstance %q; want gpuctl-reconciler on gpu-a", synced.Source, synced.ReportingInstance)
	}

	// the page
	if code, page := d.call(http.MethodGet, "/", aliceToken, nil, nil); code != http.StatusOK || !strings.Contains(page, "<title>gpu-a · gpuctl · ") || !strings.Contains(page, ">cluster gpu-a</span>") {
		t.Errorf("the page (%d): its title and top bar do not name gpu-a", code)
	}

	// a write's commit
	if code, _, body := d.create(aliceToken, training("sft", "")); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if got := g.Run(g.Bare, "log", "-1", "--format=%(trailers:key=Cluster,valueonly)", "main"); strings.TrimSpace(got) != "gpu-a" {
		t.Errorf("the write's commit names cluster %q, want gpu-a:\n%s", got, g.Run(g.Bare, "log", "-1", "--format=%B", "main"))
	}
}
