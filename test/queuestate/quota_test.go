package queuestate

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// With queueing kueue a team's quota is its ClusterQueue: the real Kueue admits a 12-GPU job
// of a team of 8 by borrowing 4 from the other team of its cohort and queues the next, and get
// quotas, describe quota, a team's scope and the page show it by pool.
func TestQuotasOfRealKueue(t *testing.T) {
	const team, lender, cohort = "qq-team", "qq-lender", "qq-cohort"
	c := testcluster.Current()
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	apply(t, dyn, "ResourceFlavor", "", pool, map[string]any{"spec": map[string]any{"nodeLabels": map[string]any{keys.Pool: pool}}})
	apply(t, dyn, "WorkloadPriorityClass", "", "gpuctl-medium", map[string]any{"value": int64(500000)})
	createTeams(t, kube, dyn, team, lender)
	for _, ns := range []string{team, lender} {
		cq := clusterQueue(ns, "")
		cq["metadata"] = map[string]any{"labels": map[string]any{keys.Quota: "team-quota", keys.ManagedBy: keys.ManagedByValue}}
		cq["spec"].(map[string]any)["cohortName"] = cohort
		apply(t, dyn, "ClusterQueue", "", ns, cq)
		apply(t, dyn, "LocalQueue", ns, keys.KueueLocalQueue, map[string]any{"spec": map[string]any{"clusterQueue": ns}})
	}
	trainingJob(t, kube, team, "big", "medium", 12)
	r := &cluster.Reader{Client: kube, Dynamic: dyn}
	waitRows(t, r, team, "big to be admitted", func(rows map[string]cluster.JobPod) bool {
		return state(rows["big"]) == cluster.QueueAdmitted
	})
	trainingJob(t, kube, team, "next", "medium", 8)

	var desc string
	waitFor(t, "the ClusterQueue's status to count the queued job", func(context.Context) bool {
		desc = gpuctl(t, "describe", "quota", team)
		return strings.Contains(desc, "1 pending, 1 admitted")
	})
	for _, want := range []string{"Quota:       team-quota (ClusterQueue qq-team, cohort qq-cohort)", "GPU:         12/8 ",
		"Pools:\n  POOL      GPU    CPU    MEMORY      BORROWED   BORROWING LIMIT   LENDING LIMIT\n" +
			"  qs-pool   12/8   1/64   1Gi/512Gi   gpu=4      <none>            <none>\n",
		"Use by job:\n"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe quota lacks %q:\n%s", want, desc)
		}
	}
	out := gpuctl(t, "get", "quotas", "-o", "wide")
	if l := line(out, "qq-team "); !strings.HasPrefix(out, "TEAM ") || !strings.Contains(out, " POOL ") ||
		strings.Join(strings.Fields(l), " ") != "qq-team qs-pool 12/8 1/64 1Gi/512Gi gpu=4 [##########] 150% <none> <none> 1 1" {
		t.Errorf("get quotas -o wide, qq-team: %q\n%s", l, out)
	}
	if l := line(out, "qq-lender "); strings.Join(strings.Fields(l), " ") != "qq-lender qs-pool 0/8 0/64 0/512Gi <none> [----------] 0% <none> <none> 0 0" {
		t.Errorf("get quotas -o wide, qq-lender: %q", l)
	}

	// A team's scope sees its own ClusterQueue only; the page draws a bar per team and pool.
	if list, err := cluster.Scope(r, []string{team}).Quotas(t.Context()); err != nil || len(list.Items) != 1 || list.Items[0].Queue == nil {
		t.Errorf("qq-team's scope (%v): %+v", err, list)
	}
	h := httpapi.New(httpapi.Options{Kube: kube, Dynamic: dyn, Tokens: oneToken{}, Registry: prometheus.NewRegistry()})
	if page := get(t, h, "/"); !strings.Contains(page, "ClusterQueue qq-team, pool qs-pool") {
		t.Errorf("the page lacks qq-team's bar:\n%s", page)
	}
}
