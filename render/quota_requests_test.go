package render_test

import (
	"strings"
	"testing"
)

// teamQuota gives namespaces alice (cpu, memory, gpu) and gpuonly (gpu only) a quota.
const teamQuota = "kind: quota\nversion: v0.1\nmetadata: {name: team-quota}\nusers:\n" +
	"  alice: {cpu: 8, memory: 16Gi, gpu: 2}\n  gpuonly: {gpu: 2}\n"

// plainJob is a Job whose container main gets the resources block given (indented for its place).
func plainJob(resources string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: etl}\nspec:\n  template:\n    spec:\n" +
		"      restartPolicy: Never\n      containers:\n        - name: main\n          image: busybox\n" + indent(resources, 10)
}

// TestQuotaRequestWarnings: a workload in a namespace whose quota (from the same render)
// counts cpu or memory, with a container that requests neither (nor limits it), is a warning
// naming the file:line, the container and the missing request: the API server would refuse
// its pods (failed quota: must specify requests.cpu).
func TestQuotaRequestWarnings(t *testing.T) {
	const why = `which the ResourceQuota team-quota of namespace "alice" (quotas/q.yaml) requires: its pods would be refused (failed quota: must specify %s), ` +
		"set them on the container (a limit alone sets the request too), or give the namespace a LimitRange with defaults"
	missing := func(what string) string { return strings.Replace(why, "%s", what, 1) }
	cases := map[string]struct {
		files map[string]string
		want  []string // warnings, exactly
	}{
		"plain Job without requests": {files: map[string]string{"teams/alice/job.yaml": plainJob("")},
			want: []string{`/repo/teams/alice/job.yaml:9:11: spec.template.spec.containers[0].resources: container "main" lacks requests.cpu, requests.memory, ` + missing("requests.cpu, requests.memory")}},
		"plain Job with a cpu request only": {files: map[string]string{"teams/alice/job.yaml": plainJob("resources: {requests: {cpu: 100m}}")},
			want: []string{`/repo/teams/alice/job.yaml:11:22: spec.template.spec.containers[0].resources: container "main" lacks requests.memory, ` + missing("requests.memory")}},
		"plain Job with limits only": {files: map[string]string{"teams/alice/job.yaml": plainJob("resources: {limits: {cpu: 1, memory: 1Gi}}")}},
		"plain Job with requests":    {files: map[string]string{"teams/alice/job.yaml": plainJob("resources: {requests: {cpu: 1, memory: 1Gi}}")}},
		"an init container without requests": {files: map[string]string{"teams/alice/job.yaml": plainJob("resources: {requests: {cpu: 1, memory: 1Gi}}") +
			"      initContainers:\n        - name: fetch\n          image: busybox\n"},
			want: []string{`/repo/teams/alice/job.yaml:13:11: spec.template.spec.initContainers[0].resources: container "fetch" lacks requests.cpu, requests.memory, ` + missing("requests.cpu, requests.memory")}},
		"a CronJob of an admin directory placed in the namespace": {files: map[string]string{"platform/cron.yaml": "apiVersion: batch/v1\nkind: CronJob\n" +
			"metadata: {name: nightly, namespace: alice}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n" +
			"          restartPolicy: Never\n          containers: [{name: c, image: busybox, resources: {requests: {memory: 1Gi}}}]\n"},
			want: []string{`/repo/platform/cron.yaml:11:61: spec.jobTemplate.spec.template.spec.containers[0].resources: container "c" lacks requests.cpu, ` + missing("requests.cpu")}},
		"a Deployment and a Pod": {files: map[string]string{"teams/alice/web.yaml": deployment("", "") + "---\n" +
			"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n    - name: c\n      image: busybox\n"},
			want: []string{
				`/repo/teams/alice/web.yaml:11:11: spec.template.spec.containers[0].resources: container "main" lacks requests.cpu, requests.memory, ` + missing("requests.cpu, requests.memory"),
				`/repo/teams/alice/web.yaml:19:7: spec.containers[0].resources: container "c" lacks requests.cpu, requests.memory, ` + missing("requests.cpu, requests.memory")}},
		"a gpuctl training without cpu and memory": {files: map[string]string{"teams/alice/train.yaml": training},
			want: []string{
				`/repo/teams/alice/train.yaml:8:3: resources.cpu: not set, and the ResourceQuota team-quota of namespace "alice" (quotas/q.yaml) counts requests.cpu: the job's pods would be refused (failed quota: must specify requests.cpu), set resources.cpu`,
				`/repo/teams/alice/train.yaml:8:3: resources.memory: not set, and the ResourceQuota team-quota of namespace "alice" (quotas/q.yaml) counts requests.memory: the job's pods would be refused (failed quota: must specify requests.memory), set resources.memory`}},
		"a gpuctl training with cpu and memory": {files: map[string]string{"teams/alice/train.yaml": training + "  cpu: 4\n  memory: 8Gi\n"}},
		"a quota on GPUs only":                  {files: map[string]string{"teams/gpuonly/job.yaml": plainJob("")}},
		"a namespace without a quota":           {files: map[string]string{"teams/bob/job.yaml": plainJob("")}},
		"a LimitRange with defaults": {files: map[string]string{"teams/alice/job.yaml": plainJob(""),
			"platform/limits.yaml": "apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: alice}\nspec:\n  limits:\n" +
				"    - type: Container\n      default: {memory: 1Gi}\n      defaultRequest: {cpu: 100m}\n"}},
		"a LimitRange with a cpu default only": {files: map[string]string{"teams/alice/job.yaml": plainJob(""),
			"platform/limits.yaml": "apiVersion: v1\nkind: LimitRange\nmetadata: {name: defaults, namespace: alice}\nspec:\n  limits:\n" +
				"    - type: Container\n      defaultRequest: {cpu: 100m}\n"},
			want: []string{`/repo/teams/alice/job.yaml:9:11: spec.template.spec.containers[0].resources: container "main" lacks requests.memory, ` + missing("requests.memory")}},
		"a plain ResourceQuota on limits": {files: map[string]string{"teams/bob/job.yaml": plainJob("resources: {requests: {cpu: 1}}"),
			"platform/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: lim, namespace: bob}\nspec:\n  hard: {limits.cpu: '4', pods: '10'}\n"},
			want: []string{`/repo/teams/bob/job.yaml:11:22: spec.template.spec.containers[0].resources: container "main" lacks limits.cpu, which the ResourceQuota lim of namespace "bob" (platform/quota.yaml) requires: its pods would be refused (failed quota: must specify limits.cpu), set them on the container (a limit alone sets the request too), or give the namespace a LimitRange with defaults`}},
		"a scoped ResourceQuota": {files: map[string]string{"teams/bob/job.yaml": plainJob(""),
			"platform/quota.yaml": "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: be, namespace: bob}\nspec:\n  hard: {requests.cpu: '4'}\n  scopes: [NotBestEffort]\n"}},
		"a Job built by kustomize": {files: map[string]string{"teams/alice/app/job.yaml": plainJob(""),
			"teams/alice/app/kustomization.yaml": "resources: [job.yaml]\nnamePrefix: prod-\n"},
			want: []string{`/repo/teams/alice/app/job.yaml:9:11: spec.template.spec.containers[0].resources: container "main" lacks requests.cpu, requests.memory, ` + missing("requests.cpu, requests.memory")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{".gpuctl.yaml": tenantConfig, "quotas/q.yaml": teamQuota}
			for f, c := range tc.files {
				files[f] = c
			}
			res, err := renderFiles(t, files)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			var got []string
			for _, d := range res.Warnings() {
				got = append(got, d.Error())
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				at, rest, _ := strings.Cut(w, ": ")
				want[i] = at + ": warning: " + rest
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("warnings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}
