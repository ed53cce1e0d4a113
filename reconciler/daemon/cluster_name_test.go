package daemon_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// TestStatusNamesTheCluster (issue 37): the daemon of cluster gpu-a (Render.Cluster, from
// gpuctl-reconciler --cluster) records "cluster": "gpu-a" in the status ConfigMap, which
// gpuctl status and a standby read, and serves it from memory (GET /api/v1/status); without a
// cluster the status has no "cluster" key.
func TestStatusNamesTheCluster(t *testing.T) {
	h := newHarness(t, "clname", map[string]string{"web.yaml": compute("clname-web", "default", 1)},
		func(o *daemon.Options) { o.Render.Cluster = "gpu-a" })
	if st := h.d.SyncOnce(h.ctx, ""); st.Result != daemon.ResultSucceeded || st.Cluster != "gpu-a" {
		t.Fatalf("sync: %+v, want Succeeded for cluster gpu-a", st)
	}
	st, _, err := h.store.Read(h.ctx)
	if err != nil || st.Cluster != "gpu-a" {
		t.Fatalf("the status ConfigMap: cluster %q (%v), want gpu-a", st.Cluster, err)
	}
	if got := h.d.LastStatus().Cluster; got != "gpu-a" {
		t.Errorf("the status served from memory: cluster %q, want gpu-a", got)
	}

	if js := (daemon.Status{Result: daemon.ResultSucceeded}).Marshal(); strings.Contains(js, `"cluster"`) {
		t.Errorf("a status without a cluster: %s", js)
	}
}
