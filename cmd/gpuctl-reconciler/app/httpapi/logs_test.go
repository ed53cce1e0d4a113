package httpapi

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The lines come from the API server; the fake clientset answers each log with "fake logs".
// test/e2e reads real lines through the local cluster and compares them with gpuctl logs.

// startedPod is a pod of alice.sft whose container runs.
func startedPod(name string) *corev1.Pod {
	p := clusterfixture.Pod("alice", name, "sft", "gpu-1", corev1.PodRunning, 1, clusterfixture.At(0))
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	return p
}

func TestLogsRoute(t *testing.T) {
	h, _ := testServer(t)
	for path, want := range map[string]int{
		"/api/v1/jobs/alice.nope/logs":                       http.StatusNotFound,
		"/api/v1/jobs/alice.sft/logs":                        http.StatusNotFound, // its pod has not started
		"/api/v1/jobs/alice.sft/logs?tail=x":                 http.StatusBadRequest,
		"/api/v1/jobs/alice.sft/logs?since=-1":               http.StatusBadRequest,
		"/api/v1/jobs/alice.sft/logs?follow=1&previous=true": http.StatusBadRequest,
		"/api/v1/jobs/alice.sft/logs?follow=maybe":           http.StatusBadRequest,
	} {
		w := do(t, h, http.MethodGet, path, adminToken)
		if w.Code != want || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s, want a JSON %d", path, w.Code, w.Body, want)
		}
	}
	if w := do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/logs", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d", w.Code)
	}
	if w := do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/logs", adminToken); !strings.Contains(w.Body.String(), "has started a container yet") {
		t.Errorf("no log yet: %s", w.Body)
	}

	h, _ = testServer(t, append(clusterfixture.Objects(), startedPod("sft-run"))...)
	w := do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/logs?grep=fake&tail=5", userToken)
	if w.Code != http.StatusOK || w.Body.String() != "[sft-run] fake logs\n" || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("logs: %d %q %v", w.Code, w.Body, w.Header())
	}
	if w := do(t, h, http.MethodGet, "/api/v1/jobs/alice.sft/logs?grep=nothing", userToken); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("grep without match: %d %q", w.Code, w.Body)
	}
}

// A follow answers at once, outlives the server's write timeout, picks up a pod that starts
// after it began, and ends when the client goes away.
func TestLogsFollowStreams(t *testing.T) {
	kube := fake.NewClientset(append(clusterfixture.Objects(), startedPod("sft-run"))...)
	srv := httptest.NewUnstartedServer(New(Options{Kube: kube, Tokens: testTokens, Registry: prometheus.NewRegistry()}))
	srv.Config.WriteTimeout, srv.Config.ReadTimeout = 300*time.Millisecond, 300*time.Millisecond
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if resp, err := getWithToken(ctx, srv.URL+"/api/v1/jobs/alice.sft/logs?follow=true&pod=nowhere"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("follow of an unknown pod: %v %v", resp, err)
	}
	resp, err := getWithToken(ctx, srv.URL+"/api/v1/jobs/alice.sft/logs?follow=true")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("follow: %v %v", resp, err)
	}
	defer resp.Body.Close()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(5 * time.Second):
			return "(nothing within 5s)"
		}
	}
	if l := next(); l != "[sft-run] fake logs" {
		t.Fatalf("first line %q", l)
	}
	time.Sleep(500 * time.Millisecond) // past the write timeout
	if _, err := kube.CoreV1().Pods("alice").Create(ctx, startedPod("sft-late"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "[sft-late] fake logs" {
		t.Fatalf("line of the new pod: %q", l)
	}
}

func getWithToken(ctx context.Context, url string) (*http.Response, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	r.Header.Set("Authorization", "Bearer "+adminToken)
	return http.DefaultClient.Do(r)
}

func TestEventsRoute(t *testing.T) {
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "alice"},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: "sft"}, Type: "Normal", Reason: "SuccessfulCreate",
		Message: "Created pod: sft-abcde", FirstTimestamp: *clusterfixture.At(0), LastTimestamp: *clusterfixture.At(0), Count: 1}
	h, _ := testServer(t, append(clusterfixture.Objects(), ev)...)
	var list struct {
		Items []map[string]any `json:"items"`
	}
	get(t, h, "/api/v1/jobs/alice.sft/events", http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0]["reason"] != "SuccessfulCreate" || list.Items[0]["object"] != "job/sft" {
		t.Fatalf("events %v", list.Items)
	}
	wantKeys(t, "event", list.Items[0], "lastSeen", "firstSeen", "type", "reason", "jobId", "namespace", "object", "message", "count")
	get(t, h, "/api/v1/jobs/alice.nope/events", http.StatusNotFound, nil)
}
