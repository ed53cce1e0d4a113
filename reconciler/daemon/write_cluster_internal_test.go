package daemon

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/render"
)

// fleetTree is reviewTree as a repository of two clusters, hub and gpu-a (docs/fleet.md):
// the shared files, and alice's and bob's jobs in the clusters' directories.
func fleetTree() map[string]string {
	t := maps.Clone(reviewTree)
	t["clusters/hub/teams/alice/hub-sft.yaml"] = trainingFile("hub-sft", "registry.example.com/train:v1", "", 1, 1)
	t["clusters/hub/teams/bob/bob-hub.yaml"] = trainingFile("bob-hub", "registry.example.com/train:v1", "", 1, 1)
	t["clusters/gpu-a/teams/alice/a-sft.yaml"] = trainingFile("a-sft", "registry.example.com/train:v1", "", 1, 1)
	return t
}

// TestWriteForACluster (issue 37): the daemon of cluster hub (--cluster hub) puts a new file
// in clusters/hub/ — a team's in clusters/hub/<its directory>, an admin's of namespace default
// in clusters/hub/<default's directory> — so that no other cluster runs it; without
// --cluster, or in a repository without clusters/, where it did before (the shared
// directories). A job of clusters/hub/ is found and edited where it is.
func TestWriteForACluster(t *testing.T) {
	sft := edit.File{Name: "yamlContent", Target: "-", Data: []byte(trainingFile("sft", "registry.example.com/train:v1", "", 1, 1))}
	admin := Writer{Name: "ops", Admin: true}
	alice := Writer{Name: "alice-bot", Namespaces: []string{"alice"}}
	withDir := fleetTree()
	withDir[".gpuctl.yaml"] += "defaultNamespaceDir: jobs/\n"
	for name, c := range map[string]struct {
		tree    map[string]string
		cluster string
		by      Writer
		want    string // the file written, and its job's ID
	}{
		"a team's, for hub":            {fleetTree(), "hub", alice, "clusters/hub/teams/alice/sft.yaml alice.sft"},
		"a team's, for gpu-a":          {fleetTree(), "gpu-a", alice, "clusters/gpu-a/teams/alice/sft.yaml alice.sft"},
		"an admin's of default":        {fleetTree(), "hub", admin, "clusters/hub/training/sft.yaml default.sft"},
		"an admin's, defaultNamespace": {withDir, "hub", admin, "clusters/hub/jobs/sft.yaml default.sft"},
		"a team's, no --cluster":       {fleetTree(), "", alice, "teams/alice/sft.yaml alice.sft"},
		"a team's, no clusters/":       {reviewTree, "hub", alice, "teams/alice/sft.yaml alice.sft"},
		"an admin's, no clusters/":     {reviewTree, "hub", admin, "training/sft.yaml default.sft"},
	} {
		t.Run(name, func(t *testing.T) {
			fsys, dir := memTree(t, c.tree)
			d := New(Options{Render: render.Options{Cluster: c.cluster}})
			res, err := d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: c.by, Files: []edit.File{sft}})
			if err != nil {
				t.Fatal(err)
			}
			file, id, _ := strings.Cut(c.want, " ")
			if len(res.Workloads) != 1 || res.Workloads[0].File != file || res.Workloads[0].ID() != id || res.Paths()[0] != file {
				t.Fatalf("workloads %+v, changes %v; want %s in %s", res.Workloads, res.Paths(), id, file)
			}
		})
	}

	// Edits of a job of hub's directory, by its team.
	fsys, dir := memTree(t, fleetTree())
	d := New(Options{Render: render.Options{Cluster: "hub"}})
	res, err := d.edit(fsys, dir, WriteRequest{Verb: VerbPause, By: alice, Job: edit.JobRef{Name: "hub-sft"}})
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Path != "clusters/hub/teams/alice/hub-sft.yaml" || !strings.Contains(string(res.Changes[0].New), "suspend: true") {
		t.Fatalf("pause of hub's job: %v %+v", err, res)
	}
	if res, err = d.edit(fsys, dir, WriteRequest{Verb: VerbDelete, By: alice, Job: edit.JobRef{Namespace: "alice", Name: "hub-sft"}}); err != nil ||
		res.Changes[0].Path != "clusters/hub/teams/alice/hub-sft.yaml" || res.Changes[0].Action != edit.Deleted {
		t.Fatalf("delete of hub's job: %v %+v", err, res)
	}
}

// TestWriteForAClusterAttacks (issue 37): a team's token of cluster hub's API writes only in
// its namespaces' directories that hub renders: the shared ones and clusters/hub/. Another
// cluster's directory (whose reconciler neither this daemon's check nor its sync would ever
// see), another team's directory below clusters/hub/, a cluster directory that the repository
// lacks, and any cluster's directory on a daemon of no cluster are 403 with the reason;
// another cluster's job is not found. An admin is refused a path of another cluster too: the
// render for hub would not check the file.
func TestWriteForAClusterAttacks(t *testing.T) {
	sft := edit.File{Name: "yamlContent", Target: "-", Data: []byte(trainingFile("sft", "registry.example.com/train:v1", "", 1, 1))}
	alice := Writer{Name: "alice-bot", Namespaces: []string{"alice"}}
	all := Writer{Name: "dash", AllNamespaces: true}
	for name, c := range map[string]struct {
		tree    map[string]string
		cluster string
		by      Writer
		path    string
		want    string
	}{
		"gpu-a's directory of alice":  {fleetTree(), "hub", alice, "clusters/gpu-a/teams/alice", `"alice-bot" may not write in clusters/gpu-a/teams/alice: it is the directory of cluster gpu-a, and this reconciler is cluster hub's: it writes in the shared directories and in clusters/hub/ only`},
		"gpu-a's, spelled ./":         {fleetTree(), "hub", alice, "./clusters/gpu-a/teams/alice/", "it is the directory of cluster gpu-a"},
		"gpu-a's, through hub's":      {fleetTree(), "hub", alice, "clusters/hub/../gpu-a/teams/alice", "it is the directory of cluster gpu-a"},
		"gpu-a's, from a shared one":  {fleetTree(), "hub", alice, "teams/alice/../../clusters/gpu-a/teams/alice", "it is the directory of cluster gpu-a"},
		"bob's, through alice's":      {fleetTree(), "hub", alice, "clusters/hub/teams/alice/../bob", "it is the directory of namespace bob"},
		"gpu-a's, in capitals":        {fleetTree(), "hub", alice, "Clusters/gpu-a/teams/alice", "no namespace rule maps it"},
		"gpu-a's, namespaces=*":       {fleetTree(), "hub", all, "clusters/gpu-a/teams/alice", `"dash" may not write in clusters/gpu-a/teams/alice: it is the directory of cluster gpu-a`},
		"hub's directory of bob":      {fleetTree(), "hub", alice, "clusters/hub/teams/bob", `"alice-bot" may not write in clusters/hub/teams/bob: it is the directory of namespace bob`},
		"hub's admin directory":       {fleetTree(), "hub", alice, "clusters/hub/quotas", `"alice-bot" may not write in clusters/hub/quotas: no namespace rule maps it`},
		"hub's directory itself":      {fleetTree(), "hub", alice, "clusters/hub", `"alice-bot" may not write in clusters/hub: no namespace rule maps it`},
		"clusters/ itself":            {fleetTree(), "hub", alice, "clusters", `"alice-bot" may not write in clusters: no namespace rule maps it`},
		"a daemon of no cluster":      {fleetTree(), "", alice, "clusters/hub/teams/alice", "it is the directory of cluster hub, and this reconciler is for no cluster (no --cluster)"},
		"a repository of one cluster": {reviewTree, "hub", alice, "clusters/hub/teams/alice", "the repository has no clusters/hub/, and only an admin adds a cluster's directory"},
	} {
		t.Run(name, func(t *testing.T) {
			fsys, dir := memTree(t, c.tree)
			d := New(Options{Render: render.Options{Cluster: c.cluster}})
			res, err := d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: c.by, Files: []edit.File{sft}, Path: c.path})
			var fe *ForbiddenError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a *ForbiddenError saying %q, got %T %v (%+v)", c.want, err, err, res)
			}
		})
	}

	fsys, dir := memTree(t, fleetTree())
	d := New(Options{Render: render.Options{Cluster: "hub"}})
	// Her job of gpu-a's directory: hub does not render it, so no write of hub finds it.
	for _, verb := range []string{VerbPause, VerbDelete} {
		_, err := d.edit(fsys, dir, WriteRequest{Verb: verb, By: alice, Job: edit.JobRef{Namespace: "alice", Name: "a-sft"}})
		var nf *edit.NotFoundError
		if !errors.As(err, &nf) {
			t.Errorf("%s of gpu-a's job through hub: %T %v, want not found", verb, err, err)
		}
	}
	// Bob's job of hub's directory.
	if _, err := d.edit(fsys, dir, WriteRequest{Verb: VerbDelete, By: alice, Job: edit.JobRef{Namespace: "bob", Name: "bob-hub"}}); !errors.As(err, new(*ForbiddenError)) {
		t.Errorf("delete of bob's job of hub: %T %v, want forbidden", err, err)
	}
	// An admin's path of gpu-a: no render of hub would check the file.
	_, err := d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: Writer{Name: "ops", Admin: true}, Files: []edit.File{sft}, Path: "clusters/gpu-a/teams/alice"})
	var pe *edit.PathError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `is in the directory of cluster "gpu-a", not of cluster "hub"`) {
		t.Errorf("an admin's path of gpu-a: %T %v", err, err)
	}
}

// TestNamespaceOfAClusterFile: the status's files below clusters/NAME/ are their team's, as
// the render maps them, for the API's cut of the status to a token's namespaces.
func TestNamespaceOfAClusterFile(t *testing.T) {
	cfg, diags := render.ParseConfig("--config", []byte(reviewTree[".gpuctl.yaml"]))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	d := New(Options{Render: render.Options{Config: cfg, Cluster: "hub"}})
	for file, want := range map[string]string{
		"clusters/hub/teams/alice/sft.yaml": "alice",
		"teams/bob/sft.yaml":                "bob",
		"clusters/hub/quotas/q.yaml":        "",
		"clusters/hub/pools.yaml":           "",
	} {
		if ns, ok := d.NamespaceOf(file); ns != want || ok != (want != "") {
			t.Errorf("NamespaceOf(%s) = %q, %v; want %q", file, ns, ok, want)
		}
	}
}
