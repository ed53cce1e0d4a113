package monitoring

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// build runs kustomize on deploy/dir, as `kubectl apply -k` does.
func build(t *testing.T, dir string) map[string]*unstructured.Unstructured {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "deploy", dir))
	if err != nil {
		t.Fatalf("kustomize build deploy/%s: %v", dir, err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, r := range rm.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(js, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs[u.GetKind()+"/"+u.GetName()] = u
	}
	return objs
}

// TestKustomization: deploy/monitoring builds to its ServiceMonitor, PrometheusRule and the
// dashboard's ConfigMap (labelled for the Grafana sidecar, holding the dashboard file as is),
// in gpuctl-system; the ServiceMonitor selects the Service of deploy/base by its labels and
// port name, and the alerts' job label is that Service's name.
func TestKustomization(t *testing.T) {
	objs := build(t, "monitoring")
	if len(objs) != 3 {
		t.Errorf("deploy/monitoring builds %d objects (%v), want 3", len(objs), slices.Sorted(maps.Keys(objs)))
	}
	for key, u := range objs {
		if u.GetNamespace() != "gpuctl-system" {
			t.Errorf("%s in namespace %q, want gpuctl-system", key, u.GetNamespace())
		}
	}
	cm, sm, pr := objs["ConfigMap/gpuctl-grafana-dashboard"], objs["ServiceMonitor/gpuctl-reconciler"], objs["PrometheusRule/gpuctl-reconciler"]
	if cm == nil || sm == nil || pr == nil {
		t.Fatalf("deploy/monitoring builds %v, want ConfigMap/gpuctl-grafana-dashboard, ServiceMonitor/gpuctl-reconciler, PrometheusRule/gpuctl-reconciler", slices.Sorted(maps.Keys(objs)))
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard's ConfigMap has labels %v, want grafana_dashboard: \"1\" (the Grafana sidecar's default)", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if data["gpuctl.json"] != string(repoFile(t, dashboardFile)) {
		t.Errorf("the ConfigMap's gpuctl.json is not %s", dashboardFile)
	}

	svc := build(t, "base")["Service/gpuctl-reconciler"]
	if svc == nil {
		t.Fatal("deploy/base has no Service gpuctl-reconciler")
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s; the Service's labels are %v", k, v, svc.GetLabels())
		}
	}
	if len(selector) == 0 {
		t.Error("the ServiceMonitor selects every Service")
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	for _, e := range endpoints {
		port, _, _ := unstructured.NestedString(e.(map[string]any), "port")
		found := false
		for _, p := range ports {
			name, _, _ := unstructured.NestedString(p.(map[string]any), "name")
			found = found || name == port
		}
		if !found {
			t.Errorf("the ServiceMonitor scrapes port %q, which the Service does not name (%v)", port, ports)
		}
	}
	if !strings.Contains(string(repoFile(t, ruleFile)), `up{job="`+svc.GetName()+`"}`) {
		t.Errorf("%s does not select up{job=%q}, the job of the Service the ServiceMonitor scrapes", ruleFile, svc.GetName())
	}
}
