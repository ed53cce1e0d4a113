package app

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// failedPlan is a plan with one object to create and one that could not be planned.
func failedPlan() *reconciler.Plan {
	return &reconciler.Plan{Changes: []*reconciler.Change{
		{Object: object.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team", Name: "ok"}, Action: reconciler.ActionCreate},
		{Object: object.Ref{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Name: "take"},
			Action: reconciler.ActionSkipped, Source: "teams/team/crb.yaml",
			Error: "refused by rule tenant-scope: ClusterRoleBinding is cluster-scoped"},
	}}
}

// TestPlanWithFailuresPrintsAndFails: diff and sync --dry-run print a failed object's error
// under its header, the summary counts it, and the command exits with ExitTrouble.
func TestPlanWithFailuresPrintsAndFails(t *testing.T) {
	var diff bytes.Buffer
	printPlanDiff(&diff, failedPlan(), palette{})
	want := "= skipped ClusterRoleBinding take (teams/team/crb.yaml)\n  error: refused by rule tenant-scope: ClusterRoleBinding is cluster-scoped\n"
	if !strings.Contains(diff.String(), want) || !strings.Contains(diff.String(), "1 to create, 1 failed") {
		t.Fatalf("diff output:\n%s", diff.String())
	}
	var out, errOut bytes.Buffer
	err := finishPlanOnly(Streams{Out: &out, Err: &errOut}, "text", failedPlan(), palette{}, true)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitTrouble || err.Error() != "1 object could not be planned" {
		t.Fatalf("sync --dry-run of a plan with a failure: %v", err)
	}
	if !strings.Contains(out.String(), want) {
		t.Fatalf("sync --dry-run output:\n%s", out.String())
	}
	if err := planFailed(&reconciler.Plan{Changes: failedPlan().Changes[:1]}); err != nil {
		t.Fatalf("a plan without failures: %v", err)
	}
}

// TestChangeSetCountsPlanFailures: a change that failed at plan time is a failed row of the
// sync table.
func TestChangeSetCountsPlanFailures(t *testing.T) {
	cs := &reconciler.ChangeSet{Results: []reconciler.Result{
		{Object: failedPlan().Changes[0].Object, Action: reconciler.ActionCreate},
		{Object: failedPlan().Changes[1].Object, Action: reconciler.ActionSkipped, Error: failedPlan().Changes[1].Error},
	}}
	var out bytes.Buffer
	printChangeSet(&out, cs, palette{})
	if !strings.Contains(out.String(), "failed: refused by rule tenant-scope") || !strings.Contains(out.String(), "sync: 1 created, 1 failed") {
		t.Fatalf("change set:\n%s", out.String())
	}
}

// TestTakeBackPrinted: a change that takes fields back from another manager says so in the
// diff, and the sync table says what it took back.
func TestTakeBackPrinted(t *testing.T) {
	ref := object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	tb := []reconciler.Conflict{{Manager: "kubectl", Field: ".spec.replicas"}}
	var diff bytes.Buffer
	printPlanDiff(&diff, &reconciler.Plan{Changes: []*reconciler.Change{{Object: ref, Action: reconciler.ActionUpdate, TakeBack: tb}}}, palette{})
	if !strings.Contains(diff.String(), "  take back: .spec.replicas from \"kubectl\"\n") {
		t.Fatalf("diff output:\n%s", diff.String())
	}
	var out bytes.Buffer
	printChangeSet(&out, &reconciler.ChangeSet{Results: []reconciler.Result{{Object: ref, Action: reconciler.ActionUpdate, TakenBack: tb}}}, palette{})
	if !strings.Contains(out.String(), `ok, took back .spec.replicas from "kubectl"`) {
		t.Fatalf("change set:\n%s", out.String())
	}
}

// TestPlanNodeDiffValues: a node's label diff prints its values as object.Display does: a
// missing value as <none>, never Go's map[…] form.
func TestPlanNodeDiffValues(t *testing.T) {
	plan := &reconciler.Plan{Changes: []*reconciler.Change{{
		Object: object.Ref{APIVersion: "v1", Kind: "Node", Name: "gpu-1"}, Action: reconciler.ActionUpdate,
		Diff: []object.FieldDiff{{Path: "metadata.labels.g8s.host/pool", New: "training-pool"},
			{Path: "metadata.labels.team", Old: "a"}, {Path: "spec.taints", Old: []any{map[string]any{"key": "k", "effect": "NoSchedule"}}}},
	}}}
	var out bytes.Buffer
	printPlanDiff(&out, plan, palette{})
	for _, want := range []string{"  metadata.labels.g8s.host/pool: <none> → training-pool\n", "  metadata.labels.team: a → <none>\n",
		`  spec.taints: [{"effect":"NoSchedule","key":"k"}] → <none>` + "\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, out.String())
		}
	}
}

// TestPlanDiffMasksSecrets: the diff of a Secret created, changed and pruned shows its keys
// and no value: a value that changes as '*** (before)' and '*** (after)', like kubectl diff.
func TestPlanDiffMasksSecrets(t *testing.T) {
	secret := func(data, stringData map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "hf", "namespace": "alice"}}}
		if data != nil {
			u.Object["data"] = data
		}
		if stringData != nil {
			u.Object["stringData"] = stringData
		}
		return u
	}
	ref := object.Ref{APIVersion: "v1", Kind: "Secret", Namespace: "alice", Name: "hf"}
	live := secret(map[string]any{"HF_TOKEN": "b2xkLXRva2Vu", "KEEP": "a2VlcC1tZQ=="}, nil)
	plan := &reconciler.Plan{Changes: []*reconciler.Change{
		{Object: ref, Action: reconciler.ActionCreate, Desired: secret(nil, map[string]any{"HF_TOKEN": "new-token"})},
		{Object: ref, Action: reconciler.ActionUpdate, Live: live, Predicted: secret(map[string]any{"HF_TOKEN": "bmV3LXRva2Vu", "KEEP": "a2VlcC1tZQ=="}, nil)},
		{Object: ref, Action: reconciler.ActionDelete, Live: live},
	}}
	var out bytes.Buffer
	printPlanDiff(&out, plan, palette{})
	for _, want := range []string{"  +  HF_TOKEN: '***'\n", "  -  HF_TOKEN: '*** (before)'\n", "  +  HF_TOKEN: '*** (after)'\n",
		"     KEEP: '***'\n", "  -  KEEP: '***'\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, out.String())
		}
	}
	for _, v := range []string{"new-token", "bmV3LXRva2Vu", "b2xkLXRva2Vu", "a2VlcC1tZQ=="} {
		if strings.Contains(out.String(), v) {
			t.Errorf("diff shows %q:\n%s", v, out.String())
		}
	}
}
