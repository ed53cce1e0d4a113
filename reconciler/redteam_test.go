package reconciler_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hpa is a HorizontalPodAutoscaler file of the given API version and maximum.
func hpa(apiVersion, ns, max string) string {
	meta := "metadata: {name: platform-scaler}\n"
	if ns != "" {
		meta = "metadata: {name: platform-scaler, namespace: " + ns + "}\n"
	}
	return "apiVersion: " + apiVersion + "\nkind: HorizontalPodAutoscaler\n" + meta +
		"spec: {minReplicas: 1, maxReplicas: " + max + ", scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: platform-agent}}\n"
}

// TestRedTeamSecondVersionOfAnAdminObject: the platform declares a HorizontalPodAutoscaler in
// a team's namespace (autoscaling/v2, at most 2 replicas); the team declares the same object
// as autoscaling/v1 (at most 100). Render sees two objects; the engine refuses the team's
// with the rule and both files, applies the platform's, and the team never takes it over.
func TestRedTeamSecondVersionOfAnAdminObject(t *testing.T) {
	e := newEnv(t, reconciler.DefaultOptions())
	ns := "tenant-h"
	createNamespace(e, ns)
	objs := renderFiles(t, map[string]string{
		".gpuctl.yaml":              "namespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"platform/hpa.yaml":         hpa("autoscaling/v2", ns, "2"),
		"teams/" + ns + "/hpa.yaml": hpa("autoscaling/v1", "", "100"),
	})
	plan := e.plan(objs)
	var refused []string
	for _, c := range plan.Changes {
		if c.Object.Kind == "HorizontalPodAutoscaler" && c.Error != "" {
			refused = append(refused, c.Object.Version()+": "+c.Error)
		}
	}
	want := "v1: refused by rule declared-once: autoscaling/v2 HorizontalPodAutoscaler tenant-h/platform-scaler is also declared (declared in platform/hpa.yaml)"
	if strings.Join(refused, "\n") != want {
		t.Fatalf("refused:\n%s\nwant\n%s", strings.Join(refused, "\n"), want)
	}
	if _, err := e.apply(plan); err == nil {
		t.Fatal("the apply of a plan with a refused change reports no error")
	}
	got, err := e.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(e.ctx, "platform-scaler", metav1.GetOptions{})
	if err != nil || got.Spec.MaxReplicas != 2 {
		t.Fatalf("the platform's HorizontalPodAutoscaler: %v, maxReplicas %v; want 2", err, got.Spec.MaxReplicas)
	}
}
