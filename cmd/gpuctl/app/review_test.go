package app_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/test/gittest"
)

const reviewQuota = "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  alice: {gpu: 4}\n"

// reviewRepo commits a job (base), then raises its GPUs above alice's quota (tag over).
func reviewRepo(t *testing.T) *gittest.Remote {
	t.Helper()
	r := gittest.New(t, nil)
	r.Commit("base", map[string]string{
		".gpuctl.yaml":         "namespaces: [{path: teams/*/**, namespace: $1}]\n",
		"quotas/q.yaml":        reviewQuota,
		"teams/alice/sft.yaml": job,
	})
	r.Git("tag", "base")
	r.Commit("over", map[string]string{"teams/alice/sft.yaml": strings.Replace(job, "gpu: 2", "gpu: 6", 1)})
	r.Git("tag", "over")
	return r
}

func TestDiffBaseExitCodes(t *testing.T) {
	r := reviewRepo(t)
	cases := map[string]struct {
		args []string
		code int
		want string
	}{
		"no changes":                        {[]string{"--base", "base", "--head", "base"}, 0, "0 added, 0 changed, 0 removed"},
		"changes and violations":            {[]string{"--base", "base", "--head", "over"}, app.ExitFailed, "team alice requests 6 GPUs, above its quota of 4"},
		"fail on violations only, none new": {[]string{"--base", "over", "--head", "over", "--fail-on", "violations"}, 0, "(already in base)"},
		"working tree is the head":          {[]string{"--base", "over"}, 0, "0 added, 0 changed, 0 removed"},
		"unknown revision":                  {[]string{"--base", "nope"}, app.ExitTrouble, "revision nope"},
		"markdown":                          {[]string{"--base", "base", "--head", "over", "-o", "markdown"}, app.ExitFailed, "| alice | 2 | 6 | 4 | ❌ over quota |"},
		"head without base":                 {[]string{"--head", "over"}, app.ExitTrouble, "--head needs --base"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, append([]string{"diff", r.Work}, tc.args...)...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d (want %d), output lacks %q?\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}

func TestDiffBaseWorkingTreeJSON(t *testing.T) {
	r := reviewRepo(t)
	r.Write(map[string]string{"teams/alice/new.yaml": strings.Replace(job, "name: sft", "name: sft-2", 1)})
	out, errOut, code := run(t, "diff", r.Work, "--base", "HEAD", "-o", "json", "--fail-on", "violations")
	if code != app.ExitFailed { // alice was over quota (6 > 4) and the new file raises it: a new violation
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var rep struct {
		Head    struct{ Name string }
		Changes []struct{ Action, Kind, Name, Source string }
		Summary struct{ Added, Errors int }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Head.Name != "working tree" || rep.Summary.Added != 1 || rep.Changes[0].Source != "teams/alice/new.yaml" || rep.Summary.Errors != 1 {
		t.Errorf("unexpected report: %+v\n%s", rep, out)
	}
}

// A change to .gpuctl.yaml in the working tree fails the review, and the head is rendered with
// the base's mapping: emptying it does not let a team directory hold a ClusterRoleBinding.
func TestDiffBaseAdminFileChanged(t *testing.T) {
	r := reviewRepo(t)
	r.Write(map[string]string{
		".gpuctl.yaml": "namespaces: []\n",
		"teams/alice/crb.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: x}\n" +
			"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: Group, name: alice, apiGroup: rbac.authorization.k8s.io}]\n",
	})
	out, errOut, code := run(t, "diff", r.Work, "--base", "HEAD", "--fail-on", "violations")
	if !strings.Contains(out, ".gpuctl.yaml: error: [policy] admin file .gpuctl.yaml is modified in this change: an admin must review it") ||
		!regexp.MustCompile(`(?m)^teams/alice/crb\.yaml:\d+: error: \[render\] .*ClusterRoleBinding`).MatchString(out) {
		t.Errorf("output lacks the admin file and the render violations:\n%s%s", out, errOut)
	}
	if code != app.ExitFailed {
		t.Errorf("exit %d, want %d", code, app.ExitFailed)
	}
}
