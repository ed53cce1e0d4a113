package render_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// kueueConfig is tenantConfig with queueing kueue.
const kueueConfig = tenantConfig + "queueing: kueue\n"

// kueuePools declares pool-a and pool-b.
const kueuePools = "kind: pool\nversion: v0.1\nmetadata: {name: pool-a}\nnodes: {n1: {}}\n---\n" +
	"kind: pool\nversion: v0.1\nmetadata: {name: pool-b}\nnodes: {n2: {}}\n"

// quotaFile is a quota document with the given users block (indented below users:).
func quotaFile(users string) string {
	return "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n" + indent(users, 2)
}

// queueSummary writes a ClusterQueue's quota as one line per flavor: resource=nominal, with
// /borrow B and /lend L where set.
func queueSummary(cq *unstructured.Unstructured) []string {
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	var out []string
	for _, f := range groups[0].(map[string]any)["flavors"].([]any) {
		fm := f.(map[string]any)
		line := fm["name"].(string) + ":"
		for _, r := range fm["resources"].([]any) {
			rm := r.(map[string]any)
			line += fmt.Sprintf(" %s=%s", rm["name"], rm["nominalQuota"])
			if b, ok := rm["borrowingLimit"]; ok {
				line += fmt.Sprintf("/borrow %s", b)
			}
			if l, ok := rm["lendingLimit"]; ok {
				line += fmt.Sprintf("/lend %s", l)
			}
		}
		out = append(out, line)
	}
	return out
}

// findObject returns the rendered object of a kind and name (namespace "" for any), or nil.
func findObject(objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name && (namespace == "" || o.GetNamespace() == namespace) {
			return o
		}
	}
	return nil
}

// TestKueueQuotaPerPool: without pools every flavor (pools in file order, then default) gets
// the team's numbers and limits; with pools a listed pool gets its entry, a field it leaves
// out the team's, an unlisted pool 0; a lending limit is at most the nominal quota.
func TestKueueQuotaPerPool(t *testing.T) {
	res, err := renderFiles(t, map[string]string{
		".gpuctl.yaml": kueueConfig,
		"pools.yaml":   kueuePools,
		"quota.yaml": quotaFile("alice:\n  cpu: 10\n  memory: 20Gi\n  gpu: 4\n  borrowingLimit: {gpu: 2}\n  lendingLimit: {gpu: 1, cpu: 50}\n" +
			"bob:\n  cpu: 8\n  memory: 16Gi\n  gpu: 0\n  borrowing-limit: {cpu: 4}\n" +
			"  pools:\n    pool-a: {gpu: 8, lendingLimit: {gpu: 2}, borrowingLimit: {cpu: 1}}\n    default: {cpu: 2}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"alice": {
			"pool-a: cpu=10/lend 10 memory=20Gi nvidia.com/gpu=4/borrow 2/lend 1",
			"pool-b: cpu=10/lend 10 memory=20Gi nvidia.com/gpu=4/borrow 2/lend 1",
			"default: cpu=10/lend 10 memory=20Gi nvidia.com/gpu=4/borrow 2/lend 1"},
		"bob": {
			"pool-a: cpu=8/borrow 1 memory=16Gi nvidia.com/gpu=8/lend 2",
			"pool-b: cpu=0/borrow 4 memory=0 nvidia.com/gpu=0",
			"default: cpu=2/borrow 4 memory=16Gi nvidia.com/gpu=0"},
	}
	for team, lines := range want {
		cq := findObject(res.Objects, "ClusterQueue", "", team)
		if cq == nil {
			t.Fatalf("no ClusterQueue %s", team)
		}
		if got := queueSummary(cq); !slices.Equal(got, lines) {
			t.Errorf("ClusterQueue %s:\n  %s\nwant:\n  %s", team, strings.Join(got, "\n  "), strings.Join(lines, "\n  "))
		}
		if c, _, _ := unstructured.NestedString(cq.Object, "spec", "cohortName"); c != keys.KueueCohort {
			t.Errorf("ClusterQueue %s: cohort %q", team, c)
		}
		if sel, _, _ := unstructured.NestedString(cq.Object, "spec", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"); sel != team {
			t.Errorf("ClusterQueue %s is fed by namespace %q", team, sel)
		}
		if cq.GetAnnotations()[keys.Source] != "quota.yaml" || cq.GetLabels()[keys.ManagedBy] != keys.ManagedByValue {
			t.Errorf("ClusterQueue %s: labels %v, annotations %v", team, cq.GetLabels(), cq.GetAnnotations())
		}
		lq := findObject(res.Objects, "LocalQueue", team, keys.KueueLocalQueue)
		if to, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue"); to != team {
			t.Errorf("LocalQueue %s/default points at %q", team, to)
		}
	}
	if rq := findObject(res.Objects, "ResourceQuota", "", "q"); rq != nil {
		t.Errorf("queueing kueue rendered a ResourceQuota: %s", object.RefOf(rq))
	}
	if findObject(res.Objects, "Namespace", "", "bob") == nil {
		t.Error("the team's Namespace is not rendered")
	}
	if f := findObject(res.Objects, "ResourceFlavor", "", "pool-a"); f == nil || f.Object["spec"].(map[string]any)["nodeLabels"].(map[string]any)[keys.Pool] != "pool-a" {
		t.Errorf("ResourceFlavor pool-a: %v", f)
	}
	if f := findObject(res.Objects, "ResourceFlavor", "", keys.DefaultPool); f == nil || len(f.Object["spec"].(map[string]any)) != 0 {
		t.Errorf("ResourceFlavor default must select no node label: %v", f)
	}
	for name, value := range map[string]int64{keys.PriorityClassHigh: keys.PriorityValueHigh, keys.PriorityClassMedium: keys.PriorityValueMedium, keys.PriorityClassLow: keys.PriorityValueLow} {
		if c := findObject(res.Objects, "WorkloadPriorityClass", "", name); c == nil || c.Object["value"] != value {
			t.Errorf("WorkloadPriorityClass %s: %v, want value %d", name, c, value)
		}
	}
	var order []string
	for _, o := range res.Objects {
		if strings.HasPrefix(o.GetAPIVersion(), keys.KueueGroup+"/") || o.GetKind() == "Namespace" {
			order = append(order, object.RefOf(o).String())
		}
	}
	if want := []string{"Namespace alice", "Namespace bob", "ResourceFlavor default", "ResourceFlavor pool-a", "ResourceFlavor pool-b",
		"WorkloadPriorityClass gpuctl-high", "WorkloadPriorityClass gpuctl-low", "WorkloadPriorityClass gpuctl-medium",
		"ClusterQueue alice", "ClusterQueue bob", "LocalQueue alice/default", "LocalQueue bob/default"}; !slices.Equal(order, want) {
		t.Errorf("order:\n  %s\nwant:\n  %s", strings.Join(order, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestKueueWorkloads: a team's workloads carry the queue and priority labels (object and
// pod template), a training Job is suspended; a workload in a namespace without a team is
// not queued, with a warning; with resourcequota nothing is queued.
func TestKueueWorkloads(t *testing.T) {
	inference := "kind: inference\nversion: v0.1\njob: {name: web, priority: low}\nenvironment: {image: vllm}\nservice: {port: 8000}\nresources: {gpu: 1}\n"
	notebook := "kind: notebook\nversion: v0.1\njob: {name: nb}\nenvironment: {image: jupyter}\n"
	multi := strings.Replace(training, "name: sft", "name: ddp\n  priority: high", 1) + "  node_count: 2\n"
	files := map[string]string{
		".gpuctl.yaml":            kueueConfig,
		"quota.yaml":              quotaFile("alice: {cpu: 10, memory: 20Gi, gpu: 4}\n"),
		"teams/alice/sft.yaml":    training,
		"teams/alice/ddp.yaml":    multi,
		"teams/alice/web.yaml":    inference,
		"teams/alice/nb.yaml":     notebook,
		"teams/carol/orphan.yaml": strings.Replace(training, "name: sft", "name: orphan", 1),
	}
	res, err := renderFiles(t, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ kind, name, priority string }{
		{"Job", "sft", "gpuctl-medium"}, {"Job", "ddp", "gpuctl-high"}, {"Deployment", "web", "gpuctl-low"}, {"StatefulSet", "nb", "gpuctl-medium"},
	} {
		o := findObject(res.Objects, c.kind, "alice", c.name)
		tmpl, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		for what, labels := range map[string]map[string]string{"object": o.GetLabels(), "pod template": tmpl} {
			if labels[keys.KueueQueueName] != keys.KueueLocalQueue || labels[keys.KueuePriorityClass] != c.priority {
				t.Errorf("%s %s: %s labels %v", c.kind, c.name, what, labels)
			}
		}
		if suspend, found, _ := unstructured.NestedBool(o.Object, "spec", "suspend"); (c.kind == "Job") != (found && suspend) {
			t.Errorf("%s %s: spec.suspend %v (set: %v)", c.kind, c.name, suspend, found)
		}
	}
	if svc := findObject(res.Objects, "Service", "alice", "svc-web"); svc.GetLabels()[keys.KueueQueueName] != "" {
		t.Errorf("a Service is not queued: %v", svc.GetLabels())
	}
	orphan := findObject(res.Objects, "Job", "carol", "orphan")
	if _, found, _ := unstructured.NestedBool(orphan.Object, "spec", "suspend"); found || orphan.GetLabels()[keys.KueueQueueName] != "" {
		t.Errorf("a job of a namespace without a team is queued: %v", orphan.Object)
	}
	var warnings []string
	for _, d := range res.Warnings() {
		warnings = append(warnings, d.Error())
	}
	if want := []string{`/repo/teams/carol/orphan.yaml:1:1: warning: job.namespace: not queued: namespace "carol" has no team (no user of a kind: quota document), so Kueue neither queues the job nor counts it against a quota, give the namespace a quota, or move the file to a team's directory`}; !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n  %s\nwant:\n  %s", strings.Join(warnings, "\n  "), strings.Join(want, "\n  "))
	}

	files[".gpuctl.yaml"] = tenantConfig
	res, err = renderFiles(t, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if strings.HasPrefix(o.GetAPIVersion(), keys.KueueGroup+"/") || o.GetLabels()[keys.KueueQueueName] != "" {
			t.Errorf("resourcequota renders %s with Kueue's objects or labels", object.RefOf(o))
		}
	}
	if findObject(res.Objects, "ResourceQuota", "alice", "q") == nil {
		t.Error("resourcequota renders no ResourceQuota")
	}
}

// TestKueueRules: the rules of queueing and of the quota's new fields, each with its file,
// line, field and message.
func TestKueueRules(t *testing.T) {
	kueue := func(users string) map[string]string {
		return map[string]string{".gpuctl.yaml": kueueConfig, "pools.yaml": kueuePools, "quota.yaml": quotaFile(users)}
	}
	checkRuleCases(t, map[string]ruleCase{
		"unknown queueing": {files: map[string]string{".gpuctl.yaml": "queueing: kueu\n"},
			want: []string{`/repo/.gpuctl.yaml:1:11: queueing: unknown queueing "kueu", did you mean "kueue"?`}},
		"queueing of another type": {files: map[string]string{".gpuctl.yaml": "queueing: [kueue]\n"},
			want: []string{`/repo/.gpuctl.yaml:1:11: queueing: expected a string, got a list`}},
		"missing cpu with kueue": {files: kueue("alice: {memory: 20Gi, gpu: 4}\n"),
			want: []string{`/repo/quota.yaml:5:3: users.alice: with queueing kueue, set cpu (here, or in every entry of pools): Kueue admits only what a quota covers, write 0 for none, e.g. gpu: 0`}},
		"missing gpu in one pool entry": {files: kueue("alice:\n  cpu: 1\n  memory: 1Gi\n  pools: {pool-a: {gpu: 4}, pool-b: {cpu: 2}}\n"),
			want: []string{`/repo/quota.yaml:5:3: users.alice: with queueing kueue, set gpu (here, or in every entry of pools)`}},
		"every resource in every pool entry": {valid: true, files: kueue("alice:\n  pools: {pool-a: {cpu: 1, memory: 1Gi, gpu: 4}}\n")},
		"unknown pool": {files: kueue("alice:\n  cpu: 1\n  memory: 1Gi\n  gpu: 1\n  pools: {pool-c: {gpu: 4}}\n"),
			want: []string{`/repo/quota.yaml:9:13: users.alice.pools.pool-c: no pool document in this tree declares pool "pool-c", did you mean "pool-a"?`}},
		"unknown pool without a near name": {files: kueue("alice:\n  cpu: 1\n  memory: 1Gi\n  gpu: 1\n  pools: {inference: {gpu: 4}}\n"),
			want: []string{`users.alice.pools.inference: no pool document in this tree declares pool "inference", expected one of pool-a, pool-b, default`}},
		"the default pool needs no document": {valid: true, files: kueue("alice: {cpu: 1, memory: 1Gi, gpu: 1, pools: {default: {gpu: 2}}}\n")},
		"negative limit": {files: kueue("alice: {cpu: 1, memory: 1Gi, gpu: 1, lendingLimit: {memory: -1Gi}}\n"),
			want: []string{`/repo/quota.yaml:5:63: users.alice.lendingLimit.memory: must be 0 or more, got -1Gi`}},
		"negative pool gpu": {files: kueue("alice: {cpu: 1, memory: 1Gi, gpu: 1, pools: {pool-a: {gpu: -1}}}\n"),
			want: []string{`users.alice.pools.pool-a.gpu: must be 0 or more, got -1`}},
		"unknown field of a pool entry": {files: kueue("alice: {cpu: 1, memory: 1Gi, gpu: 1, pools: {pool-a: {gpus: 1}}}\n"),
			want: []string{`users.alice.pools.pool-a.gpus: unknown field "gpus", did you mean "gpu"?`}},
		"pools and limits ignored with resourcequota": {valid: true, files: map[string]string{"pools.yaml": kueuePools,
			"quota.yaml": quotaFile("alice:\n  gpu: 1\n  borrowingLimit: {gpu: 1}\n  pools: {pool-a: {gpu: 4}}\n")},
			want: []string{
				`/repo/quota.yaml:7:21: warning: users.alice.borrowingLimit: ignored: queueing is resourcequota; per-pool quotas, borrowing and lending need queueing: kueue in .gpuctl.yaml`,
				`/repo/quota.yaml:8:12: warning: users.alice.pools: ignored: queueing is resourcequota`}},
		"at least one resource with resourcequota": {files: map[string]string{"quota.yaml": quotaFile("alice: {pools: {default: {gpu: 1}}}\n")},
			want: []string{`/repo/quota.yaml:5:3: users.alice: set at least one of cpu, memory, gpu`}},
		"a Kueue kind in tenancy.kinds": {files: map[string]string{".gpuctl.yaml": "tenancy:\n  kinds: [ConfigMap, LocalQueue.kueue.x-k8s.io, ClusterQueue.kueue.x-k8s.io]\n"},
			want: []string{
				`/repo/.gpuctl.yaml:2:22: tenancy.kinds[1]: LocalQueue.kueue.x-k8s.io is Kueue's, and Kueue's objects are the admin's`,
				`/repo/.gpuctl.yaml:2:49: tenancy.kinds[2]: ClusterQueue.kueue.x-k8s.io is Kueue's`}},
		"a GPU share is never admitted": {valid: true, files: map[string]string{".gpuctl.yaml": kueueConfig, "quota.yaml": quotaFile("alice: {cpu: 1, memory: 1Gi, gpu: 1}\n"),
			"teams/alice/share.yaml": strings.Replace(training, "gpu: 2", "gpu-share: 4Gi", 1)},
			want: []string{`/repo/teams/alice/share.yaml:8:14: warning: resources.gpu-share: Kueue admits only what the team's ClusterQueue covers (cpu, memory, nvidia.com/gpu), not aliyun.com/gpu-mem`}},
	})
}

// kueueTenantAttacks are the attacks of a team on the queues (tenancy kueue-labels, kinds):
// another team's queue, a made-up priority class, Kueue's own keys, Kueue's kinds.
func kueueTenantAttacks() map[string]tenancyCase {
	const evil = "/repo/teams/alice/evil.yaml"
	one := func(content string) map[string]string { return map[string]string{"teams/alice/evil.yaml": content} }
	// web is a Deployment whose pod template metadata (line 9) is meta.
	web := func(meta string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n" +
			indent(meta, 6) + "    spec:\n      containers: [{name: main, image: nginx}]\n"
	}
	return map[string]tenancyCase{
		"another team's queue": {admin: true, files: one(web("labels: {app: web, kueue.x-k8s.io/queue-name: bob}")),
			want: []string{evil + `:9:53: spec.template.metadata.labels[kueue.x-k8s.io/queue-name]: tenancy kueue-labels: queue "bob" is not the namespace's queue: only default (the team's LocalQueue) may be named`}},
		"a made-up priority class": {admin: true, files: one(web("labels: {app: web, kueue.x-k8s.io/priority-class: gpuctl-urgent}")),
			want: []string{evil + `:9:57: spec.template.metadata.labels[kueue.x-k8s.io/priority-class]: tenancy kueue-labels: only the WorkloadPriorityClasses gpuctl-low, gpuctl-medium, gpuctl-high are allowed`}},
		"a pod group": {admin: true, files: one(web("labels: {app: web, kueue.x-k8s.io/pod-group-name: g}")),
			want: []string{evil + `:9:57: spec.template.metadata.labels[kueue.x-k8s.io/pod-group-name]: tenancy kueue-labels: kueue.x-k8s.io/pod-group-name is Kueue's own key; a tenant sets only kueue.x-k8s.io/queue-name and kueue.x-k8s.io/priority-class`}},
		"a workload annotation": {admin: true, files: one(web("labels: {app: web}\nannotations: {kueue.x-k8s.io/workload: bob-job}")),
			want: []string{evil + `:10:46: spec.template.metadata.annotations[kueue.x-k8s.io/workload]: tenancy kueue-labels: kueue.x-k8s.io/workload is Kueue's own key; a tenant sets only kueue.x-k8s.io/queue-name and kueue.x-k8s.io/priority-class`}},
		"a CronJob's job template in another queue": {admin: true, files: one("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n" +
			"    metadata: {labels: {kueue.x-k8s.io/queue-name: bob}}\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: c, image: busybox}]\n"),
			want: []string{evil + `:7:52: spec.jobTemplate.metadata.labels[kueue.x-k8s.io/queue-name]: tenancy kueue-labels: queue "bob" is not the namespace's queue: only default (the team's LocalQueue) may be named`}},
		"high priority outside highPriorityNamespaces": {files: map[string]string{".gpuctl.yaml": tenantConfig + "tenancy: {highPriorityNamespaces: [bob]}\n",
			"teams/alice/evil.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {kueue.x-k8s.io/priority-class: gpuctl-high}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n"},
			want: []string{evil + `:5:43: metadata.labels[kueue.x-k8s.io/priority-class]: tenancy kueue-labels: gpuctl-high is not allowed in namespace "alice" (tenancy.highPriorityNamespaces)`}},
		"kustomize labels into another queue": {admin: true, files: map[string]string{
			"teams/alice/web.yaml":           web("labels: {app: web}"),
			"teams/alice/kustomization.yaml": "resources: [web.yaml]\nlabels:\n  - pairs: {kueue.x-k8s.io/queue-name: bob}\n    includeTemplates: true\n"},
			want: []string{
				`/repo/teams/alice/kustomization.yaml: metadata.labels[kueue.x-k8s.io/queue-name]: kustomize output Deployment alice/web: tenancy kueue-labels: queue "bob" is not the namespace's queue: only default (the team's LocalQueue) may be named`,
				`/repo/teams/alice/kustomization.yaml: spec.template.metadata.labels[kueue.x-k8s.io/queue-name]: kustomize output Deployment alice/web: tenancy kueue-labels: queue "bob" is not the namespace's queue: only default (the team's LocalQueue) may be named`}},
		"a LocalQueue": {admin: true, files: one("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: steal}\nspec: {clusterQueue: bob}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: LocalQueue.kueue.x-k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
		"a Workload": {admin: true, files: one("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w}\nspec: {queueName: default, podSets: []}\n"),
			want: []string{evil + ":2:7: kind: tenancy kinds: Workload.kueue.x-k8s.io is not a kind that a tenant directory (teams/alice/) may hold, an admin may allow a namespaced kind in tenancy.kinds of .gpuctl.yaml"}},
	}
}

// TestKueueLabelsAllowed: a tenant may name its LocalQueue and a gpuctl priority class, on the
// object and the pod template; gpuctl's own queued workloads pass the same rule.
func TestKueueLabelsAllowed(t *testing.T) {
	_, got := errorsOf(t, map[string]string{
		".gpuctl.yaml": kueueConfig,
		"quota.yaml":   quotaFile("alice: {cpu: 1, memory: 1Gi, gpu: 1}\n"),
		"teams/alice/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: {kueue.x-k8s.io/queue-name: default}\nspec:\n" +
			"  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n      labels: {app: web, kueue.x-k8s.io/queue-name: default, kueue.x-k8s.io/priority-class: gpuctl-high}\n" +
			"    spec:\n      containers: [{name: main, image: nginx}]\n",
		"teams/alice/k/kustomization.yaml": "resources: [job.yaml]\n",
		"teams/alice/k/job.yaml":           strings.Replace(training, "name: sft", "name: sft\n  priority: high", 1),
	})
	if len(got) > 0 {
		t.Errorf("errors:\n  %s", strings.Join(got, "\n  "))
	}
}

// TestQueueingIsAKnownConfig: ParseConfig reads queueing, and Kueue() says whether it is kueue.
func TestQueueingIsAKnownConfig(t *testing.T) {
	for in, want := range map[string]bool{"": false, "queueing: resourcequota\n": false, "queueing: kueue\n": true} {
		cfg, diags := render.ParseConfig("c.yaml", []byte("version: v0.1\n"+in))
		if len(diags) > 0 || cfg.Kueue() != want {
			t.Errorf("%q: Kueue() = %v, diagnostics %v", in, cfg.Kueue(), diags)
		}
	}
	if (*render.Config)(nil).Kueue() {
		t.Error("a nil configuration is not kueue")
	}
}

// Every Job and CronJob of a team namespace waits for Kueue, whoever wrote it: a team's plain
// Job written with suspend: false (which every sync would apply again, starting it before Kueue
// admits it) is rendered suspended, with the queue label and a warning on its line; a CronJob's
// Jobs likewise; a plain Job of a namespace without a team is left as written.
func TestKueueSuspendsEveryJobOfATeam(t *testing.T) {
	job := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\nspec:\n  suspend: false\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: i}]\n"
	cron := "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\nspec:\n  schedule: '0 1 * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: m, image: i}]\n"
	res, err := renderFiles(t, map[string]string{
		".gpuctl.yaml":           kueueConfig,
		"quota.yaml":             quotaFile("alice: {cpu: 10, memory: 20Gi, gpu: 4}\n"),
		"teams/alice/run.yaml":   fmt.Sprintf(job, "run"),
		"teams/alice/cron.yaml":  cron,
		"teams/carol/plain.yaml": fmt.Sprintf(job, "plain"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, name string
		path       []string
	}{{"Job", "run", nil}, {"CronJob", "nightly", []string{"spec", "jobTemplate"}}} {
		o := findObject(res.Objects, c.kind, "alice", c.name)
		suspend, _, _ := unstructured.NestedBool(o.Object, append(c.path, "spec", "suspend")...)
		labels, _, _ := unstructured.NestedStringMap(o.Object, append(c.path, "metadata", "labels")...)
		if !suspend || labels[keys.KueueQueueName] != keys.KueueLocalQueue {
			t.Errorf("%s %s: suspend %v, labels %v", c.kind, c.name, suspend, labels)
		}
	}
	plain := findObject(res.Objects, "Job", "carol", "plain")
	if suspend, _, _ := unstructured.NestedBool(plain.Object, "spec", "suspend"); suspend || plain.GetLabels()[keys.KueueQueueName] != "" {
		t.Errorf("a Job of a namespace without a team is queued: %v", plain.Object)
	}
	var warned bool
	for _, d := range res.Warnings() {
		warned = warned || (strings.Contains(d.Error(), "teams/alice/run.yaml:1:1:") && strings.Contains(d.Error(), "suspend false is rendered as true"))
	}
	if !warned {
		t.Errorf("no warning on the Job written with suspend: false: %v", res.Warnings())
	}
}
