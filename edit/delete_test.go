package edit_test

import (
	"errors"
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

// TestNamespacesScopeTheLookup: with Repo.Namespaces a bare name resolves among those
// namespaces only (no ambiguity with another team's job), and another namespace's job is not
// found, however it is named.
func TestNamespacesScopeTheLookup(t *testing.T) {
	r := memRepo(t, map[string]string{
		".gpuctl.yaml":       teamConfig,
		"teams/alice/a.yaml": "kind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: x}\n",
		"teams/bob/b.yaml":   "kind: compute\nversion: v0.1\njob: {name: web}\nenvironment: {image: x}\n",
		"teams/bob/api.yaml": "kind: compute\nversion: v0.1\njob: {name: api}\nenvironment: {image: x}\n",
	})
	if _, err := r.Delete(edit.JobRef{Name: "web"}); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("without a scope: %v", err)
	}
	r.Namespaces = []string{"alice"}
	res, err := r.Delete(edit.JobRef{Name: "web"})
	if err != nil || res.Workloads[0].ID() != "alice.web" {
		t.Fatalf("scoped bare name: %+v %v", res, err)
	}
	for _, ref := range []edit.JobRef{{Name: "api"}, {Namespace: "bob", Name: "api"}} {
		var nf *edit.NotFoundError
		if _, err := r.Pause(ref); !errors.As(err, &nf) {
			t.Errorf("%s out of scope: %v", ref, err)
		}
	}
}

func TestCommitMessage(t *testing.T) {
	res := &edit.Result{Verb: "scale", Replicas: 3, Workloads: []edit.Workload{{Kind: "inference", Name: "chat", Namespace: "alice", File: "teams/alice/chat.yaml"}}}
	want := "gpuctl: scale inference chat to 3 (alice)\n\nalice.chat: teams/alice/chat.yaml\n"
	if got := res.CommitMessage("alice"); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
