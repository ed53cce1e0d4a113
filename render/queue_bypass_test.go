package render_test

import (
	"strings"
	"testing"
)

// queueBypassAttacks are the ways around a team's Kueue queue that a tenant file can take
// (issue "Tenancy, round two", finding 1): an owner Kueue takes for one of its integrations
// (its webhooks then neither label, gate nor suspend the pod or Job) next to one the garbage
// collector cannot resolve (it then never deletes it), a scheduling gate of the team's own, a
// Job handed to another manager, and Kueue's pod-group keys. Each is refused with its
// file:line, field and rule.
func queueBypassAttacks() map[string]tenancyCase {
	const evil = "/repo/teams/alice/evil.yaml"
	kueue := func(files map[string]string) map[string]string {
		files[".gpuctl.yaml"] = kueueConfig
		files["quota.yaml"] = quotaFile("alice: {cpu: 64, memory: 512Gi, gpu: 0}\n")
		return files
	}
	one := func(content string) map[string]string {
		return kueue(map[string]string{"teams/alice/evil.yaml": content})
	}
	// owners are the forged references of the review's reproduction, indented for metadata.
	const owners = "ownerReferences:\n" +
		"  - {apiVersion: apps/v1, kind: Deployment, name: web, uid: 00000000-0000-0000-0000-000000000001, controller: true}\n" +
		"  - {apiVersion: example.com/v1, kind: Nowhere, name: x, uid: 00000000-0000-0000-0000-000000000002}\n"
	const mkLabels = "kueue.x-k8s.io/multikueue-origin: multikueue, kueue.x-k8s.io/prebuilt-workload-name: job-j-1a2b3"
	mkMsg := func(key string) string {
		return key + " is Kueue's own key; a tenant sets only kueue.x-k8s.io/queue-name and kueue.x-k8s.io/priority-class"
	}
	const gpus = "  containers:\n    - name: c\n      image: busybox\n      resources: {limits: {nvidia.com/gpu: 8}}\n"
	const ownersMsg = "pod policy owner-references: owner references are set by controllers, never in a tenant directory: " +
		"Kueue does not queue a pod or Job whose owner is a kind it integrates, and the garbage collector keeps one whose owner it cannot find"
	return map[string]tenancyCase{
		"a Pod of 8 GPUs owned by a forged Deployment": {admin: true,
			files: one("apiVersion: v1\nkind: Pod\nmetadata:\n  name: miner\n" + indent(owners, 2) + "spec:\n" + gpus),
			want:  []string{evil + ":6:5: metadata.ownerReferences: " + ownersMsg}},
		"a ReplicaSet owned by a forged Deployment": {admin: true,
			files: one("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: miners\n" + indent(owners, 2) +
				"spec:\n  replicas: 4\n  selector: {matchLabels: {app: m}}\n  template:\n    metadata: {labels: {app: m}}\n    spec:\n" + indent(gpus, 4)),
			want: []string{evil + ":6:5: metadata.ownerReferences: " + ownersMsg}},
		"owners in a Deployment's pod template": {admin: true,
			files: one("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata:\n" +
				"      labels: {app: web}\n" + indent(owners, 6) + "    spec:\n" + indent(gpus, 4)),
			want: []string{evil + ":11:9: spec.template.metadata.ownerReferences: " + ownersMsg}},
		"owners in a CronJob's job template": {admin: true,
			files: one("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    metadata:\n" + indent(owners, 6) +
				"    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: c, image: busybox}]\n"),
			want: []string{evil + ":9:9: spec.jobTemplate.metadata.ownerReferences: " + ownersMsg}},
		"owners patched in by kustomize": {admin: true, files: kueue(map[string]string{
			"teams/alice/pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: miner}\nspec:\n" + gpus,
			"teams/alice/kustomization.yaml": "resources: [pod.yaml]\npatches:\n  - target: {kind: Pod}\n    patch: |-\n" +
				"      - {op: add, path: /metadata/ownerReferences, value: [{apiVersion: batch/v1, kind: Job, name: j, uid: u, controller: true}]}\n"}),
			want: []string{"/repo/teams/alice/kustomization.yaml: metadata.ownerReferences: kustomize output Pod alice/miner: " + ownersMsg}},
		"a scheduling gate of the team's own": {admin: true,
			files: one("apiVersion: v1\nkind: Pod\nmetadata: {name: gated}\nspec:\n  schedulingGates: [{name: kueue.x-k8s.io/admission}]\n" + gpus),
			want:  []string{evil + ":5:20: spec.schedulingGates: pod policy scheduling-gates: a tenant's pods carry no scheduling gates: Kueue gates the pods it queues and removes its gate when it admits them"}},
		"a Job managed by another controller": {admin: true,
			files: one("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  managedBy: example.com/runner\n  template:\n    spec:\n      restartPolicy: Never\n" + indent(gpus, 4)),
			want:  []string{evil + ":5:14: spec.managedBy: pod policy managed-by: a Job is run by Kubernetes' Job controller (kubernetes.io/job-controller) and admitted by Kueue; another manager would take it out of the team's queue"}},
		"a CronJob's Jobs managed by another controller": {admin: true,
			files: one("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      managedBy: kueue.x-k8s.io/multikueue\n" +
				"      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: c, image: busybox}]\n"),
			want: []string{evil + ":8:18: spec.jobTemplate.spec.managedBy: pod policy managed-by: a Job is run by Kubernetes' Job controller (kubernetes.io/job-controller) and admitted by Kueue; another manager would take it out of the team's queue"}},
		// MultiKueue's labels would make a worker's reconciler take the Job for the manager's
		// copy (keys.MultiKueueCopy): never pruned, never a shadow.
		"a Job claiming to be a MultiKueue copy": {admin: true,
			files: one("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  labels: {" + mkLabels + "}\nspec:\n  template:\n    metadata:\n      labels: {" + mkLabels + "}\n" +
				"    spec:\n      restartPolicy: Never\n" + indent(gpus, 4)),
			want: []string{
				evil + ":5:46: metadata.labels[kueue.x-k8s.io/multikueue-origin]: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/multikueue-origin"),
				evil + ":5:97: metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/prebuilt-workload-name"),
				evil + ":9:50: spec.template.metadata.labels[kueue.x-k8s.io/multikueue-origin]: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/multikueue-origin"),
				evil + ":9:101: spec.template.metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/prebuilt-workload-name")}},
		"MultiKueue's labels added by kustomize": {admin: true, files: kueue(map[string]string{
			"teams/alice/job.yaml":           "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n" + indent(gpus, 4),
			"teams/alice/kustomization.yaml": "resources: [job.yaml]\nlabels:\n  - pairs: {" + mkLabels + "}\n    includeTemplates: true\n"}),
			want: []string{
				"/repo/teams/alice/kustomization.yaml: metadata.labels[kueue.x-k8s.io/multikueue-origin]: kustomize output Job alice/j: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/multikueue-origin"),
				"/repo/teams/alice/kustomization.yaml: metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: kustomize output Job alice/j: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/prebuilt-workload-name"),
				"/repo/teams/alice/kustomization.yaml: spec.template.metadata.labels[kueue.x-k8s.io/multikueue-origin]: kustomize output Job alice/j: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/multikueue-origin"),
				"/repo/teams/alice/kustomization.yaml: spec.template.metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: kustomize output Job alice/j: tenancy kueue-labels: " + mkMsg("kueue.x-k8s.io/prebuilt-workload-name")}},
		"a Pod in a pod group of its own": {admin: true,
			files: one("apiVersion: v1\nkind: Pod\nmetadata:\n  name: grouped\n  labels: {kueue.x-k8s.io/pod-group-name: g}\n  annotations: {kueue.x-k8s.io/pod-group-total-count: '1'}\nspec:\n" + gpus),
			want: []string{
				evil + ":5:43: metadata.labels[kueue.x-k8s.io/pod-group-name]: tenancy kueue-labels: kueue.x-k8s.io/pod-group-name is Kueue's own key; a tenant sets only kueue.x-k8s.io/queue-name and kueue.x-k8s.io/priority-class",
				evil + ":6:55: metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: tenancy kueue-labels: kueue.x-k8s.io/pod-group-total-count is Kueue's own key; a tenant sets only kueue.x-k8s.io/queue-name and kueue.x-k8s.io/priority-class"}},
	}
}

// TestQueueBypassAllowed: what the queue rules leave to a team: a Job that names Kubernetes'
// own Job controller, an empty list of owners or gates.
func TestQueueBypassAllowed(t *testing.T) {
	_, got := errorsOf(t, map[string]string{
		"teams/alice/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, ownerReferences: []}\nspec:\n  managedBy: kubernetes.io/job-controller\n" +
			"  template:\n    spec:\n      restartPolicy: Never\n      schedulingGates: []\n      containers: [{name: c, image: busybox}]\n",
	})
	if len(got) > 0 {
		t.Errorf("errors:\n  %s", strings.Join(got, "\n  "))
	}
}
