package edit_test

import (
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
)

// three is a file of three documents with comments before, between and after them.
const three = "# Team alice's services.\n" +
	"kind: compute\nversion: v0.1\njob: {name: web}   # the web tier\nenvironment: {image: \"nginx:1\"}\n" +
	"---\n# The database.\nkind: compute\nversion: v0.1\njob:\n  name: db\nenvironment:\n  image: 'postgres:16'\n\n" +
	"--- # the cache\nkind: compute\nversion: v0.1\njob: {name: cache}\nenvironment: {image: redis}\n# end of file\n"

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		job, want string
	}{
		"first": {job: "web", want: "# The database.\nkind: compute\nversion: v0.1\njob:\n  name: db\nenvironment:\n  image: 'postgres:16'\n\n" +
			"--- # the cache\nkind: compute\nversion: v0.1\njob: {name: cache}\nenvironment: {image: redis}\n# end of file\n"},
		"middle": {job: "db", want: "# Team alice's services.\n" +
			"kind: compute\nversion: v0.1\njob: {name: web}   # the web tier\nenvironment: {image: \"nginx:1\"}\n" +
			"--- # the cache\nkind: compute\nversion: v0.1\njob: {name: cache}\nenvironment: {image: redis}\n# end of file\n"},
		"last": {job: "cache", want: "# Team alice's services.\n" +
			"kind: compute\nversion: v0.1\njob: {name: web}   # the web tier\nenvironment: {image: \"nginx:1\"}\n" +
			"---\n# The database.\nkind: compute\nversion: v0.1\njob:\n  name: db\nenvironment:\n  image: 'postgres:16'\n\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := memRepo(t, map[string]string{"svc.yaml": three})
			res, err := r.Delete(edit.JobRef{Name: c.job})
			ch := oneChange(t)(res, err)
			if ch.Action != edit.Modified || string(ch.New) != c.want {
				t.Fatalf("%s:\n%s\nwant:\n%s", ch.Action, ch.New, c.want)
			}
			if res.Verb != "delete" || res.Workloads[0].ID() != "default."+c.job || res.Workloads[0].Kind != "compute" {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestDeleteFile(t *testing.T) {
	r := memRepo(t, map[string]string{"a.yaml": "# only one\nkind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: x}\n---\n# nothing more\n"})
	ch := oneChange(t)(r.Delete(edit.JobRef{Name: "web"}))
	if ch.Action != edit.Deleted || ch.Path != "a.yaml" || ch.New != nil {
		t.Fatalf("%+v", ch)
	}
}

// TestDeleteRefusedWhenItBreaks: a kustomization that lists the file would no longer build.
func TestDeleteRefusedWhenItBreaks(t *testing.T) {
	r := memRepo(t, map[string]string{
		"app/kustomization.yaml": "resources:\n  - web.yaml\n",
		"app/web.yaml":           "kind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: x}\n",
	})
	_, err := r.Delete(edit.JobRef{Name: "web"})
	if err == nil || !strings.Contains(err.Error(), "delete compute default.web would make the repository invalid") ||
		!strings.Contains(err.Error(), "app/kustomization.yaml") {
		t.Fatalf("got %v", err)
	}
}
