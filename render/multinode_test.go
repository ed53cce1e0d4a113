package render_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// TestMultiNodeRules: the multiNode setting and what it changes in the diagnostics of a
// multi-node job's retries.
func TestMultiNodeRules(t *testing.T) {
	const multi = "kind: training\nversion: v0.1\njob:\n  name: sft\n  retries: {onExitCodes: [75]}\n" +
		"environment: {image: registry.example.com/train:v1}\nresources: {gpu: 1, node_count: 2}\n"
	checkRuleCases(t, map[string]ruleCase{
		"unknown multiNode": {files: map[string]string{".gpuctl.yaml": "multiNode: jobsets\n"},
			want: []string{`/repo/.gpuctl.yaml:1:12: multiNode: unknown multiNode "jobsets", did you mean "jobset"?`}},
		"multiNode of another type": {files: map[string]string{".gpuctl.yaml": "multiNode: [jobset]\n"},
			want: []string{`/repo/.gpuctl.yaml:1:12: multiNode: expected a string, got a list`}},
		"retries of a multi-node Job are ignored": {valid: true, files: map[string]string{"train.yaml": multi},
			want: []string{`/repo/train.yaml:5:12: warning: job.retries: ignored: a multi-node job is not retried with multiNode job (backoffLimit 0); jobset restarts all its ranks together`}},
		"retries of a multi-node JobSet hold": {valid: true, files: map[string]string{".gpuctl.yaml": "multiNode: jobset\n", "train.yaml": multi}},
	})
}

// TestJobSetControllerMayOwnInTenantNamespaces: with multiNode jobset, the admission policy
// lets the JobSet controller set the owners of the Jobs and the Service it makes in a tenant
// namespace (rule owner-references); without, it is a client like any other.
func TestJobSetControllerMayOwnInTenantNamespaces(t *testing.T) {
	for mode, want := range map[string]bool{"": false, render.MultiNodeJob: false, render.MultiNodeJobSet: true} {
		objs := render.AdmissionPolicy(&render.Config{MultiNode: mode}, []string{"alice"})
		data, err := render.MarshalYAML(objs)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(data), render.JobSetControllerUser); got != want {
			t.Errorf("multiNode %q: the policy names %s: %v, want %v", mode, render.JobSetControllerUser, got, want)
		}
	}
}
