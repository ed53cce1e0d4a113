package render_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// multiKueueConfig makes cluster hub the manager of workers gpu-a (its Secret named) and gpu-b.
const multiKueueConfig = kueueConfig + "multiKueue:\n  manager: hub\n  workers:\n" +
	"    - name: gpu-a\n      kubeconfigSecret: gpu-a-admin\n    - name: gpu-b\n"

// multiKueueRepo is a fleet: a shared quota, the jobs on the manager, a pool on each worker.
func multiKueueRepo(config string) map[string]string {
	return map[string]string{
		".gpuctl.yaml":                    config,
		"quotas.yaml":                     quotaFile("alice: {cpu: 16, memory: 64Gi, gpu: 8}\n"),
		"clusters/hub/teams/alice/j.yaml": clusterJob("train"),
		"clusters/gpu-a/pools.yaml":       clusterPool("a100", "gpu-a-0"),
		"clusters/gpu-b/pools.yaml":       clusterPool("h100", "gpu-b-0"),
	}
}

// TestMultiKueueManager: the manager's render has the AdmissionCheck, the MultiKueueConfig of
// the workers, a MultiKueueCluster per worker naming its Secret (multikueue-<name> unless
// given), and the check on every team's ClusterQueue, all applied before the queues; a
// worker's render is plain queueing kueue, with none of them.
func TestMultiKueueManager(t *testing.T) {
	hub, err := renderCluster(t, multiKueueRepo(multiKueueConfig), "hub", "")
	if err != nil {
		t.Fatal(err)
	}
	check := findObject(hub.Objects, "AdmissionCheck", "", render.MultiKueueCheck)
	if check == nil {
		t.Fatalf("no AdmissionCheck %s in %v", render.MultiKueueCheck, objectNames(hub))
	}
	if c, _, _ := unstructured.NestedString(check.Object, "spec", "controllerName"); c != "kueue.x-k8s.io/multikueue" {
		t.Errorf("controllerName %q", c)
	}
	if p, _, _ := unstructured.NestedStringMap(check.Object, "spec", "parameters"); p["kind"] != "MultiKueueConfig" || p["name"] != "gpuctl" || p["apiGroup"] != "kueue.x-k8s.io" {
		t.Errorf("parameters %v", p)
	}
	config := findObject(hub.Objects, "MultiKueueConfig", "", "gpuctl")
	if cl, _, _ := unstructured.NestedStringSlice(config.Object, "spec", "clusters"); !slices.Equal(cl, []string{"gpu-a", "gpu-b"}) {
		t.Errorf("MultiKueueConfig clusters %v", cl)
	}
	for name, secret := range map[string]string{"gpu-a": "gpu-a-admin", "gpu-b": "multikueue-gpu-b"} {
		mc := findObject(hub.Objects, "MultiKueueCluster", "", name)
		if mc == nil {
			t.Fatalf("no MultiKueueCluster %s", name)
		}
		kc, _, _ := unstructured.NestedStringMap(mc.Object, "spec", "clusterSource", "kubeConfig")
		if kc["location"] != secret || kc["locationType"] != "Secret" {
			t.Errorf("MultiKueueCluster %s: kubeConfig %v; want Secret %s", name, kc, secret)
		}
	}
	cq := findObject(hub.Objects, "ClusterQueue", "", "alice")
	checks, _, _ := unstructured.NestedSlice(cq.Object, "spec", "admissionChecksStrategy", "admissionChecks")
	if len(checks) != 1 || checks[0].(map[string]any)["name"] != render.MultiKueueCheck {
		t.Errorf("the manager's ClusterQueue alice: admission checks %v", checks)
	}
	for _, kind := range []string{"AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster"} {
		if render.KindOrder(kind) >= render.KindOrder("ClusterQueue") {
			t.Errorf("%s is applied with or after the ClusterQueues that name it", kind)
		}
	}

	worker, err := renderCluster(t, multiKueueRepo(multiKueueConfig), "gpu-b", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range worker.Objects {
		if strings.HasPrefix(o.GetKind(), "MultiKueue") || o.GetKind() == "AdmissionCheck" {
			t.Errorf("the worker's render has %s %s", o.GetKind(), o.GetName())
		}
	}
	cq = findObject(worker.Objects, "ClusterQueue", "", "alice")
	if cq == nil {
		t.Fatalf("the worker has no ClusterQueue alice: %v", objectNames(worker))
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(cq.Object, "spec", "admissionChecksStrategy"); found {
		t.Error("the worker's ClusterQueue alice has an admission check")
	}
	if findObject(worker.Objects, "Job", "alice", "train") != nil {
		t.Error("the worker renders the job committed to the manager")
	}
}

// TestMultiKueueWorkerRender: Result.MultiKueueWorker (where MultiKueue's labels are believed)
// is set on the render for a worker that multiKueue lists, by --cluster or by its directory,
// and not on the manager's, a render for no cluster, nor a cluster of a configuration
// without multiKueue.
func TestMultiKueueWorkerRender(t *testing.T) {
	for name, c := range map[string]struct {
		config, cluster, sub string
		want                 bool
	}{
		"gpu-a":                  {multiKueueConfig, "gpu-a", "", true},
		"gpu-b":                  {multiKueueConfig, "gpu-b", "", true},
		"gpu-b by its directory": {multiKueueConfig, "", "clusters/gpu-b", true},
		"the manager":            {multiKueueConfig, "hub", "", false},
		"no cluster":             {multiKueueConfig, "", "", false},
		"no multiKueue":          {kueueConfig, "gpu-a", "", false},
	} {
		res, err := renderCluster(t, multiKueueRepo(c.config), c.cluster, c.sub)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.MultiKueueWorker != c.want {
			t.Errorf("%s: MultiKueueWorker %v, want %v", name, res.MultiKueueWorker, c.want)
		}
	}
}

// TestMultiKueueConfigErrors: each mistake in multiKueue names its field and line.
func TestMultiKueueConfigErrors(t *testing.T) {
	tests := map[string]struct{ config, want string }{
		"without kueue": {tenantConfig + "multiKueue: {manager: hub, workers: [{name: gpu-a}]}\n",
			".gpuctl.yaml:4:13: multiKueue: multiKueue needs queueing kueue"},
		"manager is a worker": {kueueConfig + "multiKueue:\n  manager: hub\n  workers:\n    - name: hub\n",
			`.gpuctl.yaml:8:13: multiKueue.workers[0].name: cluster "hub" is the manager`},
		"twice": {kueueConfig + "multiKueue:\n  manager: hub\n  workers:\n    - name: a\n    - name: a\n",
			`.gpuctl.yaml:9:13: multiKueue.workers[1].name: cluster "a" is listed twice`},
		"bad name": {kueueConfig + "multiKueue:\n  manager: Hub_1\n  workers: [{name: a}]\n",
			`.gpuctl.yaml:6:12: multiKueue.manager: cluster name "Hub_1"`},
		"bad secret": {kueueConfig + "multiKueue:\n  manager: hub\n  workers: [{name: a, kubeconfigSecret: Not/Valid}]\n",
			`multiKueue.workers[0].kubeconfigSecret: Secret name "Not/Valid"`},
		"no workers": {kueueConfig + "multiKueue: {manager: hub}\n", "multiKueue.workers"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, diags := render.ParseConfig(".gpuctl.yaml", []byte(tc.config))
			var all []string
			for _, d := range diags {
				all = append(all, d.Error())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Errorf("diagnostics:\n%s\nwant one containing %q", strings.Join(all, "\n"), tc.want)
			}
		})
	}
}

// TestMultiKueueManagerWarnsOfServices: on the manager, a team's service (a Deployment) is not
// dispatched by MultiKueue and would run in the manager: a warning names its file and where it
// belongs; a worker's render of the same file says nothing of the kind.
func TestMultiKueueManagerWarnsOfServices(t *testing.T) {
	files := multiKueueRepo(multiKueueConfig)
	files["clusters/hub/teams/alice/web.yaml"] = "kind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: nginx}\nservice: {replicas: 1}\n"
	files["clusters/gpu-b/teams/alice/web.yaml"] = files["clusters/hub/teams/alice/web.yaml"]
	hub, err := renderCluster(t, files, "hub", "")
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, d := range hub.Warnings() {
		if strings.Contains(d.Message, "not dispatched by MultiKueue") {
			warned = append(warned, d.Error())
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "clusters/hub/teams/alice/web.yaml") || !strings.Contains(warned[0], "Deployment alice/web") {
		t.Errorf("the manager's warnings of undispatched workloads: %q; want one for Deployment alice/web", warned)
	}
	worker, err := renderCluster(t, files, "gpu-b", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range worker.Warnings() {
		if strings.Contains(d.Message, "MultiKueue") {
			t.Errorf("the worker warns: %s", d.Error())
		}
	}
}
