package edit_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/render"
)

// fleet is a repository of two clusters, hub and gpu-a (docs/fleet.md): shared files, and
// alice's files in each cluster's directory.
func fleet() map[string]string {
	return map[string]string{
		".gpuctl.yaml":                        teamConfig,
		"teams/bob/sft.yaml":                  "kind: training\nversion: v0.1\njob: {name: shared-sft}\nenvironment: {image: x}\n",
		"clusters/hub/teams/alice/chat.yaml":  "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice: {port: 80}\n",
		"clusters/gpu-a/teams/alice/big.yaml": "kind: training\nversion: v0.1\njob: {name: qwen2-7b-sft}\nenvironment: {image: x}\n",
	}
}

// TestCreateForACluster (issue 37): with a Cluster, a team's new file goes to
// clusters/<Cluster>/<its directory> in a repository of several clusters, so that no other
// cluster runs it, and is checked by the render for that cluster; without a Cluster, or in a
// repository without clusters/, it goes to the shared directory, as before. A name that only
// another cluster has is free.
func TestCreateForACluster(t *testing.T) {
	one := existing()
	for name, c := range map[string]struct {
		files   map[string]string
		cluster string
		want    string
	}{
		"a fleet, for hub":            {fleet(), "hub", "clusters/hub/teams/alice/sft.yaml"},
		"a fleet, for gpu-a":          {fleet(), "gpu-a", "clusters/gpu-a/teams/alice/sft.yaml"},
		"a fleet, for no cluster":     {fleet(), "", "teams/alice/sft.yaml"},
		"one cluster, named":          {one, "hub", "teams/alice/sft.yaml"},
		"one cluster, for no cluster": {one, "", "teams/alice/sft.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, c.files)
			r.Cluster = c.cluster
			job := strings.Replace(newJob, "qwen2-7b-sft", "sft", 1)
			res, err := r.Create([]edit.File{{Name: "sft.yaml", Data: []byte(job)}}, edit.CreateOptions{Team: "alice"})
			ch := oneChange(t)(res, err)
			if ch.Path != c.want || len(res.Workloads) != 1 || res.Workloads[0].ID() != "alice.sft" || res.Workloads[0].File != c.want {
				t.Fatalf("created %s, workloads %+v; want alice.sft in %s", ch.Path, res.Workloads, c.want)
			}
		})
	}

	// The render for hub checks the file where it goes: its team is alice there too.
	r := memRepo(t, fleet())
	r.Cluster = "hub"
	bobs := strings.Replace(newJob, "  name: qwen2-7b-sft\n", "  name: x\n  namespace: bob\n", 1)
	_, err := r.Create([]edit.File{{Name: "x.yaml", Data: []byte(bobs)}}, edit.CreateOptions{Team: "alice"})
	if !is[*render.ValidationError](err) || !strings.Contains(err.Error(), `files in clusters/hub/teams/alice/ belong to namespace "alice" and cannot place jobs in "bob"`) {
		t.Errorf("another team's namespace in clusters/hub/teams/alice/: %T %v", err, err)
	}
	// gpu-a's qwen2-7b-sft is not hub's; hub's chat is.
	if _, err := r.Create([]edit.File{{Name: "q.yaml", Data: []byte(newJob)}}, edit.CreateOptions{Team: "alice"}); err != nil {
		t.Errorf("a name that only gpu-a has: %v", err)
	}
	chat := "kind: inference\nversion: v0.1\njob: {name: chat}\nenvironment: {image: v}\nservice: {port: 80}\n"
	if _, err := r.Create([]edit.File{{Name: "c.yaml", Data: []byte(chat)}}, edit.CreateOptions{Team: "alice"}); !is[*edit.NameExistsError](err) ||
		!strings.Contains(err.Error(), "(clusters/hub/teams/alice/chat.yaml)") {
		t.Errorf("a name that hub has: %T %v", err, err)
	}
}

// TestCreateForAnUnknownCluster: a Cluster with no clusters/NAME/ directory, or that is no
// cluster name, is the error of gpuctl validate --cluster NAME, and nothing is created.
func TestCreateForAnUnknownCluster(t *testing.T) {
	for _, cluster := range []string{"nope", "../teams"} {
		r := memRepo(t, fleet())
		_, want := render.New(render.Options{Cluster: cluster}).Render(r.FS, "/repo")
		if want == nil {
			t.Fatalf("render for %q: no error", cluster)
		}
		r.Cluster = cluster
		res, err := r.Create([]edit.File{{Name: "sft.yaml", Data: []byte(newJob)}}, edit.CreateOptions{Team: "alice"})
		if err == nil || err.Error() != want.Error() {
			t.Errorf("cluster %q: got %v (%+v)\nwant %v", cluster, err, res, want)
		}
	}
}

// TestCreateInAClusterPath: a path below clusters/NAME/ is rendered for NAME (its files, its
// tenancy), also without a Cluster; a path of another cluster than the Repo's, or clusters/
// itself, is refused: no render would check a file there.
func TestCreateInAClusterPath(t *testing.T) {
	job := strings.Replace(newJob, "qwen2-7b-sft", "sft", 1)
	for name, c := range map[string]struct {
		cluster, path string
		data          string
		want          string // the file created, or a part of the error
	}{
		"gpu-a's path, no cluster":      {"", "clusters/gpu-a/teams/alice", job, "clusters/gpu-a/teams/alice/sft.yaml"},
		"hub's path, for hub":           {"hub", "clusters/hub/jobs", job, "clusters/hub/jobs/sft.yaml"},
		"a shared path, for hub":        {"hub", "teams/alice", job, "teams/alice/sft.yaml"},
		"a name of gpu-a, in gpu-a":     {"", "clusters/gpu-a/teams/alice", newJob, `training "qwen2-7b-sft" already exists in namespace "alice" (clusters/gpu-a/teams/alice/big.yaml)`},
		"gpu-a's path, for hub":         {"hub", "clusters/gpu-a/teams/alice", job, `path "clusters/gpu-a/teams/alice": is in the directory of cluster "gpu-a", not of cluster "hub"`},
		"clusters/ itself":              {"", "clusters", job, `path "clusters": a file directly in clusters/ belongs to no cluster`},
		"clusters/ itself, for hub":     {"hub", "clusters/", job, `path "clusters": a file directly in clusters/ belongs to no cluster`},
		"a cluster that does not exist": {"", "clusters/nope/teams/alice", job, `cluster "nope": no directory clusters/nope/`},
		"a pool in alice's, in gpu-a":   {"", "clusters/gpu-a/teams/alice", "kind: pool\nversion: v0.1\nmetadata: {name: mine}\n", "cannot live in a team directory (clusters/gpu-a/teams/alice/)"},
	} {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, fleet())
			r.Cluster = c.cluster
			res, err := r.Create([]edit.File{{Name: "sft.yaml", Data: []byte(c.data)}}, edit.CreateOptions{Path: c.path})
			if strings.HasSuffix(c.want, ".yaml") {
				if ch := oneChange(t)(res, err); ch.Path != c.want {
					t.Fatalf("created %s, want %s", ch.Path, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v (%+v)\nwant an error saying %s", err, res, c.want)
			}
		})
	}
}

// TestEditInACluster: the edits of a Repo for a cluster find a job of its directory and change
// the file where it is; without the cluster, a job of clusters/ is not found (render reads
// none of it), and another cluster's never is.
func TestEditInACluster(t *testing.T) {
	r := memRepo(t, fleet())
	r.Cluster = "hub"
	ch := oneChange(t)(r.Scale("inference", edit.JobRef{Name: "chat"}, 2))
	if ch.Path != "clusters/hub/teams/alice/chat.yaml" || !strings.Contains(string(ch.New), "replicas: 2") {
		t.Errorf("scale: %s\n%s", ch.Path, ch.New)
	}
	if ch := oneChange(t)(r.Delete(edit.JobRef{Name: "shared-sft"})); ch.Path != "teams/bob/sft.yaml" {
		t.Errorf("delete of a shared job: %s", ch.Path)
	}
	for cluster, ref := range map[string]edit.JobRef{"": {Name: "chat"}, "hub": {Namespace: "alice", Name: "qwen2-7b-sft"}} {
		r.Cluster = cluster
		if _, err := r.Pause(ref); !is[*edit.NotFoundError](err) {
			t.Errorf("cluster %q: pause %s: %T %v, want not found", cluster, ref, err, err)
		}
	}
}
