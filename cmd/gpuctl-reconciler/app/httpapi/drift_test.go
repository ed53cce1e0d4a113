package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/object"
)

// testDrift is a drift report with one item of four categories and a history of five entries
// over 30 hours before now, the oldest outside the default 24 h.
func testDrift(now time.Time) (drift.Report, []drift.Entry) {
	tm := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	items := []drift.Item{
		{Object: object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "bob", Name: "llm"},
			Category: drift.Modified, Source: "teams/bob/llm.yaml",
			Message: "2 fields differ from Git", Manager: "kubectl-edit", Changed: tm(40 * time.Minute),
			Detected: *tm(35 * time.Minute),
			Fields: []drift.Field{
				{Path: "spec.replicas", Desired: float64(2), Live: float64(3), Manager: "kubectl-edit",
					Operation: "Update", Time: tm(40 * time.Minute)},
				{Path: "spec.template.spec.containers[0].image", Desired: "vllm/vllm-openai:v0.4.0",
					Live: "vllm/vllm-openai:v0.5.1", Manager: "kubectl-edit", Operation: "Update"},
			}},
		{Object: object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "alice", Name: "sft"},
			Category: drift.Deleted, Source: "teams/alice/sft.yaml", Message: "deleted from the cluster",
			Manager: "kubectl", Detected: *tm(3 * time.Hour)},
		{Object: object.Ref{APIVersion: "v1", Kind: "Node", Name: "gpu-2"}, Category: drift.NodeLabel,
			Source: "pools/training.yaml", Message: "pool label removed by hand", Manager: "kubectl-label",
			Changed: tm(5 * time.Hour), Detected: *tm(5 * time.Hour),
			Fields: []drift.Field{{Path: "metadata.labels.g8s.host/pool", Desired: "training-pool",
				Manager: "kubectl-label", Inferred: true}}},
		{Object: object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "bob", Name: "rogue-vllm"},
			Category: drift.Shadow, Message: "requests 8 GPUs and is not in Git", Manager: "kubectl-create",
			GPUs: 8, Changed: tm(2 * time.Hour), Detected: *tm(2 * time.Hour)},
	}
	drift.Sort(items)
	rep := drift.Report{Generated: now.Add(-time.Minute), Mode: drift.ModeReport, Revision: "main@0123456789abcdef0123",
		Items: items}
	hist := []drift.Entry{
		{Time: now.Add(-30 * time.Hour), Change: drift.Detected, Item: drift.Item{Category: drift.Modified,
			Object: object.Ref{Kind: "Deployment", Namespace: "alice", Name: "web"}, Manager: "kubectl-scale",
			Message: "spec.replicas differs"}},
		{Time: now.Add(-5 * time.Hour), Change: drift.Detected, Item: items[2]},
		{Time: now.Add(-3 * time.Hour), Change: drift.Detected, Item: items[1]},
		{Time: now.Add(-2 * time.Hour), Change: drift.Detected, Item: items[3]},
		{Time: now.Add(-35 * time.Minute), Change: drift.Detected, Item: items[0]},
	}
	return rep, hist
}

func TestDrift(t *testing.T) {
	h, b := testServer(t)
	b.drift, b.hist = testDrift(time.Now())

	var obj map[string]any
	get(t, h, "/api/v1/drift", http.StatusOK, &obj)
	wantKeys(t, "drift", obj, "summary", "generated", "mode", "revision", "items", "history")

	var resp DriftResponse
	get(t, h, "/api/v1/drift", http.StatusOK, &resp)
	if want := "4 drifted: 1 modified, 1 deleted, 1 node-label, 1 shadow (8 GPUs)"; resp.Summary != want {
		t.Errorf("summary %q, want %q", resp.Summary, want)
	}
	if len(resp.Items) != 4 || resp.Items[0].Object.Name != "llm" || resp.Items[0].Fields[0].Manager != "kubectl-edit" {
		t.Errorf("items %+v", resp.Items)
	}
	for _, tc := range []struct {
		query string
		n     int
	}{{"", 4}, {"?since=24h", 4}, {"?since=0", 5}, {"?since=90m", 1}, {"?since=1s", 0}, {"?since=48h", 5}} {
		var resp DriftResponse
		get(t, h, "/api/v1/drift"+tc.query, http.StatusOK, &resp)
		if len(resp.History) != tc.n || len(resp.Items) != 4 {
			t.Errorf("%q: %d history entries and %d items, want %d and 4", tc.query, len(resp.History),
				len(resp.Items), tc.n)
		}
		for i := 1; i < len(resp.History); i++ {
			if resp.History[i].Time.Before(resp.History[i-1].Time) {
				t.Errorf("%q: history not oldest first", tc.query)
			}
		}
	}

	for _, bad := range []string{"yesterday", "24", "-1h", ""} {
		e := wantError(t, do(t, h, http.MethodGet, "/api/v1/drift?since="+bad, userToken), http.StatusBadRequest)
		if !strings.Contains(e.Message, "since") {
			t.Errorf("since=%q: message %q", bad, e.Message)
		}
	}
	wantError(t, do(t, h, http.MethodGet, "/api/v1/drift", ""), http.StatusUnauthorized)
	wantError(t, do(t, h, http.MethodPost, "/api/v1/drift", adminToken), http.StatusMethodNotAllowed)

	b.err = errBoom
	e := wantError(t, do(t, h, http.MethodGet, "/api/v1/drift", userToken), http.StatusInternalServerError)
	if !strings.Contains(e.Message, "boom") {
		t.Errorf("500 message %q", e.Message)
	}
}

func TestDriftEmpty(t *testing.T) {
	h, _ := testServer(t)
	var obj map[string]any
	get(t, h, "/api/v1/drift", http.StatusOK, &obj)
	if obj["summary"] != "no drift" || len(obj["items"].([]any)) != 0 || len(obj["history"].([]any)) != 0 {
		t.Errorf("empty drift %v", obj)
	}

	h = New(Options{Tokens: testTokens})
	wantError(t, do(t, h, http.MethodGet, "/api/v1/drift", userToken), http.StatusInternalServerError)
}
