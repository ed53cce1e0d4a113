package daemon

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/edit"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The daemon of a named cluster (gpuctl-reconciler --cluster, Options.Render.Cluster) says it
// in the commits of its writes, the Events of its idle policy and its metrics (issue 37).

// TestCommitMessageNamesTheCluster: a write's commit ends with the trailer "Cluster: NAME",
// after edit's message or the request's own subject line; without a cluster the message is
// edit's, unchanged.
func TestCommitMessageNamesTheCluster(t *testing.T) {
	res := &edit.Result{Verb: "pause", Workloads: []edit.Workload{{Kind: "notebook", Name: "nb", Namespace: "alice", File: "teams/alice/nb.yaml"}}}
	alice := WriteRequest{Verb: VerbPause, By: Writer{Name: "alice"}}
	plain := "gpuctl: pause notebook nb (alice)\n\nalice.nb: teams/alice/nb.yaml\n"
	for name, tc := range map[string]struct {
		req     WriteRequest
		cluster string
		want    string
	}{
		"no cluster":            {alice, "", plain},
		"a cluster":             {alice, "gpu-a", plain + "\nCluster: gpu-a\n"},
		"the request's subject": {WriteRequest{Verb: VerbPause, By: alice.By, Message: "gpuctl: pause job alice.nb (idle 0%)"}, "gpu-a", "gpuctl: pause job alice.nb (idle 0%)\n\nalice.nb: teams/alice/nb.yaml\n\nCluster: gpu-a\n"},
	} {
		if got := commitMessage(res, tc.req, tc.cluster); got != tc.want {
			t.Errorf("%s: message\n%q, want\n%q", name, got, tc.want)
		}
	}
}

// TestIdlePolicyNamesTheCluster: with a cluster, the idle policy's pause is a commit whose
// trailer names the cluster (git log --format='%(trailers:key=Cluster,valueonly)'), its
// Event's source is the cluster (kubectl get events -o wide: SOURCE gpuctl-reconciler,
// gpu-a), and gpuctl_reconciler_info{cluster="gpu-a"} is 1.
func TestIdlePolicyNamesTheCluster(t *testing.T) {
	h := newIdleHarness(t, notebooksPause, map[string]time.Duration{"alice/nb-0": 3 * time.Hour})
	opts := h.d.opts
	opts.Render.Cluster = "gpu-a"
	rev := h.d.lastRev
	h.d = New(opts)
	h.d.lastRev = rev
	if acts := h.round(t); len(acts) != 1 || acts[0].Reason != ReasonIdlePaused {
		t.Fatalf("actions %+v, want one pause", acts)
	}
	if got := h.remote.Run(h.remote.Bare, "log", "-1", "--format=%(trailers:key=Cluster,valueonly)", "main"); strings.TrimSpace(got) != "gpu-a" {
		t.Errorf("the pause's commit names cluster %q, want gpu-a:\n%s", got, h.remote.Run(h.remote.Bare, "log", "-1", "--format=%B", "main"))
	}
	list, err := h.kube.CoreV1().Events("alice").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Source.Host != "gpu-a" || list.Items[0].Source.Component != "gpuctl-reconciler" {
		t.Errorf("events %+v, want one from gpuctl-reconciler on host gpu-a", list.Items)
	}
	// The harness's first daemon had no cluster: its series is gone.
	info := gauge(t, h.reg, "gpuctl_reconciler_info", func(l map[string]string) string { return l["cluster"] })
	if !maps.Equal(info, map[string]float64{"gpu-a": 1}) {
		t.Errorf(`gpuctl_reconciler_info by cluster %v, want {cluster="gpu-a"} 1 only`, info)
	}
}
