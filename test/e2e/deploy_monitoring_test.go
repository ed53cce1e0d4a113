package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkMonitoring is deploy/monitoring's promise (its rules and dashboard are checked by
// test/monitoring): a ServiceMonitor, a PrometheusRule and the dashboard's ConfigMap (dry-run;
// the Prometheus Operator's kinds are not, having no CRDs here), the ConfigMap labelled for the
// Grafana sidecar and holding grafana-dashboard.json as is; the ServiceMonitor selects the
// Service of deploy/base by its labels and port name, and the alerts' job label is that
// Service's name.
func checkMonitoring(t *testing.T, objs []*unstructured.Unstructured, kinds map[string]int) {
	wantKinds(t, kinds, map[string]int{"ServiceMonitor": 1, "PrometheusRule": 1, "ConfigMap": 1})
	cm := find(t, objs, "ConfigMap", "gpuctl-grafana-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard's ConfigMap has labels %v, want grafana_dashboard: \"1\" (the Grafana sidecar's default)", cm.GetLabels())
	}
	dashboard, err := os.ReadFile(filepath.Join(deployDir, "monitoring", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); data["gpuctl.json"] != string(dashboard) {
		t.Error("the ConfigMap's gpuctl.json is not deploy/monitoring/grafana-dashboard.json")
	}

	svc := find(t, buildDeploy(t, "base"), "Service", "gpuctl-reconciler")
	sm := find(t, objs, "ServiceMonitor", "gpuctl-reconciler")
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(selector) == 0 {
		t.Error("the ServiceMonitor selects every Service")
	}
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s; the Service's labels are %v", k, v, svc.GetLabels())
		}
	}
	ports := map[string]bool{}
	svcPorts, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	for _, p := range svcPorts {
		name, _, _ := unstructured.NestedString(p.(map[string]any), "name")
		ports[name] = true
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	for _, e := range endpoints {
		if port, _, _ := unstructured.NestedString(e.(map[string]any), "port"); !ports[port] {
			t.Errorf("the ServiceMonitor scrapes port %q, which the Service does not name (%v)", port, ports)
		}
	}
	pr := find(t, objs, "PrometheusRule", "gpuctl-reconciler")
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if !strings.Contains(fmt.Sprint(groups), `up{job="`+svc.GetName()+`"}`) {
		t.Errorf("the PrometheusRule does not select up{job=%q}, the job of the Service the ServiceMonitor scrapes", svc.GetName())
	}
}
