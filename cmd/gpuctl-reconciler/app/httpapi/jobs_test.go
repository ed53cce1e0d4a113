package httpapi

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func jobIDs(l JobList) []string {
	var ids []string
	for _, j := range l.Items {
		ids = append(ids, j.JobID)
	}
	return ids
}

func TestListJobsShape(t *testing.T) {
	h, _ := testServer(t)
	var obj pageOfMaps
	get(t, h, "/api/v1/jobs", http.StatusOK, &obj)
	if obj.Total != 6 || len(obj.Items) != 6 || obj.Page != 1 || obj.PageSize != 20 {
		t.Fatalf("total %d, %d items, page %d, pageSize %d", obj.Total, len(obj.Items), obj.Page, obj.PageSize)
	}
	wantKeys(t, "job", obj.Items[0], "jobId", "name", "namespace", "kind", "pool", "status", "gpu", "gpuType", "startedAt")

	var l JobList
	get(t, h, "/api/v1/jobs", http.StatusOK, &l)
	want := []JobSummary{
		{JobID: "alice.nb", Name: "nb", Namespace: "alice", Kind: "notebook", Pool: "training-pool", Status: StatusPending},
		{JobID: "alice.old", Name: "old", Namespace: "alice", Kind: "training", Pool: "training-pool", Status: StatusSucceeded, GPU: 2},
		{JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Pool: "training-pool", Status: StatusRunning,
			GPU: 4, GPUType: "a100-80g", StartedAt: &at(5 * time.Minute).Time},
		{JobID: "bob.failed-run", Name: "failed-run", Namespace: "bob", Kind: "training", Pool: "default", Status: StatusFailed},
		{JobID: "bob.llm", Name: "llm", Namespace: "bob", Kind: "inference", Pool: "default", Status: StatusPartiallyRunning,
			GPU: 2, StartedAt: &at(10 * time.Minute).Time},
		{JobID: "bob.web", Name: "web", Namespace: "bob", Kind: "compute", Pool: "default", Status: StatusRunning},
	}
	for i, w := range want {
		g := l.Items[i]
		if g.StartedAt != nil && w.StartedAt != nil && g.StartedAt.Equal(*w.StartedAt) {
			g.StartedAt = w.StartedAt
		}
		if g != w {
			t.Errorf("item %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestListJobsFilters(t *testing.T) {
	h, _ := testServer(t)
	tests := map[string]struct {
		query string
		want  []string
	}{
		"kind":             {"kind=training", []string{"alice.old", "alice.sft", "bob.failed-run"}},
		"pool":             {"pool=training-pool", []string{"alice.nb", "alice.old", "alice.sft"}},
		"default pool":     {"pool=default", []string{"bob.failed-run", "bob.llm", "bob.web"}},
		"status":           {"status=running", []string{"alice.sft", "bob.web"}},
		"status as shown":  {"status=Partially%20Running", []string{"bob.llm"}},
		"status dashed":    {"status=partially-running", []string{"bob.llm"}},
		"status succeeded": {"status=Succeeded", []string{"alice.old"}},
		"status failed":    {"status=failed", []string{"bob.failed-run"}},
		"status pending":   {"status=pending", []string{"alice.nb"}},
		"all filters":      {"kind=inference&pool=default&status=partially_running", []string{"bob.llm"}},
		"no match":         {"kind=notebook&pool=default", nil},
		"unknown pool":     {"pool=nowhere", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var l JobList
			get(t, h, "/api/v1/jobs?"+tc.query, http.StatusOK, &l)
			if got := jobIDs(l); !slices.Equal(got, tc.want) || l.Total != len(tc.want) {
				t.Errorf("got %v (total %d), want %v", got, l.Total, tc.want)
			}
			if l.Items == nil {
				t.Error("items is null, want []")
			}
		})
	}
}

func TestListJobsPagination(t *testing.T) {
	h, _ := testServer(t)
	tests := map[string]struct {
		query string
		want  []string
	}{
		"first page":  {"pageSize=4", []string{"alice.nb", "alice.old", "alice.sft", "bob.failed-run"}},
		"second page": {"page=2&pageSize=4", []string{"bob.llm", "bob.web"}},
		"past end":    {"page=3&pageSize=4", nil},
		"one a page":  {"page=3&pageSize=1", []string{"alice.sft"}},
		"filtered":    {"kind=training&page=2&pageSize=2", []string{"bob.failed-run"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var l JobList
			get(t, h, "/api/v1/jobs?"+tc.query, http.StatusOK, &l)
			if got := jobIDs(l); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if tc.query != "kind=training&page=2&pageSize=2" && l.Total != 6 {
				t.Errorf("total %d, want 6", l.Total)
			}
		})
	}
}

func TestListJobsBadQuery(t *testing.T) {
	h, _ := testServer(t)
	for _, query := range []string{"pageSize=0", "pageSize=501", "pageSize=x", "page=0", "page=-1", "page=1.5",
		"page=99999999999999999999", "status=bogus", "kind=pool", "kind=Training", "pool=bad%20pool!"} {
		e := wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs?"+query, userToken), http.StatusBadRequest)
		param, _, _ := strings.Cut(query, "=")
		if !strings.HasPrefix(e.Message, param+":") {
			t.Errorf("%s: message %q does not name the parameter", query, e.Message)
		}
	}
}

func TestGetJob(t *testing.T) {
	h, _ := testServer(t)
	var obj map[string]any
	get(t, h, "/api/v1/jobs/alice.sft", http.StatusOK, &obj)
	wantKeys(t, "job detail", obj, "jobId", "name", "namespace", "kind", "version", "yamlContent", "source",
		"description", "status", "pool", "priority", "resources", "metrics", "createdAt", "startedAt", "k8sResources")
	wantKeys(t, "resources", obj["resources"].(map[string]any), "gpu", "gpuType", "cpu", "memory", "pods", "gpuTotal")
	wantKeys(t, "metrics", obj["metrics"].(map[string]any), "gpuUtilization", "memoryUsage", "networkLatency", "throughput")
	wantKeys(t, "k8sResources", obj["k8sResources"].(map[string]any), "kind", "jobName", "pods")

	var d JobDetail
	get(t, h, "/api/v1/jobs/alice.sft", http.StatusOK, &d)
	want := JobDetail{JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Version: "v0.1",
		Source: "teams/alice/sft.yaml", Description: "qwen2 sft", Status: StatusRunning, Pool: "training-pool",
		Priority:  "medium",
		Resources: JobResources{GPU: 4, GPUType: "a100-80g", CPU: 32, Memory: "128Gi", Pods: 1, GPUTotal: 4},
		Metrics:   JobMetrics{MemoryUsage: "0", NetworkLatency: "0", Throughput: "0"},
		CreatedAt: t0, StartedAt: &at(5 * time.Minute).Time,
		K8sResources: K8sResources{Kind: "Job", JobName: "sft", Pods: []string{"sft-abcde"}},
	}
	checkDetail(t, d, want)

	d = JobDetail{}
	get(t, h, "/api/v1/jobs/bob.llm", http.StatusOK, &d)
	if d.Status != StatusPartiallyRunning || d.Resources.Pods != 2 || d.Resources.GPUTotal != 2 ||
		!slices.Equal(d.K8sResources.Pods, []string{"llm-1", "llm-2"}) || d.K8sResources.Kind != "Deployment" ||
		d.StartedAt == nil || !d.StartedAt.Equal(at(10*time.Minute).Time) {
		t.Errorf("bob.llm: %+v", d)
	}
	d = JobDetail{}
	get(t, h, "/api/v1/jobs/alice.nb", http.StatusOK, &d)
	if d.Kind != "notebook" || d.K8sResources.Kind != "StatefulSet" || d.StartedAt != nil || len(d.K8sResources.Pods) != 0 {
		t.Errorf("alice.nb: %+v", d)
	}
	// A bare name that one namespace has.
	d = JobDetail{}
	get(t, h, "/api/v1/jobs/sft", http.StatusOK, &d)
	if d.JobID != "alice.sft" {
		t.Errorf("bare name: %+v", d)
	}
}

func checkDetail(t *testing.T, got, want JobDetail) {
	t.Helper()
	if got.StartedAt == nil || want.StartedAt == nil || !got.StartedAt.Equal(*want.StartedAt) {
		t.Errorf("startedAt %v, want %v", got.StartedAt, want.StartedAt)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("createdAt %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	got.StartedAt, got.CreatedAt, want.StartedAt = nil, want.CreatedAt, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("detail:\n got %+v\nwant %+v", got, want)
	}
}

func TestGetJobNotFound(t *testing.T) {
	h, _ := testServer(t)
	for _, id := range []string{"alice.nope", "nope", "bob.other", "bob.not-a-job", "Bad_NS.x", "carol.sft", "alice."} {
		wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/"+id, userToken), http.StatusNotFound)
	}
}

func TestGetJobAmbiguousName(t *testing.T) {
	h, _ := testServer(t, job("alice", "dup", "default", 0, batchv1.JobStatus{}),
		deployment("bob", "dup", "inference", "default", 1, 0, 0))
	e := wantError(t, do(t, h, http.MethodGet, "/api/v1/jobs/dup", userToken), http.StatusBadRequest)
	if !strings.Contains(e.Message, "alice.dup, bob.dup") {
		t.Errorf("message %q does not list the candidates", e.Message)
	}
	var d JobDetail
	get(t, h, "/api/v1/jobs/bob.dup", http.StatusOK, &d)
	if d.K8sResources.Kind != "Deployment" {
		t.Errorf("bob.dup: %+v", d)
	}
}

func TestJobStatus(t *testing.T) {
	cond := func(typ batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: typ, Status: corev1.ConditionTrue}}
	}
	tests := map[string]struct {
		status batchv1.JobStatus
		want   string
	}{
		"new":                  {batchv1.JobStatus{}, StatusPending},
		"active":               {batchv1.JobStatus{Active: 2}, StatusRunning},
		"succeeded":            {batchv1.JobStatus{Succeeded: 1}, StatusSucceeded},
		"succeeded wins":       {batchv1.JobStatus{Succeeded: 1, Failed: 1, Active: 1}, StatusSucceeded},
		"failed":               {batchv1.JobStatus{Failed: 1}, StatusFailed},
		"failed over active":   {batchv1.JobStatus{Failed: 1, Active: 1}, StatusFailed},
		"complete condition":   {batchv1.JobStatus{Conditions: cond(batchv1.JobComplete)}, StatusSucceeded},
		"failed condition":     {batchv1.JobStatus{Succeeded: 1, Conditions: cond(batchv1.JobFailed)}, StatusFailed},
		"failure target":       {batchv1.JobStatus{Active: 1, Conditions: cond(batchv1.JobFailureTarget)}, StatusFailed},
		"success criteria met": {batchv1.JobStatus{Active: 1, Conditions: cond(batchv1.JobSuccessCriteriaMet)}, StatusSucceeded},
		"false condition": {batchv1.JobStatus{Active: 1, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}}}, StatusRunning},
		"suspended": {batchv1.JobStatus{Conditions: cond(batchv1.JobSuspended)}, StatusPending},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := JobStatus(&batchv1.Job{Status: tc.status}); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReplicaStatus(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	tests := map[string]struct {
		replicas *int32
		ready    int32
		want     string
	}{
		"all ready":          {i32(2), 2, StatusRunning},
		"some ready":         {i32(2), 1, StatusPartiallyRunning},
		"none ready":         {i32(2), 0, StatusPending},
		"default one ready":  {nil, 1, StatusRunning},
		"default none ready": {nil, 0, StatusPending},
		"scaled to zero":     {i32(0), 0, StatusPending},
		"surge":              {i32(2), 3, StatusRunning},
		"scaling down":       {i32(0), 1, StatusPartiallyRunning},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: tc.replicas},
				Status: appsv1.DeploymentStatus{ReadyReplicas: tc.ready}}
			if got := DeploymentStatus(d); got != tc.want {
				t.Errorf("Deployment: got %q, want %q", got, tc.want)
			}
			s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: tc.replicas},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: tc.ready}}
			if got := StatefulSetStatus(s); got != tc.want {
				t.Errorf("StatefulSet: got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestJobSelectorPrefersSpec(t *testing.T) {
	j := job("alice", "multi", "default", 8, batchv1.JobStatus{Active: 2, StartTime: at(time.Minute)})
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}}
	j.Spec.Parallelism = new(int32(2))
	own := pod("alice", "multi-0", "multi", "gpu-1", corev1.PodRunning, 8, at(time.Minute))
	own.Labels["batch.kubernetes.io/controller-uid"] = "u1"
	other := pod("alice", "multi-old", "multi", "gpu-1", corev1.PodRunning, 8, at(0)) // same app, other uid
	h, _ := testServer(t, []runtime.Object{j, own, other}...)
	var d JobDetail
	get(t, h, "/api/v1/jobs/alice.multi", http.StatusOK, &d)
	if !slices.Equal(d.K8sResources.Pods, []string{"multi-0"}) || d.Resources.GPUTotal != 16 || d.Resources.GPU != 8 {
		t.Errorf("detail %+v", d)
	}
}
