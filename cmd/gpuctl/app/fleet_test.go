package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
)

// The fleet's read verbs against stubs of two daemons' APIs, each a cluster of the config file.

// fleetAPI is a stub of one daemon's API: a job with one pod, a pool, its status; it wants
// token and refuses any other.
func fleetAPI(t *testing.T, name, token string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	answer := func(v any) http.HandlerFunc { return bearerJSON(token, v) }
	mux.Handle("GET /api/v1/jobpods", answer(cluster.JobPodList{Items: []cluster.JobPod{{
		Pod: "sft-" + name + "-0", JobID: "alice.sft-" + name, Name: "sft-" + name, Namespace: "alice", Kind: "training", Status: "Running"}}}))
	mux.Handle("GET /api/v1/pools", answer(cluster.PoolList{Items: []cluster.PoolSummary{{Name: "pool-" + name, NodeCount: 2}}}))
	mux.Handle("GET /api/v1/status", answer(daemon.Status{Result: daemon.ResultSucceeded, Revision: "main@0123456789abcdef0123456789abcdef01234567",
		LastAttempt: time.Now().Add(-3 * time.Minute), Message: "applied " + name}))
	mux.HandleFunc("GET /api/v1/quotas/{user}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("user") != name {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"x","code":404,"notFound":{"kind":"user","name":%q}}`, r.PathValue("user"))
			return
		}
		gpus := int64(4)
		answer(cluster.Quota{User: name, Hard: cluster.QuotaResources{GPU: &gpus}})(w, r)
	})
	// Jobs: sft-<name> (bare or alice.), and "shared", which both stubs have.
	job := func(id string) (string, bool) {
		switch id {
		case "sft-" + name, "alice.sft-" + name:
			return "alice.sft-" + name, true
		case "shared", "alice.shared":
			return "alice.shared", true
		}
		return "", false
	}
	mux.HandleFunc("GET /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := job(r.PathValue("id"))
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":"x","code":404,"notFound":{"kind":"job","name":%q}}`, r.PathValue("id"))
			return
		}
		answer(cluster.JobDetail{JobID: id})(w, r)
	})
	mux.HandleFunc("GET /api/v1/jobs/{id}/logs", func(w http.ResponseWriter, r *http.Request) {
		id, _ := job(r.PathValue("id"))
		fmt.Fprintf(w, `{"pod":"p","container":"main","prefix":"rank-0","text":"log of %s in %s"}`+"\n", id, name)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// fleetConfig writes the config file (mode 0600) in a fresh $XDG_CONFIG_HOME and returns its
// path; it clears what could name another server or a kubeconfig.
func fleetConfig(t *testing.T, content string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	dir := filepath.Join(home, "gpuctl")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// twoClusters serves cloud-h100 (its token in a file) and onprem-a100, and writes the config
// file that names them; closed closes onprem-a100's server first.
func twoClusters(t *testing.T, closed bool) {
	t.Helper()
	cloud := fleetAPI(t, "cloud", "tok-SECRET-cloud")
	onprem := fleetAPI(t, "onprem", "tok-SECRET-onprem")
	if closed {
		onprem.Close()
	}
	fleetConfig(t, fmt.Sprintf(`clusters:
  - name: onprem-a100
    server: %s
    token: tok-SECRET-onprem
  - name: cloud-h100
    server: %s
    tokenFile: %s
`, onprem.URL, cloud.URL, writeToken(t, "tok-SECRET-cloud")))
}

// writeToken writes a token file and returns its path.
func writeToken(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGetJobsAllClusters is the bar: with one cluster's server closed, get jobs --all-clusters
// lists the other's rows with CLUSTER first, names the closed one unreachable on standard
// error, and exits 1; with both up, the rows are sorted by cluster.
func TestGetJobsAllClusters(t *testing.T) {
	twoClusters(t, false)
	out, errOut, code := runDriftCommand(t, "get", "jobs", "--clusters", "onprem-a100,cloud-h100")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !regexp.MustCompile(`^CLUSTER +JOB ID +NAME`).MatchString(lines[0]) ||
		!strings.HasPrefix(lines[1], "cloud-h100 ") || !strings.HasPrefix(lines[2], "onprem-a100 ") || !strings.Contains(lines[2], "sft-onprem-0") {
		t.Errorf("both up: exit %d\n%s%s", code, out, errOut)
	}

	twoClusters(t, true)
	out, errOut, code = runDriftCommand(t, "get", "jobs", "--all-clusters")
	if code != ExitFailed || !strings.Contains(out, "cloud-h100   sft-cloud-0") || strings.Contains(out, "onprem") ||
		!regexp.MustCompile(`(?m)^cluster onprem-a100: unreachable: server http://127\.0\.0\.1:\d+: `).MatchString(errOut) {
		t.Errorf("one closed: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, out, errOut)

	// -o json: each item has its cluster, and the unreadable cluster is listed.
	out, errOut, code = runDriftCommand(t, "get", "jobs", "--all-clusters", "-o", "json")
	var doc struct {
		Items []struct {
			Cluster string `json:"cluster"`
			Pod     string `json:"pod"`
		} `json:"items"`
		Unreadable []clusterUnreadable `json:"unreadable"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitFailed || len(doc.Items) != 1 ||
		doc.Items[0].Cluster != "cloud-h100" || doc.Items[0].Pod != "sft-cloud-0" ||
		len(doc.Unreadable) != 1 || doc.Unreadable[0].Cluster != "onprem-a100" {
		t.Errorf("-o json: exit %d, %v, %+v\n%s%s", code, err, doc, out, errOut)
	}

	// get pools: the same, with the pools' columns.
	out, errOut, code = runDriftCommand(t, "get", "pools", "--all-clusters")
	if code != ExitFailed || !regexp.MustCompile(`(?m)^CLUSTER +NAME +NODES`).MatchString(out) || !strings.Contains(out, "cloud-h100   pool-cloud ") ||
		!strings.Contains(errOut, "cluster onprem-a100: unreachable") {
		t.Errorf("get pools: exit %d\n%s%s", code, out, errOut)
	}
}

// TestStatusAllClusters: one row per cluster; the unreachable one is a row that says so, and
// the exit code is 1.
func TestStatusAllClusters(t *testing.T) {
	twoClusters(t, true)
	out, errOut, code := runDriftCommand(t, "status", "--all-clusters")
	if code != ExitFailed || !regexp.MustCompile(`^CLUSTER +REVISION +RESULT +LAST SYNC +MESSAGE\n`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^cloud-h100 +main@0123456789ab +Succeeded +3m ago +applied cloud$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^onprem-a100 +<none> +Unreachable +<none> +server http://127\.0\.0\.1:\d+: `).MatchString(out) {
		t.Errorf("status --all-clusters: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, out, errOut)
}

// TestFleetRefusals: an unknown cluster, a refused token, flags of one cluster with the fleet's.
func TestFleetRefusals(t *testing.T) {
	twoClusters(t, false)
	if _, errOut, code := runDriftCommand(t, "get", "jobs", "--clusters", "cloud-h100,gpu-x"); code != ExitTrouble ||
		!strings.Contains(errOut, `--clusters: no cluster "gpu-x" in`) || !strings.Contains(errOut, "(clusters: onprem-a100, cloud-h100)") {
		t.Errorf("an unknown cluster: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runDriftCommand(t, "get", "jobs", "--all-clusters", "--server", "https://x.example"); code != ExitTrouble ||
		!strings.Contains(errOut, "--server reads one cluster") {
		t.Errorf("--server with --all-clusters: exit %d, %s", code, errOut)
	}
	cloud := fleetAPI(t, "cloud", "another")
	fleetConfig(t, "clusters:\n  - name: cloud-h100\n    server: "+cloud.URL+"\n    token: tok-SECRET-wrong\n")
	out, errOut, code := runDriftCommand(t, "get", "jobs", "--all-clusters")
	if code != ExitFailed || out != "" || !strings.Contains(errOut, "cluster cloud-h100: server http://") ||
		!strings.Contains(errOut, "the token was refused") {
		t.Errorf("a refused token: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, out, errOut)
	fleetConfig(t, "server: https://one.example\ntoken: t\n")
	if _, errOut, code := runDriftCommand(t, "get", "jobs", "--all-clusters"); code != ExitTrouble || !strings.Contains(errOut, "no clusters: list in") {
		t.Errorf("no clusters: exit %d, %s", code, errOut)
	}
}

// TestFleetConfigErrors: the clusters: list is read strictly, each error with file:line, and
// a token is never echoed.
func TestFleetConfigErrors(t *testing.T) {
	path := fleetConfig(t, `server: https://one.example
token: tok-SECRET-top
clusters:
  - name: onprem-a100
    context: onprem
  - name: onprem-a100
    context: other
  - name: Cloud
    server: ftp://ops:SECRET@cloud.example
    token: tok-SECRET-1
  - name: both
    context: c
    server: https://both.example
  - name: bare
  - name: notoken
    server: https://n.example
  - name: twotokens
    server: https://n.example
    token: tok-SECRET-2
    tokenFile: f
  - name: ctxtoken
    context: c
    token: tok-SECRET-3
`)
	_, errOut, code := runDriftCommand(t, "get", "pools", "--all-clusters")
	for _, want := range []string{
		path + `:6: clusters[1].name: "onprem-a100" is a second cluster of that name`,
		path + `:8: clusters[2].name: "Cloud" is not a name`,
		path + `:9: clusters[2].server: "ftp://ops:xxxxx@cloud.example" is not an http:// or https:// URL`,
		path + `:13: clusters[3]: server or context/kubeconfig/namespace, not both`,
		path + `:14: clusters[4]: context (a kubeconfig context) or server (gpuctl-reconciler's API) required`,
		path + `:16: clusters[5]: token or tokenFile required with server`,
		path + `:20: clusters[6]: token or tokenFile, not both`,
		path + `:23: clusters[7]: token and tokenFile go with server only`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the errors lack %q:\n%s", want, errOut)
		}
	}
	if code != ExitTrouble {
		t.Errorf("exit %d, want 2", code)
	}
	noSecret(t, errOut)

	fleetConfig(t, "clusters:\n  - name: a\n    contxt: onprem\n")
	if _, errOut, code := runDriftCommand(t, "get", "pools", "--all-clusters"); code != ExitTrouble ||
		!regexp.MustCompile(`/gpuctl/config:3: field contxt not found in a cluster`).MatchString(errOut) {
		t.Errorf("a typo: exit %d, %s", code, errOut)
	}
}

// TestFleetKubeconfigContexts: a cluster of a kubeconfig context is read with the kubeconfig;
// one whose API server does not answer is unreachable (exit 1), one whose context the
// kubeconfig lacks is its own configuration's fault (exit 2); the daemon's cluster still prints.
func TestFleetKubeconfigContexts(t *testing.T) {
	cloud := fleetAPI(t, "cloud", "tok-SECRET-cloud")
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
  - name: onprem
    cluster: {server: `+down.URL+`}
users:
  - name: me
    user: {token: kube-SECRET}
contexts:
  - name: onprem
    context: {cluster: onprem, user: me}
current-context: onprem
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("clusters:\n  - name: cloud-h100\n    server: %s\n    token: tok-SECRET-cloud\n"+
		"  - name: onprem-a100\n    context: onprem\n    kubeconfig: %s\n", cloud.URL, kubeconfig)
	fleetConfig(t, cfg)
	out, errOut, code := runDriftCommand(t, "get", "pools", "--all-clusters")
	if code != ExitFailed || !strings.Contains(out, "cloud-h100   pool-cloud ") ||
		!regexp.MustCompile(`(?m)^cluster onprem-a100: unreachable: .*connection refused`).MatchString(errOut) {
		t.Errorf("an unreachable context: exit %d\n%s%s", code, out, errOut)
	}
	fleetConfig(t, cfg+"  - name: gone\n    context: gone\n    kubeconfig: "+kubeconfig+"\n")
	out, errOut, code = runDriftCommand(t, "get", "pools", "--all-clusters")
	if code != ExitTrouble || !strings.Contains(out, "cloud-h100   pool-cloud ") ||
		!regexp.MustCompile(`(?m)^cluster gone: kubeconfig: .*"gone"`).MatchString(errOut) {
		t.Errorf("a missing context: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, out, errOut)
}

// TestLogsAllClusters: logs finds the job in the cluster that has it; a job of two clusters is
// exit 2 naming both; a job of none is exit 1, and with a cluster down says it was not
// searched.
func TestLogsAllClusters(t *testing.T) {
	twoClusters(t, false)
	out, errOut, code := runDriftCommand(t, "logs", "sft-onprem", "--all-clusters")
	if code != 0 || out != "[rank-0] log of alice.sft-onprem in onprem\n" {
		t.Errorf("logs: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runDriftCommand(t, "logs", "shared", "--all-clusters"); code != ExitTrouble ||
		!strings.Contains(errOut, `job "shared" is in more than one place: cloud-h100 alice.shared, onprem-a100 alice.shared`) {
		t.Errorf("a job of two clusters: exit %d, %s", code, errOut)
	}
	if _, errOut, code := runDriftCommand(t, "describe", "job", "nope", "--clusters", "cloud-h100", "-o", "json"); code != ExitFailed ||
		!strings.Contains(errOut, `"nope"`) {
		t.Errorf("a job of no cluster: exit %d, %s", code, errOut)
	}
	twoClusters(t, true)
	if _, errOut, code := runDriftCommand(t, "logs", "sft-onprem", "--all-clusters"); code != ExitFailed ||
		!strings.Contains(errOut, "cluster onprem-a100: unreachable") ||
		!strings.Contains(errOut, `job "sft-onprem" is in none of the clusters that answered; not searched: onprem-a100`) {
		t.Errorf("the job's cluster down: exit %d, %s", code, errOut)
	}
}

// TestGetQuotaAllClusters: a team is listed where a cluster knows it; a team that no cluster
// knows is exit 1.
func TestGetQuotaAllClusters(t *testing.T) {
	twoClusters(t, false)
	out, errOut, code := runDriftCommand(t, "get", "quotas", "onprem", "--all-clusters")
	if code != 0 || !regexp.MustCompile(`^CLUSTER +TEAM +GPU +CPU +MEMORY\nonprem-a100 +onprem +0/4 +<none> +<none>\n$`).MatchString(out) {
		t.Errorf("a team of one cluster: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := runDriftCommand(t, "get", "quotas", "nobody", "--all-clusters"); code != ExitFailed || !strings.Contains(errOut, "in no cluster: ") {
		t.Errorf("a team of no cluster: exit %d, %s", code, errOut)
	}
}
