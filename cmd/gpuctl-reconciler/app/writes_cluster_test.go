package app

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIWritesOfAClusterDaemon (issue 37): over a repository of two clusters, hub and gpu-a,
// gpuctl-reconciler --cluster hub commits alice's POST /api/v1/jobs to
// clusters/hub/teams/<alice>/ (a shared directory would have every cluster run it) and
// applies it; its pause edits the file there. Alice's token of hub's API may not write in
// gpu-a's directory of her team, nor in bob's directory of hub, nor name a file out of hers
// (403, 403, 400); her job of gpu-a is no job of hub's (404, and never applied here); bob's
// job of hub is bob's (403). Nothing refused is committed.
func TestAPIWritesOfAClusterDaemon(t *testing.T) {
	tm := newTeam("wk")
	g := newGitRemote(t, tm)
	g.Commit("two clusters", map[string]string{
		"clusters/hub/teams/" + tm.bob + "/bob-hub.yaml":   training("bob-hub", ""),
		"clusters/gpu-a/teams/" + tm.alice + "/a-sft.yaml": training("a-sft", ""),
	})
	d := startWriteDaemon(t, tm, "--source", "git:"+g.URL, "--ref", "main", "--git-push", "--git-poll-interval", "0", "--cluster", "hub")
	d.waitJob(tm.bob, "bob-hub", "created", exists)

	// Create: in hub's directory of alice, applied by hub.
	mine := "clusters/hub/teams/" + tm.alice + "/sft.yaml"
	code, got, body := d.create(aliceToken, training("sft", ""))
	if code != http.StatusCreated || got.JobID != tm.alice+".sft" || got.Path != mine || got.Commit != g.head() {
		t.Fatalf("create: %d %s; want 201 with path %s", code, body, mine)
	}
	if files := g.Run(g.Bare, "ls-tree", "-r", "--name-only", "main"); !strings.Contains(files, mine+"\n") || strings.Contains(files, "\nteams/"+tm.alice+"/") {
		t.Errorf("the commit's tree, want %s and no shared file of alice:\n%s", mine, files)
	}
	d.waitJob(tm.alice, "sft", "created", exists)

	// Refused: nothing is committed.
	before := g.head()
	for name, c := range map[string]struct {
		method, path string
		body         any
		code         int
		says         string
	}{
		"gpu-a's directory of alice": {"POST", "/api/v1/jobs", httpapi.CreateRequest{YAMLContent: training("x", ""), Path: "clusters/gpu-a/teams/" + tm.alice}, 403,
			"it is the directory of cluster gpu-a, and this reconciler is cluster hub's: it writes in the shared directories and in clusters/hub/ only"},
		"hub's directory of bob": {"POST", "/api/v1/jobs", httpapi.CreateRequest{YAMLContent: training("x", ""), Path: "clusters/hub/teams/" + tm.bob}, 403,
			"it is the directory of namespace " + tm.bob},
		"a file name out of hers": {"POST", "/api/v1/jobs", httpapi.CreateRequest{YAMLContent: training("x", ""), FileName: "../../../gpu-a/teams/" + tm.alice + "/x.yaml"}, 400,
			"may not hold a directory"},
		"a batch into gpu-a's": {"POST", "/api/v1/jobs/batch", httpapi.BatchCreateRequest{YAMLContents: []string{training("x", "")}, Path: "clusters/gpu-a/teams/" + tm.alice}, 403,
			"directory of cluster gpu-a"},
		"her job of gpu-a":       {"POST", "/api/v1/jobs/" + tm.alice + ".a-sft/pause", nil, 404, "no file of the repository declares job"},
		"her job of gpu-a, gone": {"DELETE", "/api/v1/jobs/" + tm.alice + ".a-sft", nil, 404, "no file of the repository declares job"},
		"bob's job of hub":       {"DELETE", "/api/v1/jobs/" + tm.bob + ".bob-hub", nil, 403, "may not write in namespace"},
	} {
		if code, body := d.call(c.method, c.path, aliceToken, c.body, nil); code != c.code || !strings.Contains(body, c.says) {
			t.Errorf("%s: %d %s; want %d saying %q", name, code, body, c.code, c.says)
		}
	}
	if g.head() != before {
		t.Fatalf("a refused write committed: %s", g.Run(g.Bare, "log", "--oneline", before+"..main"))
	}
	if _, err := d.kube.BatchV1().Jobs(tm.alice).Get(context.Background(), "a-sft", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("gpu-a's job applied by hub: %v", err)
	}

	// Pause: the file where it is, in hub's directory.
	if code, body := d.call("POST", "/api/v1/jobs/sft/pause", aliceToken, nil, nil); code != http.StatusOK || !strings.Contains(body, `"path": "`+mine+`"`) {
		t.Fatalf("pause: %d %s", code, body)
	}
	if !strings.Contains(g.Run(g.Bare, "show", "main:"+mine), "suspend: true") {
		t.Error("the pause commit does not suspend the job")
	}
	d.waitJob(tm.alice, "sft", "suspended", suspended)
}
