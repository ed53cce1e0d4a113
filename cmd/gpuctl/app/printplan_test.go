package app

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/reconciler"
)

// failedPlan is a plan with one object to create and one that could not be planned.
func failedPlan() *reconciler.Plan {
	return &reconciler.Plan{Changes: []*reconciler.Change{
		{Object: reconciler.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "team", Name: "ok"}, Action: reconciler.ActionCreate},
		{Object: reconciler.ObjectRef{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding", Name: "take"},
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
	ref := reconciler.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "team", Name: "web"}
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
