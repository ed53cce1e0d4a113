package app

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIWritesTheSeedsBody (issue 35): the seed's POST /api/v1/jobs, {"yamlContent": "..."}
// and nothing else, through gpuctl-reconciler with a Git source. An admin token's file that
// names no namespace is committed to the remote in namespace default's directory (training/,
// the kind's: --namespace-map reads no defaultNamespaceDir), byte for byte; the sync that the
// write triggers applies that commit and creates the Job in default; GET /api/v1/jobs/{jobId}
// answers it. A team token's file lands in its team's directory and namespace, the same way;
// the team token's file that names default or another team's namespace is 403 and commits
// nothing, and the team token does not read the admin's job.
func TestAPIWritesTheSeedsBody(t *testing.T) {
	tm := newTeam("ws")
	g := newGitRemote(t, tm)
	d := startWriteDaemon(t, tm, "--source", "git:"+g.authURL, "--ref", "main", "--git-push", "--git-poll-interval", "0",
		"--work-dir", filepath.Join(t.TempDir(), "clone"))
	// seed posts the seed's body: the field yamlContent alone, as the seed's clients send it.
	seed := func(token, file string) (int, httpapi.JobWriteResponse, string) {
		t.Helper()
		content, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		var out httpapi.JobWriteResponse
		code, body := d.call(http.MethodPost, "/api/v1/jobs", token, json.RawMessage(`{"yamlContent": `+string(content)+`}`), nil)
		if code == http.StatusCreated {
			if err := json.Unmarshal([]byte(body), &out); err != nil {
				t.Fatalf("%d %s: %v", code, body, err)
			}
		}
		return code, out, body
	}
	// applied waits until the daemon's last sync applied commit.
	applied := func(commit string) {
		t.Helper()
		waitFor(t, "the sync of "+commit, func() bool {
			st, _, err := d.store.Read(context.Background())
			return err == nil && st.AppliedRevision == commit && st.Result == daemon.ResultSucceeded
		})
	}
	// job reads GET /api/v1/jobs/{id} as token once the read model has the job.
	job := func(token, id string) cluster.JobDetail {
		t.Helper()
		var got cluster.JobDetail
		var code int
		var body string
		waitFor(t, "GET /api/v1/jobs/"+id, func() bool {
			code, body = d.call(http.MethodGet, "/api/v1/jobs/"+id, token, nil, nil)
			return code == http.StatusOK
		})
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("GET %s: %d %s: %v", id, code, body, err)
		}
		return got
	}

	// The admin's: namespace default, in training/.
	name := tm.alice + "-seed" // a name of this test's own in the shared namespace default
	file := training(name, "")
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = d.kube.BatchV1().Jobs("default").Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &bg})
	})
	code, got, body := seed(opsToken, file)
	want := "training/" + name + ".yaml"
	if code != http.StatusCreated || got.JobID != "default."+name || got.Namespace != "default" || got.Kind != "training" ||
		got.Status != "pending" || got.Path != want || got.Commit == "" || got.Commit != g.head() {
		t.Fatalf("admin's seed body: %d %s (remote at %s)", code, body, g.head())
	}
	if files := g.Run(g.Bare, "show", "--name-status", "--format=%an|%s", "main"); files != "ops|gpuctl: create training "+name+" (ops)\n\nA\t"+want {
		t.Errorf("the remote's commit:\n%s", files)
	}
	if kept := g.Run(g.Bare, "show", "main:"+want) + "\n"; kept != file {
		t.Errorf("the file on the remote, not as posted:\n%s", kept)
	}
	applied(got.Commit)
	d.waitJob("default", name, "created", exists)
	if j := job(opsToken, "default."+name); j.JobID != "default."+name || j.Namespace != "default" || j.Kind != "training" || j.Source != want {
		t.Errorf("GET /api/v1/jobs/default.%s: %+v", name, j)
	}

	// The team's: its directory, its namespace.
	code, got, body = seed(aliceToken, training("mine", ""))
	want = "teams/" + tm.alice + "/mine.yaml"
	if code != http.StatusCreated || got.JobID != tm.alice+".mine" || got.Path != want || got.Commit != g.head() {
		t.Fatalf("team's seed body: %d %s (remote at %s)", code, body, g.head())
	}
	if files := g.Run(g.Bare, "show", "--name-status", "--format=%an|%s", "main"); files != "alice|gpuctl: create training mine (alice)\n\nA\t"+want {
		t.Errorf("the remote's commit:\n%s", files)
	}
	applied(got.Commit)
	d.waitJob(tm.alice, "mine", "created", exists)
	if j := job(aliceToken, tm.alice+".mine"); j.Namespace != tm.alice || j.Source != want {
		t.Errorf("GET /api/v1/jobs/%s.mine: %+v", tm.alice, j)
	}

	// The team token writes nothing in default nor in another team's namespace, nor reads
	// the admin's job.
	head := g.head()
	for _, ns := range []string{"default", tm.bob} {
		reason := `"alice" may not write in namespace "` + ns + `"`
		code, _, body := seed(aliceToken, training("x", ns))
		var e httpapi.Error
		if _ = json.Unmarshal([]byte(body), &e); code != http.StatusForbidden || !strings.Contains(e.Message, reason) {
			t.Errorf("alice's file in namespace %s: %d %s, want 403 %s", ns, code, body, reason)
		}
	}
	if g.head() != head {
		t.Errorf("a refused write committed: %s", g.Run(g.Bare, "log", "--oneline", head+"..main"))
	}
	if code, body := d.call(http.MethodGet, "/api/v1/jobs/default."+name, aliceToken, nil, nil); code != http.StatusNotFound {
		t.Errorf("alice reads the admin's job: %d %s", code, body)
	}
}
