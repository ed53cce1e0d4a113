package review

import (
	"strconv"
	"strings"
	"testing"
)

// gpuJob is a training job of gpu A100s in pool ("": the default pool).
func gpuJob(name, pool string, gpu int) string {
	p := ""
	if pool != "" {
		p = "  pool: " + pool + "\n"
	}
	return "kind: training\nversion: v0.1\njob: {name: " + name + "}\nenvironment: {image: pytorch}\nresources:\n" +
		p + "  gpu: " + strconv.Itoa(gpu) + "\n  gpu-type: A100-80G\n"
}

// clusterRevisions are a base and a head of a repository of two clusters: the head adds a
// 4-GPU job to cluster a and an 8-GPU job to cluster b, and a 1-GPU job every cluster gets.
func clusterRevisions() (base, head *Revision) {
	pool := func(name, node string) string {
		return "kind: pool\nversion: v0.1\nmetadata: {name: " + name + "}\nnodes:\n  " + node + ": {gpu-type: A100-80G}\n"
	}
	files := map[string]string{
		"clusters/a/pools.yaml":    pool("a-pool", "a-0"),
		"clusters/b/pools.yaml":    pool("b-pool", "b-0"),
		"clusters/a/jobs/old.yaml": gpuJob("a-old", "a-pool", 2),
		"clusters/b/jobs/old.yaml": gpuJob("b-old", "b-pool", 2),
	}
	base = &Revision{Name: "base", Files: files}
	head = &Revision{Name: "head", Files: map[string]string{
		"clusters/a/jobs/new.yaml": gpuJob("a-new", "a-pool", 4),
		"clusters/b/jobs/new.yaml": gpuJob("b-new", "b-pool", 8),
		"jobs/shared.yaml":         gpuJob("shared", "", 1),
	}}
	for p, c := range files {
		head.Files[p] = c
	}
	return base, head
}

// TestClusterBudget: a review for cluster a shows a's changes and GPU budget only, b's only
// b's; a cluster neither revision has is an error naming its directory.
func TestClusterBudget(t *testing.T) {
	tests := map[string]struct {
		before, after int64
		changed       []string
	}{
		"a": {before: 2, after: 2 + 4 + 1, changed: []string{"a-new", "shared"}},
		"b": {before: 2, after: 2 + 8 + 1, changed: []string{"b-new", "shared"}},
	}
	for cluster, tc := range tests {
		t.Run(cluster, func(t *testing.T) {
			base, head := clusterRevisions()
			rep, err := composeFor(base, head, ".", cluster)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Budget.Before != tc.before || rep.Budget.After != tc.after {
				t.Errorf("budget %d → %d, want %d → %d: %+v", rep.Budget.Before, rep.Budget.After, tc.before, tc.after, rep.Budget.Lines)
			}
			var names []string
			for _, c := range rep.Changes {
				if c.Ref.Kind == "Job" {
					names = append(names, c.Ref.Name)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.changed, ",") {
				t.Errorf("changed jobs %v, want %v", names, tc.changed)
			}
			if rep.Cluster != cluster || !strings.Contains(Markdown(rep, MarkdownOptions{}), "for cluster `"+cluster+"`") {
				t.Errorf("the report does not name cluster %q", cluster)
			}
			// Each cluster's review is its own pull-request comment.
			if md := Markdown(rep, MarkdownOptions{}); !strings.HasPrefix(md, "<!-- gpuctl-review cluster="+cluster+" -->\n") {
				t.Errorf("the comment of cluster %s starts %.60q, want its own marker", cluster, md)
			}
		})
	}
	base, head := clusterRevisions()
	if _, err := composeFor(base, head, ".", "c"); err == nil || !strings.Contains(err.Error(), "clusters/c/") {
		t.Errorf("cluster c: %v, want an error naming clusters/c/", err)
	}
}

// TestClusterAddedInHead: a cluster that the head adds has, in the base, the shared files
// only: its budget starts from what every cluster gets.
func TestClusterAddedInHead(t *testing.T) {
	base, head := clusterRevisions()
	base.Files["jobs/shared.yaml"] = head.Files["jobs/shared.yaml"]
	head.Files["clusters/c/jobs/c.yaml"] = gpuJob("c-job", "", 2)
	rep, err := composeFor(base, head, ".", "c")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Budget.Before != 1 || rep.Budget.After != 3 {
		t.Errorf("budget %d → %d, want 1 → 3", rep.Budget.Before, rep.Budget.After)
	}
}
