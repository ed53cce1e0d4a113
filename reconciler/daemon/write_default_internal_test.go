package daemon

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/render"
)

// TestWriteWithoutANamespace (issue 35): the seed's POST /api/v1/jobs sends the file alone. A
// file without job.namespace lands where the format puts it: an admin's in namespace default,
// in the directory of defaultNamespaceDir (else the kind's, as examples/ keeps them); a team
// token's in its own directory, never in default's; a token of several namespaces, or of all,
// writes nothing in default.
func TestWriteWithoutANamespace(t *testing.T) {
	sft := func(ns string) edit.File {
		f := trainingFile("sft", "registry.example.com/train:v1", "", 1, 1)
		if ns != "" {
			f = strings.Replace(f, "job: {name: sft}", "job: {name: sft, namespace: "+ns+"}", 1)
		}
		return edit.File{Name: "yamlContent", Target: "-", Data: []byte(f)}
	}
	admin := Writer{Name: "ops", Admin: true}
	alice := Writer{Name: "alice-bot", Namespaces: []string{"alice"}}
	withDir := maps.Clone(reviewTree)
	withDir[".gpuctl.yaml"] += "defaultNamespaceDir: jobs/\n"
	adminDir, diags := render.ParseConfig("--config", []byte(reviewTree[".gpuctl.yaml"]+"defaultNamespaceDir: batch\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}

	cases := map[string]struct {
		tree   map[string]string
		config *render.Config // the administrator's, instead of the tree's
		by     Writer
		file   edit.File
		want   string // the file written, and its job's ID; or a part of the *ForbiddenError
	}{
		"an admin's: the kind's directory":             {reviewTree, nil, admin, sft(""), "training/sft.yaml default.sft"},
		"an admin's, of job.namespace default":         {reviewTree, nil, admin, sft("default"), "training/sft.yaml default.sft"},
		"an admin's: defaultNamespaceDir":              {withDir, nil, admin, sft(""), "jobs/sft.yaml default.sft"},
		"an admin's: the administrator's settings win": {withDir, adminDir, admin, sft(""), "batch/sft.yaml default.sft"},
		"an admin's of a team's namespace":             {reviewTree, nil, admin, sft("alice"), "teams/alice/sft.yaml alice.sft"},
		"a team's: its own directory, not default's":   {withDir, nil, alice, sft(""), "teams/alice/sft.yaml alice.sft"},
		"a team's of job.namespace default":            {withDir, nil, alice, sft("default"), `"alice-bot" may not write in namespace "default"`},
		"a token of two namespaces":                    {withDir, nil, Writer{Name: "ml", Namespaces: []string{"alice", "bob"}}, sft(""), `"ml" may not write in namespace default: only an admin`},
		"a token of every namespace":                   {withDir, nil, Writer{Name: "dash", AllNamespaces: true}, sft(""), `"dash" may not write in namespace default`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := New(Options{Render: render.Options{Config: c.config}})
			fsys, dir := memTree(t, c.tree)
			res, err := d.edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: c.by, Files: []edit.File{c.file}})
			if file, id, ok := strings.Cut(c.want, " "); ok && strings.HasSuffix(file, ".yaml") {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Workloads) != 1 || res.Workloads[0].File != file || res.Workloads[0].ID() != id {
					t.Fatalf("workloads %+v, want %s in %s", res.Workloads, id, file)
				}
				return
			}
			var fe *ForbiddenError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a *ForbiddenError saying %q, got %T %v", c.want, err, err)
			}
		})
	}

	// Default's directory is an admin's however a team's token asks for it: by the request's
	// namespace, or by its path (defaultNamespaceDir, the kind's directory); nothing is written.
	all := Writer{Name: "dash", AllNamespaces: true}
	for name, c := range map[string]struct {
		by        Writer
		namespace string
		path      string
		want      string
	}{
		"a team asks for namespace default":      {alice, "default", "", `"alice-bot" may not write in namespace default: only an admin`},
		"a team names defaultNamespaceDir":       {alice, "", "jobs", `"alice-bot" may not write in jobs: no namespace rule maps it`},
		"a team names the kind's directory":      {alice, "", "training", `"alice-bot" may not write in training: no namespace rule maps it`},
		"namespaces=* names defaultNamespaceDir": {all, "", "jobs/", `"dash" may not write in jobs`},
	} {
		t.Run(name, func(t *testing.T) {
			fsys, dir := memTree(t, withDir)
			res, err := New(Options{}).edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: c.by, Files: []edit.File{sft("")}, Namespace: c.namespace, Path: c.path})
			var fe *ForbiddenError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want a *ForbiddenError saying %q, got %T %v (%+v)", c.want, err, err, res)
			}
		})
	}

	// No directory for default: a rule maps the kind's, or the file has no workload.
	mapped := maps.Clone(reviewTree)
	mapped[".gpuctl.yaml"] += "  - path: training/**\n    namespace: ml\n"
	fsys, dir := memTree(t, mapped)
	_, err := New(Options{}).edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: admin, Files: []edit.File{sft("")}})
	var ee *EditError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), `training/, is mapped to namespace "ml"`) || !strings.Contains(err.Error(), "give the path") {
		t.Errorf("the kind's directory mapped: %T %v", err, err)
	}
	cm := edit.File{Name: "yamlContent", Target: "settings.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")}
	fsys, dir = memTree(t, reviewTree)
	if _, err := New(Options{}).edit(fsys, dir, WriteRequest{Verb: VerbCreate, By: admin, Files: []edit.File{cm}}); err == nil ||
		!strings.Contains(err.Error(), "no workload to name one after") {
		t.Errorf("a ConfigMap without a namespace: %v", err)
	}
}
