package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A team's token (teamToken: namespace alice) attacks bob's jobs every way the API takes a
// name: each answer is the one of a job that does not exist, and no list reveals bob's.

// scopedServer is the fixture with a job "dup" in alice and bob, a started pod of each, an
// event of each and a drift report with an item of each and of a cluster-scoped object.
func scopedServer(t *testing.T) http.Handler {
	t.Helper()
	event := func(ns, name, pod string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: "Warning", Reason: "BackOff",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod}, LastTimestamp: *clusterfixture.At(0)}
	}
	bobPod := clusterfixture.Pod("bob", "llm-run", "llm", "gpu-3", corev1.PodRunning, 1, clusterfixture.At(0))
	bobPod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	h, b := testServer(t, append(clusterfixture.Objects(),
		clusterfixture.Job("alice", "dup", "default", 0, batchv1.JobStatus{}),
		clusterfixture.Job("bob", "dup", "default", 0, batchv1.JobStatus{}),
		startedPod("sft-run"), bobPod, event("alice", "ea", "sft-run"), event("bob", "eb", "llm-run"))...)
	item := func(ns, kind string) drift.Item {
		return drift.Item{Object: object.Ref{Kind: kind, Namespace: ns, Name: "x-" + ns}, Category: drift.Modified,
			Message: "changed", Detected: time.Now()}
	}
	b.drift = drift.Report{Generated: time.Now(), Items: []drift.Item{item("alice", "Deployment"), item("bob", "Deployment"), item("", "Namespace")}}
	b.hist = []drift.Entry{{Time: time.Now(), Change: drift.Detected, Item: item("bob", "Deployment")}}
	return h
}

func TestTeamTokenSeesOnlyItsNamespaces(t *testing.T) {
	h := scopedServer(t)

	// Lists: only alice's, and the totals and pages count only hers.
	for _, query := range []string{"", "?status=failed", "?pool=default", "?kind=inference", "?page=2&pageSize=1", "?pageSize=500"} {
		var list cluster.JobList
		w := do(t, h, http.MethodGet, "/api/v1/jobs"+query, teamToken)
		decode(t, w, &list)
		for _, j := range list.Items {
			if j.Namespace != "alice" {
				t.Errorf("jobs%s: alice sees %s", query, j.JobID)
			}
		}
		var all cluster.JobList
		decode(t, do(t, h, http.MethodGet, "/api/v1/jobs"+query, adminToken), &all)
		mine := 0
		for _, j := range all.Items {
			if j.Namespace == "alice" {
				mine++
			}
		}
		if query != "?page=2&pageSize=1" && list.Total != mine {
			t.Errorf("jobs%s: total %d, alice has %d", query, list.Total, mine)
		}
	}
	var page2 cluster.JobList
	decode(t, do(t, h, http.MethodGet, "/api/v1/jobs?page=2&pageSize=1", teamToken), &page2)
	if page2.Total != 4 || len(page2.Items) != 1 || page2.Items[0].JobID != "alice.nb" {
		t.Errorf("page 2 of 1: %+v", page2)
	}

	// Another team's job by id, by bare name, through each route: a 404 word for word like
	// that of a job that does not exist.
	for _, pair := range [][2]string{{"bob.llm", "bob.nothing"}, {"llm", "nothing"}, {"bob.dup", "bob.nothing"}} {
		for _, suffix := range []string{"", "/logs", "/logs?follow=true", "/events"} {
			real := do(t, h, http.MethodGet, "/api/v1/jobs/"+pair[0]+suffix, teamToken)
			none := do(t, h, http.MethodGet, "/api/v1/jobs/"+pair[1]+suffix, teamToken)
			wantError(t, real, http.StatusNotFound)
			if got, want := real.Body.String(), strings.ReplaceAll(none.Body.String(), pair[1], pair[0]); got != want {
				t.Errorf("%s%s: %s\na job that does not exist: %s", pair[0], suffix, got, want)
			}
		}
	}
	// A bare name both teams have is alice's, without a word of bob's.
	var d cluster.JobDetail
	decode(t, do(t, h, http.MethodGet, "/api/v1/jobs/dup", teamToken), &d)
	if d.JobID != "alice.dup" {
		t.Errorf("dup: %+v", d)
	}
	if w := do(t, h, http.MethodGet, "/api/v1/jobs/dup/events", teamToken); w.Code != http.StatusOK || strings.Contains(w.Body.String(), "bob") {
		t.Errorf("dup's events: %d %s", w.Code, w.Body)
	}
	if w := do(t, h, http.MethodGet, "/api/v1/jobs/sft/logs?tail=-1", teamToken); w.Code != http.StatusOK || w.Body.String() != "[sft-run] fake logs\n" {
		t.Errorf("her own logs: %d %q", w.Code, w.Body)
	}
	if w := do(t, h, http.MethodGet, "/api/v1/jobs/bob.llm/logs?pod=llm-run", teamToken); w.Code != http.StatusNotFound ||
		strings.Contains(w.Body.String(), "llm-run") {
		t.Errorf("bob's pod: %d %s", w.Code, w.Body)
	}

	// Events, quotas, pools, drift: hers, and the shared pools and nodes whole.
	for path, hidden := range map[string]string{
		"/api/v1/events":                "bob",
		"/api/v1/events?namespace=bob":  "bob",
		"/api/v1/quotas":                "bob",
		"/api/v1/pools/default":         "bob.",
		"/api/v1/drift?since=0":         "bob",
		"/api/v1/pools":                 "\"bob",
		"/api/v1/nodes/gpu-3":           "bob",
		"/api/v1/events?namespace=alic": "alice",
	} {
		w := do(t, h, http.MethodGet, path, teamToken)
		if w.Code != http.StatusOK || strings.Contains(w.Body.String(), hidden) {
			t.Errorf("%s: %d shows %q:\n%s", path, w.Code, hidden, w.Body)
		}
	}
	var events cluster.EventList
	decode(t, do(t, h, http.MethodGet, "/api/v1/events", teamToken), &events)
	if len(events.Items) != 1 || events.Items[0].Namespace != "alice" {
		t.Errorf("events: %+v", events)
	}
	var rep DriftResponse
	decode(t, do(t, h, http.MethodGet, "/api/v1/drift?since=0", teamToken), &rep)
	if len(rep.Items) != 1 || rep.Items[0].Object.Namespace != "alice" || len(rep.History) != 0 || rep.Summary != "1 drifted: 1 modified" {
		t.Errorf("drift: %+v", rep)
	}
	wantError(t, do(t, h, http.MethodGet, "/api/v1/quotas/bob", teamToken), http.StatusNotFound)
	if w := do(t, h, http.MethodGet, "/api/v1/quotas/alice", teamToken); w.Code != http.StatusOK {
		t.Errorf("her quota: %d %s", w.Code, w.Body)
	}
	wantError(t, do(t, h, http.MethodGet, "/api/v1/plan", teamToken), http.StatusForbidden)

	// Pools and nodes are shared: the same as the admin's.
	for _, path := range []string{"/api/v1/pools", "/api/v1/nodes", "/api/v1/nodes/gpu-1"} {
		if team, admin := do(t, h, http.MethodGet, path, teamToken), do(t, h, http.MethodGet, path, adminToken); team.Body.String() != admin.Body.String() {
			t.Errorf("%s differs from the admin's:\n%s\n%s", path, team.Body, admin.Body)
		}
	}
}

// A non-admin token file line without namespaces= sees no namespace.
func TestTokenWithoutNamespacesSeesNone(t *testing.T) {
	h := scopedServer(t)
	var list cluster.JobList
	decode(t, do(t, h, http.MethodGet, "/api/v1/jobs", noNSToken), &list)
	if list.Total != 0 || len(list.Items) != 0 {
		t.Errorf("jobs: %+v", list)
	}
	for _, path := range []string{"/api/v1/jobs/alice.sft", "/api/v1/jobs/sft/logs", "/api/v1/jobs/sft/events", "/api/v1/quotas/alice"} {
		wantError(t, do(t, h, http.MethodGet, path, noNSToken), http.StatusNotFound)
	}
	for _, path := range []string{"/api/v1/events", "/api/v1/quotas", "/api/v1/drift"} {
		if w := do(t, h, http.MethodGet, path, noNSToken); w.Code != http.StatusOK || strings.Contains(w.Body.String(), "alice") {
			t.Errorf("%s: %d %s", path, w.Code, w.Body)
		}
	}
	if w := do(t, h, http.MethodGet, "/api/v1/status", noNSToken); w.Code != http.StatusOK {
		t.Errorf("status: %d", w.Code)
	}
}

// The typed errors of the read model travel in the JSON error, for gpuctl --server.
func TestErrorsCarryTheReadModelsError(t *testing.T) {
	h := scopedServer(t)
	e := wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/dup", adminToken), http.StatusBadRequest)
	if e.Ambiguous == nil || e.Ambiguous.Error() != e.Message || len(e.Ambiguous.IDs) != 2 {
		t.Errorf("ambiguous: %+v", e)
	}
	e = wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/bob.llm", teamToken), http.StatusNotFound)
	if e.NotFound == nil || e.NotFound.Error() != e.Message {
		t.Errorf("not found: %+v", e)
	}
	e = wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs?status=bogus", teamToken), http.StatusBadRequest)
	if e.Filter == nil || e.Filter.Field != "status" {
		t.Errorf("filter: %+v", e)
	}
	e = wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/alice.nb/logs", teamToken), http.StatusNotFound)
	if e.NoLogs == nil || e.NoLogs.JobID != "alice.nb" || e.NoLogs.Error() != e.Message {
		t.Errorf("no logs: %+v", e)
	}
}

// With Accept: application/x-ndjson each log line is a cluster.LogLine.
func TestLogsAsJSONLines(t *testing.T) {
	h := scopedServer(t)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/jobs/alice.sft/logs?tail=-1", nil)
	r.Header.Set("Authorization", "Bearer "+teamToken)
	r.Header.Set("Accept", "application/x-ndjson, text/plain;q=0.5")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/x-ndjson; charset=utf-8" {
		t.Fatalf("%d %v %s", w.Code, w.Header(), w.Body)
	}
	sc := bufio.NewScanner(w.Body)
	var lines []cluster.LogLine
	for sc.Scan() {
		var l cluster.LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	want := cluster.LogLine{Pod: "sft-run", Container: "main", Prefix: "sft-run", Text: "fake logs"}
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("lines %+v, want %+v", lines, want)
	}
}
