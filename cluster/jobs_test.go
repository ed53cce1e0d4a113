package cluster

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	fx "github.com/gpuctl/gpuctl/test/clusterfixture"
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

func TestJobs(t *testing.T) {
	l, err := testReader(t).Jobs(ctx, JobFilter{Page: Page{Number: 1, Size: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Total != 6 || len(l.Items) != 6 || l.Page != 1 || l.PageSize != 20 {
		t.Fatalf("total %d, %d items, page %d, pageSize %d", l.Total, len(l.Items), l.Page, l.PageSize)
	}
	want := []JobSummary{
		{JobID: "alice.nb", Name: "nb", Namespace: "alice", Kind: "notebook", Pool: "training-pool", Status: StatusPending},
		{JobID: "alice.old", Name: "old", Namespace: "alice", Kind: "training", Pool: "training-pool", Status: StatusSucceeded, GPU: 2},
		{JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Pool: "training-pool", Status: StatusRunning,
			GPU: 4, GPUType: "a100-80g", StartedAt: &fx.At(5 * time.Minute).Time},
		{JobID: "bob.failed-run", Name: "failed-run", Namespace: "bob", Kind: "training", Pool: "default", Status: StatusFailed},
		{JobID: "bob.llm", Name: "llm", Namespace: "bob", Kind: "inference", Pool: "default", Status: StatusPartiallyRunning,
			GPU: 2, StartedAt: &fx.At(10 * time.Minute).Time},
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

	all, err := testReader(t).Jobs(ctx, JobFilter{}) // no paging
	if err != nil || all.Total != 6 || len(all.Items) != 6 || all.Page != 1 || all.PageSize != 0 {
		t.Errorf("zero filter: total %d, %d items, page %d, pageSize %d, %v", all.Total, len(all.Items), all.Page, all.PageSize, err)
	}
}

func TestJobsFilters(t *testing.T) {
	r := testReader(t)
	tests := map[string]struct {
		filter JobFilter
		want   []string
	}{
		"kind":             {JobFilter{Kind: "training"}, []string{"alice.old", "alice.sft", "bob.failed-run"}},
		"pool":             {JobFilter{Pool: "training-pool"}, []string{"alice.nb", "alice.old", "alice.sft"}},
		"default pool":     {JobFilter{Pool: "default"}, []string{"bob.failed-run", "bob.llm", "bob.web"}},
		"status":           {JobFilter{Status: "running"}, []string{"alice.sft", "bob.web"}},
		"status as shown":  {JobFilter{Status: "Partially Running"}, []string{"bob.llm"}},
		"status dashed":    {JobFilter{Status: "partially-running"}, []string{"bob.llm"}},
		"status succeeded": {JobFilter{Status: "Succeeded"}, []string{"alice.old"}},
		"status failed":    {JobFilter{Status: "failed"}, []string{"bob.failed-run"}},
		"status pending":   {JobFilter{Status: "pending"}, []string{"alice.nb"}},
		"all filters":      {JobFilter{Kind: "inference", Pool: "default", Status: "partially_running"}, []string{"bob.llm"}},
		"no match":         {JobFilter{Kind: "notebook", Pool: "default"}, nil},
		"unknown pool":     {JobFilter{Pool: "nowhere"}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := r.Jobs(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := jobIDs(l); !slices.Equal(got, tc.want) || l.Total != len(tc.want) {
				t.Errorf("got %v (total %d), want %v", got, l.Total, tc.want)
			}
			if l.Items == nil {
				t.Error("items is null, want []")
			}
		})
	}
}

func TestJobsPagination(t *testing.T) {
	r := testReader(t)
	tests := map[string]struct {
		filter JobFilter
		want   []string
	}{
		"first page":  {JobFilter{Page: Page{Number: 1, Size: 4}}, []string{"alice.nb", "alice.old", "alice.sft", "bob.failed-run"}},
		"second page": {JobFilter{Page: Page{Number: 2, Size: 4}}, []string{"bob.llm", "bob.web"}},
		"past end":    {JobFilter{Page: Page{Number: 3, Size: 4}}, nil},
		"one a page":  {JobFilter{Page: Page{Number: 3, Size: 1}}, []string{"alice.sft"}},
		"filtered":    {JobFilter{Kind: "training", Page: Page{Number: 2, Size: 2}}, []string{"bob.failed-run"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			l, err := r.Jobs(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := jobIDs(l); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if l.Items == nil {
				t.Error("items is nil, want []")
			}
			if name != "filtered" && l.Total != 6 {
				t.Errorf("total %d, want 6", l.Total)
			}
			if l.Page != tc.filter.Page.Number || l.PageSize != tc.filter.Page.Size {
				t.Errorf("page %d, size %d, want %+v", l.Page, l.PageSize, tc.filter.Page)
			}
		})
	}
}

func TestJobsBadFilter(t *testing.T) {
	r := testReader(t)
	tests := map[string]struct {
		filter JobFilter
		field  string
	}{
		"status":                {JobFilter{Status: "bogus"}, "status"},
		"kind":                  {JobFilter{Kind: "pool"}, "kind"},
		"kind capital":          {JobFilter{Kind: "Training"}, "kind"},
		"pool":                  {JobFilter{Pool: "bad pool!"}, "pool"},
		"kind is checked first": {JobFilter{Kind: "x", Pool: "bad pool!", Status: "bogus"}, "kind"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := r.Jobs(ctx, tc.filter)
			wantFilterError(t, err, tc.field)
		})
	}
}

func TestJob(t *testing.T) {
	r := testReader(t)
	d, err := r.Job(ctx, "alice.sft")
	if err != nil {
		t.Fatal(err)
	}
	want := JobDetail{JobID: "alice.sft", Name: "sft", Namespace: "alice", Kind: "training", Version: "v0.1",
		Source: "teams/alice/sft.yaml", Description: "qwen2 sft", Status: StatusRunning, Pool: "training-pool",
		Priority:  "medium",
		Resources: JobResources{GPU: 4, GPUType: "a100-80g", CPU: 32, Memory: "128Gi", Pods: 1, GPUTotal: 4},
		CreatedAt: fx.T0, StartedAt: &fx.At(5 * time.Minute).Time,
		K8sResources: K8sResources{Kind: "Job", JobName: "sft", Pods: []string{"sft-abcde"}},
		Attempts:     []Attempt{{Pod: "sft-abcde", Node: "gpu-1", Start: &fx.At(5 * time.Minute).Time, Outcome: AttemptRunning}},
	}
	checkDetail(t, d, want)

	d = mustJob(t, r, "bob.llm")
	if d.Status != StatusPartiallyRunning || d.Resources.Pods != 2 || d.Resources.GPUTotal != 2 ||
		!slices.Equal(d.K8sResources.Pods, []string{"llm-1", "llm-2"}) || d.K8sResources.Kind != "Deployment" ||
		d.StartedAt == nil || !d.StartedAt.Equal(fx.At(10*time.Minute).Time) {
		t.Errorf("bob.llm: %+v", d)
	}
	d = mustJob(t, r, "alice.nb")
	if d.Kind != "notebook" || d.K8sResources.Kind != "StatefulSet" || d.StartedAt != nil || len(d.K8sResources.Pods) != 0 {
		t.Errorf("alice.nb: %+v", d)
	}
	// A bare name that one namespace has.
	d = mustJob(t, r, "sft")
	if d.JobID != "alice.sft" {
		t.Errorf("bare name: %+v", d)
	}
}

func mustJob(t *testing.T, r *Reader, id string) JobDetail {
	t.Helper()
	d, err := r.Job(ctx, id)
	if err != nil {
		t.Fatalf("job %s: %v", id, err)
	}
	return d
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

func TestJobNotFound(t *testing.T) {
	r := testReader(t)
	for _, id := range []string{"alice.nope", "nope", "bob.other", "bob.not-a-job", "Bad_NS.x", "carol.sft", "alice."} {
		_, err := r.Job(ctx, id)
		wantNotFound(t, err, "job", id)
	}
}

func TestJobAmbiguousName(t *testing.T) {
	r := testReader(t, fx.Job("alice", "dup", "default", 0, batchv1.JobStatus{}),
		fx.Deployment("bob", "dup", "inference", "default", 1, 0, 0))
	_, err := r.Job(ctx, "dup")
	var amb *AmbiguousError
	if !errors.As(err, &amb) {
		t.Fatalf("error %v, want an *AmbiguousError", err)
	}
	if amb.Name != "dup" || !slices.Equal(amb.IDs, []string{"alice.dup", "bob.dup"}) ||
		amb.Error() != `job name "dup" is ambiguous: use one of alice.dup, bob.dup` {
		t.Errorf("ambiguous %+v: %v", amb, amb)
	}
	if d := mustJob(t, r, "bob.dup"); d.K8sResources.Kind != "Deployment" {
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
		"retried":              {batchv1.JobStatus{Failed: 1, Active: 1}, StatusRunning},
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
	j := fx.Job("alice", "multi", "default", 8, batchv1.JobStatus{Active: 2, StartTime: fx.At(time.Minute)})
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "u1"}}
	j.Spec.Parallelism = new(int32(2))
	own := fx.Pod("alice", "multi-0", "multi", "gpu-1", corev1.PodRunning, 8, fx.At(time.Minute))
	own.Labels["batch.kubernetes.io/controller-uid"] = "u1"
	other := fx.Pod("alice", "multi-old", "multi", "gpu-1", corev1.PodRunning, 8, fx.At(0)) // same app, other uid
	d := mustJob(t, testReader(t, []runtime.Object{j, own, other}...), "alice.multi")
	if !slices.Equal(d.K8sResources.Pods, []string{"multi-0"}) || d.Resources.GPUTotal != 16 || d.Resources.GPU != 8 {
		t.Errorf("detail %+v", d)
	}
}
