package httpapi

import (
	"encoding/json"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/edit"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
)

// mappingBackend is a fakeBackend that knows the namespace rules teams/<ns>/**.
type mappingBackend struct{ *fakeBackend }

func (mappingBackend) NamespaceOf(file string) (string, bool) {
	dir := path.Dir(file)
	if rest, ok := strings.CutPrefix(dir, "teams/"); ok {
		ns, _, _ := strings.Cut(rest, "/")
		return ns, true
	}
	return "", false
}

// TestStatusIsCutToTheTokensNamespaces (issue #30, finding 5): a team's token does not read in
// the status what it may not see elsewhere: the commit message that names bob's job, bob's
// objects' and files' errors, a failed plan's message; it sees its own lines. An admin and a
// namespaces=* token see the status whole; so does the web page cut it.
func TestStatusIsCutToTheTokensNamespaces(t *testing.T) {
	full := daemon.Status{Source: "git https://example.com/gpus.git", Result: daemon.ResultFailed, Revision: "4f9c2a7",
		RevisionMessage: "gpuctl: create training bob-secret-pretrain (bob)\n\nbob.bob-secret-pretrain: teams/bob/pretrain.yaml\n",
		Message:         "plan: Deployment bob/bob-secret-serve: forbidden",
		Errors: []string{
			"teams/bob/bob-secret-pretrain.yaml:3:1: job.name: invalid",
			"teams/alice/sft.yaml:4:3: resources.gpu: not a number",
			"Job alice/sft: create: quota exceeded",
			"Deployment bob/bob-secret-serve: apply: forbidden",
			"warning: pool bob-secret-pool has no node",
			"ClusterRole bob-secret-role: apply: forbidden",
			"pools/pools.yaml:1: version: unknown",
		},
		Held: []daemon.HeldScope{{Namespace: "bob", Errors: []string{"teams/bob/bob-secret-widget.yaml:2: kind: not allowed"}},
			{Namespace: "alice", Errors: []string{"teams/alice/typo.yaml:2: jb: unknown field"}}},
		TakenBack: []string{"Deployment alice/web: took back .spec.replicas from \"kubectl\"", "Deployment bob/bob-secret-web: took back .spec.replicas from \"kubectl\""},
	}
	b := &fakeBackend{status: full}
	h := New(Options{Backend: mappingBackend{b}, Kube: fake.NewClientset(), Tokens: testTokens, Registry: prometheus.NewRegistry()})
	read := func(token string) (daemon.Status, string) {
		w := do(t, h, http.MethodGet, "/api/v1/status", token)
		if w.Code != http.StatusOK {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		var st daemon.Status
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		return st, w.Body.String()
	}
	for _, token := range []string{adminToken, userToken} {
		if st, _ := read(token); st.RevisionMessage != full.RevisionMessage || !slices.Equal(st.Errors, full.Errors) || st.Message != full.Message || len(st.Held) != 2 {
			t.Errorf("%s: the status is cut: %+v", token, st)
		}
	}
	st, body := read(teamToken)
	if strings.Contains(body, "bob-secret") {
		t.Errorf("alice's token reads bob's objects in the status: %s", body)
	}
	want := []string{"teams/alice/sft.yaml:4:3: resources.gpu: not a number", "Job alice/sft: create: quota exceeded",
		`(5 more lines about other namespaces, cluster-wide objects or the administrator's files: not shown to "alice")`}
	if !slices.Equal(st.Errors, want) {
		t.Errorf("errors:\n%q\nwant\n%q", st.Errors, want)
	}
	if len(st.TakenBack) != 2 || st.TakenBack[0] != full.TakenBack[0] {
		t.Errorf("taken back: %q", st.TakenBack)
	}
	if len(st.Held) != 1 || st.Held[0].Namespace != "alice" {
		t.Errorf("held: %+v", st.Held)
	}
	if st.RevisionMessage != "" || st.Result != daemon.ResultFailed || st.Revision != full.Revision {
		t.Errorf("status: %+v", st)
	}
	page := do(t, h, http.MethodGet, "/", teamToken)
	if page.Code != http.StatusOK || strings.Contains(page.Body.String(), "bob-secret") || !strings.Contains(page.Body.String(), "alice/sft") {
		t.Errorf("the page of alice's token: %d, names bob's objects or not alice's:\n%s", page.Code, page.Body)
	}
}

// TestWriteOfAPlainObjectNamesIt (issue #30, finding 5): the answer of a create of a plain
// manifest names it (jobId namespace.name, its kind), as a job's does; one of no namespace by
// its name.
func TestWriteOfAPlainObjectNamesIt(t *testing.T) {
	res := &daemon.WriteResult{Commit: "4f9c2a71d0e8", Branch: "main", Dir: "clusters/prod", Edit: &edit.Result{Verb: daemon.VerbCreate, Objects: []edit.Workload{
		{Kind: "ConfigMap", Name: "settings", Namespace: "alice", File: "teams/alice/settings.yaml"},
		{Kind: "pool", Name: "training-pool", File: "pools/training.yaml"},
	}}}
	out := describeWrite(res)
	if len(out) != 2 {
		t.Fatalf("%+v", out)
	}
	if o := out[0]; o.JobID != "alice.settings" || o.Kind != "ConfigMap" || o.Name != "settings" || o.Namespace != "alice" || o.Path != "clusters/prod/teams/alice/settings.yaml" {
		t.Errorf("%+v", o)
	}
	if o := out[1]; o.JobID != "training-pool" || o.Kind != "pool" || o.Path != "clusters/prod/pools/training.yaml" {
		t.Errorf("%+v", o)
	}
}
