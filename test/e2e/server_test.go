package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/syncbuf"
	"github.com/gpuctl/gpuctl/test/testcluster"
)

// gpuctl --server against the real gpuctl-reconciler binary, with an admin token and a team
// token (namespace srv-a): the same answers as the kubeconfig's, and the team's limits.

const (
	serverAdminToken = "srv-admin-secret"
	serverTeamToken  = "srv-team-secret"
	// serverSystem is the daemon's namespace.
	serverSystem = "srv-system"
)

// startDaemon builds and starts gpuctl-reconciler on a directory of the files (name →
// content) with the token file, and returns its URL once it answers /healthz.
func startDaemon(t testing.TB, files map[string]string, tokens string) string {
	t.Helper()
	ctx := t.Context()
	bin := filepath.Join(t.TempDir(), "gpuctl-reconciler")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../../cmd/gpuctl-reconciler").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	repo, tokenFile := t.TempDir(), filepath.Join(t.TempDir(), "tokens")
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--source=dir:"+repo, "--kubeconfig", testcluster.Current().Kubeconfig,
		"--namespace", serverSystem, "--listen", addr, "--tokens-file", tokenFile, "--log-format", "json")
	logPath := filepath.Join(t.TempDir(), "log")
	logf, _ := os.Create(logPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if log, _ := os.ReadFile(logPath); t.Failed() {
			t.Logf("gpuctl-reconciler log:\n%s", log)
		}
		for _, tok := range []string{serverAdminToken, serverTeamToken} {
			if log, _ := os.ReadFile(logPath); strings.Contains(string(log), tok) {
				t.Errorf("the daemon logged a token")
			}
		}
	})
	url := "http://" + addr
	waitUntil(t, "gpuctl-reconciler's /healthz", func(ctx context.Context) bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return url
}

// gpuctlServer runs the CLI against the daemon's API with a token from $GPUCTL_TOKEN.
func gpuctlServer(t *testing.T, url, token string, args ...string) (string, string, int) {
	t.Helper()
	t.Setenv("GPUCTL_TOKEN", token)
	return runGpuctl(t, append(args, "--server", url)...)
}

// eventually calls read until it answers the same twice in a row from both sides (the cluster
// moves: events arrive, pods start) and reports the last difference.
func eventually(t *testing.T, what string, read func() (any, any)) {
	t.Helper()
	var want, got any
	for range 40 {
		if want, got = read(); reflect.DeepEqual(want, got) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	g, _ := json.MarshalIndent(got, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	t.Errorf("%s through the API:\n%s\nthrough the kubeconfig:\n%s", what, g, w)
}

func TestServerFlagAgainstTheDaemon(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(testcluster.Current().RESTConfig())
	a := logsNamespace(t, kube, "srv-a")
	b := logsNamespace(t, kube, "srv-b")
	trainingJob(t, kube, a, "alpha", 2, 1, false)
	trainingJob(t, kube, b, "beta", 1, 1, false)
	trainingJob(t, kube, a, "shared", 1, 1, true)
	trainingJob(t, kube, b, "shared", 1, 1, true)
	trainingJob(t, kube, a, "too-big", 1, 64, false)
	// The pods exist before the quotas: a quota would refuse too-big's, and every pod asked for
	// before the quota controller has computed a new quota's status.
	for _, w := range []struct {
		ns, app string
		pods    int
	}{{a, "too-big", 1}, {a, "alpha", 2}, {b, "beta", 1}} {
		waitUntil(t, "the pods of "+w.app, func(ctx context.Context) bool {
			l, err := kube.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: keys.App + "=" + w.app})
			return err == nil && len(l.Items) == w.pods
		})
	}
	for _, ns := range []string{a, b} {
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: ns, Labels: map[string]string{keys.Quota: ns}},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{keys.QuotaRequestsGPU: *resource.NewQuantity(16, resource.DecimalSI)}}}
		if _, err := kube.CoreV1().ResourceQuotas(ns).Create(t.Context(), q, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		quotaComputed(t, kube, ns, "team")
	}
	for _, p := range startedPods(t, kube, a, "alpha", 2) {
		writeLog(t, a, p.Name, "hello from "+p.Name, "step 1 loss 0.5")
	}
	writeLog(t, b, startedPods(t, kube, b, "beta", 1)[0].Name, "beta secret line")
	waitUntil(t, "FailedScheduling of too-big", func(ctx context.Context) bool {
		l, err := (&cluster.Reader{Client: kube}).JobEvents(ctx, a+".too-big")
		return err == nil && hasReason(l, "FailedScheduling")
	})

	web := "kind: compute\nversion: v0.1\njob: {name: srv-web, namespace: default}\nenvironment: {image: nginx}\n"
	url := startDaemon(t, map[string]string{"web.yaml": web}, fmt.Sprintf("%s,ops,admin\n%s,team-a,namespaces=%s\n", serverAdminToken, serverTeamToken, a))
	// The daemon's namespace holds its pool registry, applied revision and drift report: the
	// kubeconfig's side reads the same one.
	reader := &cluster.Reader{Client: kube, Namespace: serverSystem}
	admin, err := app.RemoteModel(url, serverAdminToken)
	if err != nil {
		t.Fatal(err)
	}
	team, _ := app.RemoteModel(url, serverTeamToken)
	ctx := t.Context()

	// Every method of cluster.Model: the API's answers decode to the reader's, for the admin
	// as the whole model, for the team as cluster.Scope of its namespace.
	teamView := cluster.Scope(reader, []string{a})
	pools, _ := reader.Pools(ctx)
	nodes, _ := reader.Nodes(ctx, cluster.NodeFilter{})
	if len(pools.Items) == 0 || len(nodes.Items) == 0 {
		t.Fatalf("no pools or nodes: %+v %+v", pools, nodes)
	}
	logsOf := func(m cluster.Model, id string) any {
		var lines []cluster.LogLine
		err := m.Logs(ctx, id, cluster.DefaultLogOptions(), func(l cluster.LogLine) error { lines = append(lines, l); return nil })
		return fmt.Sprint(lines, err)
	}
	calls := map[string]func(m cluster.Model) any{
		"Jobs": func(m cluster.Model) any { return answer(m.Jobs(ctx, cluster.JobFilter{})) },
		"Jobs page": func(m cluster.Model) any {
			return answer(m.Jobs(ctx, cluster.JobFilter{Page: cluster.Page{Number: 2, Size: 2}}))
		},
		"Jobs filter": func(m cluster.Model) any {
			return answer(m.Jobs(ctx, cluster.JobFilter{Kind: "training", Status: "pending"}))
		},
		"Jobs bad":     func(m cluster.Model) any { return answer(m.Jobs(ctx, cluster.JobFilter{Status: "bogus"})) },
		"Job":          func(m cluster.Model) any { return answer(m.Job(ctx, a+".alpha")) },
		"Job bare":     func(m cluster.Model) any { return answer(m.Job(ctx, "alpha")) },
		"Job shared":   func(m cluster.Model) any { return answer(m.Job(ctx, "shared")) },
		"Job other":    func(m cluster.Model) any { return answer(m.Job(ctx, b+".beta")) },
		"Pools":        func(m cluster.Model) any { return answer(m.Pools(ctx)) },
		"Pool":         func(m cluster.Model) any { return answer(m.Pool(ctx, pools.Items[0].Name)) },
		"Pool unknown": func(m cluster.Model) any { return answer(m.Pool(ctx, "nowhere")) },
		"Nodes":        func(m cluster.Model) any { return answer(m.Nodes(ctx, cluster.NodeFilter{})) },
		"Nodes page": func(m cluster.Model) any {
			return answer(m.Nodes(ctx, cluster.NodeFilter{Page: cluster.Page{Number: 1, Size: 3}}))
		},
		"Node":         func(m cluster.Model) any { return answer(m.Node(ctx, nodes.Items[0].NodeName)) },
		"Quotas":       func(m cluster.Model) any { return answer(m.Quotas(ctx)) },
		"Quota":        func(m cluster.Model) any { return answer(m.Quota(ctx, a)) },
		"Quota other":  func(m cluster.Model) any { return answer(m.Quota(ctx, b)) },
		"JobEvents":    func(m cluster.Model) any { return answer(m.JobEvents(ctx, a+".too-big")) },
		"Events ns":    func(m cluster.Model) any { return answer(m.Events(ctx, a)) },
		"Events all":   func(m cluster.Model) any { return answer(m.Events(ctx, "")) },
		"Logs":         func(m cluster.Model) any { return logsOf(m, a+".alpha") },
		"Logs other":   func(m cluster.Model) any { return logsOf(m, b+".beta") },
		"Logs no pods": func(m cluster.Model) any { return logsOf(m, "shared") },
		"Logs too-big": func(m cluster.Model) any { return logsOf(m, a+".too-big") },
		"JobPods":      func(m cluster.Model) any { return answer(m.JobPods(ctx, cluster.JobPodFilter{})) },
		"JobPods ns":   func(m cluster.Model) any { return answer(m.JobPods(ctx, cluster.JobPodFilter{Namespace: a})) },
		"JobPods other ns": func(m cluster.Model) any {
			return answer(m.JobPods(ctx, cluster.JobPodFilter{Namespace: b}))
		},
		"JobPods filter": func(m cluster.Model) any {
			return answer(m.JobPods(ctx, cluster.JobPodFilter{Kind: "training", Status: "pending", Selector: keys.App + "!=beta"}))
		},
		"JobPods bad":         func(m cluster.Model) any { return answer(m.JobPods(ctx, cluster.JobPodFilter{Selector: "a b c"})) },
		"WatchJobPods":        func(m cluster.Model) any { return firstWatch(ctx, m, cluster.JobPodFilter{}) },
		"WatchJobPods other":  func(m cluster.Model) any { return firstWatch(ctx, m, cluster.JobPodFilter{Namespace: b}) },
		"JobDescription":      func(m cluster.Model) any { return answer(m.JobDescription(ctx, a+".too-big")) },
		"JobDescription bare": func(m cluster.Model) any { return answer(m.JobDescription(ctx, "alpha")) },
		"JobDescription shared": func(m cluster.Model) any {
			return answer(m.JobDescription(ctx, "shared"))
		},
		"JobDescription web":   func(m cluster.Model) any { return answer(m.JobDescription(ctx, "default.srv-web")) },
		"JobDescription other": func(m cluster.Model) any { return answer(m.JobDescription(ctx, b+".beta")) },
		"JobDescription other bare": func(m cluster.Model) any {
			return answer(m.JobDescription(ctx, "beta"))
		},
	}
	for name, call := range calls {
		eventually(t, "admin "+name, func() (any, any) { return call(reader), call(admin) })
		eventually(t, "team "+name, func() (any, any) { return call(teamView), call(team) })
	}
	if l, _ := team.Jobs(ctx, cluster.JobFilter{}); l.Total != 3 {
		t.Errorf("the team sees %d jobs, want its 3: %+v", l.Total, l.Items)
	}
	// The team's token: another team's job is unknown to the read model, by id and bare name.
	for _, id := range []string{b + ".beta", "beta"} {
		var nf *cluster.NotFoundError
		if _, err := team.JobDescription(ctx, id); !errors.As(err, &nf) || err.Error() != `unknown job "`+id+`"` {
			t.Errorf("team: JobDescription(%s): %v", id, err)
		}
	}
	if l, err := team.JobPods(ctx, cluster.JobPodFilter{}); err != nil || len(l.Items) == 0 || slices.ContainsFunc(l.Items, func(p cluster.JobPod) bool { return p.Namespace != a }) {
		t.Errorf("team: JobPods: %v %+v", err, l.Items)
	}
	if d, err := admin.JobDescription(ctx, "default.srv-web"); err != nil || d.Revision == "" || d.Job.Source != "web.yaml" {
		t.Errorf("admin: describe the daemon's job: want its revision and source: %v %+v", err, d)
	}

	// The CLI prints the same both ways, and exits the same.
	for _, args := range [][]string{
		{"logs", a + ".alpha"}, {"logs", "alpha", "--tail", "1", "--grep", "loss"}, {"logs", "shared"}, {"logs", "nothing"},
		{"events", a + ".too-big", "-o", "json"}, {"events", "-n", a, "-o", "yaml"}, {"events", "-A", "-o", "json"},
	} {
		eventually(t, "gpuctl "+strings.Join(args, " "), func() (any, any) {
			out, errOut, code := gpuctl(t, args...)
			sOut, sErr, sCode := gpuctlServer(t, url, serverAdminToken, args...)
			return fmt.Sprint(code, "\n", out, errOut), fmt.Sprint(sCode, "\n", sOut, sErr)
		})
	}
	// get and describe print the same text both ways (ages aside). Without -n or -A, --server
	// lists every namespace its token sees, the kubeconfig the context's namespace.
	for _, c := range []struct {
		token  string
		direct []string
		server []string
	}{
		{serverAdminToken, []string{"get", "jobs", "-A"}, []string{"get", "jobs", "-A"}},
		{serverAdminToken, []string{"get", "jobs", "-A", "-o", "wide"}, []string{"get", "jobs", "-o", "wide"}},
		{serverAdminToken, []string{"get", "jobs", "-n", a, "--status", "pending"}, []string{"get", "jobs", "-n", a, "--status", "pending"}},
		{serverAdminToken, []string{"get", "jobs", "-A", "-o", "json"}, []string{"get", "jobs", "-A", "-o", "json"}},
		{serverAdminToken, []string{"get", "pools"}, []string{"get", "pools"}},
		{serverAdminToken, []string{"get", "pools", "-o", "wide"}, []string{"get", "pools", "-o", "wide"}},
		{serverAdminToken, []string{"get", "nodes"}, []string{"get", "nodes"}},
		{serverAdminToken, []string{"get", "nodes", "-o", "wide"}, []string{"get", "nodes", "-o", "wide"}},
		{serverAdminToken, []string{"get", "quotas"}, []string{"get", "quotas"}},
		{serverAdminToken, []string{"get", "quotas", "-o", "wide"}, []string{"get", "quotas", "-o", "wide"}},
		{serverAdminToken, []string{"describe", "job", a + ".too-big"}, []string{"describe", "job", a + ".too-big"}},
		{serverAdminToken, []string{"describe", "job", "srv-web"}, []string{"describe", "job", "srv-web"}},
		{serverAdminToken, []string{"describe", "job", "shared"}, []string{"describe", "job", "shared"}},
		{serverAdminToken, []string{"describe", "job", "alpha", "-o", "yaml"}, []string{"describe", "job", "alpha", "-o", "yaml"}},
		{serverAdminToken, []string{"describe", "pool", pools.Items[0].Name}, []string{"describe", "pool", pools.Items[0].Name}},
		{serverAdminToken, []string{"describe", "node", nodes.Items[0].NodeName}, []string{"describe", "node", nodes.Items[0].NodeName}},
		{serverAdminToken, []string{"describe", "quota", a}, []string{"describe", "quota", a}},
		{serverTeamToken, []string{"get", "jobs", "-n", a, "-o", "wide"}, []string{"get", "jobs", "-o", "wide"}},
		{serverTeamToken, []string{"get", "jobs", "-n", a}, []string{"get", "jobs", "-A"}},
		{serverTeamToken, []string{"get", "pools"}, []string{"get", "pools"}},
		{serverTeamToken, []string{"get", "quotas", a}, []string{"get", "quotas"}},
		{serverTeamToken, []string{"describe", "job", a + ".shared"}, []string{"describe", "job", "shared"}},
		{serverTeamToken, []string{"describe", "job", "nothing"}, []string{"describe", "job", "nothing"}},
	} {
		eventually(t, "gpuctl "+strings.Join(c.server, " "), func() (any, any) {
			out, errOut, code := gpuctl(t, append(c.direct, "--reconciler-namespace", serverSystem)...)
			sOut, sErr, sCode := gpuctlServer(t, url, c.token, c.server...)
			return fmt.Sprint(code, "\n", normalizeAges(out), errOut), fmt.Sprint(sCode, "\n", normalizeAges(sOut), sErr)
		})
	}

	// The team's token: another team's job is unknown, as a job that does not exist.
	for _, args := range [][]string{{"logs", b + ".beta"}, {"events", b + ".beta"}, {"logs", "beta"},
		{"describe", "job", b + ".beta"}, {"describe", "job", "beta"}} {
		_, errOut, code := gpuctlServer(t, url, serverTeamToken, args...)
		if want := `error: unknown job "` + args[len(args)-1] + `"` + "\n"; code != app.ExitFailed || errOut != want {
			t.Errorf("team: gpuctl %s: exit %d %q, want %q", strings.Join(args, " "), code, errOut, want)
		}
	}
	out, _, code := gpuctlServer(t, url, serverTeamToken, "events", "-A")
	if code != 0 || strings.Contains(out, b) || !strings.Contains(out, "FailedScheduling") {
		t.Errorf("team: events -A: exit %d\n%s", code, out)
	}
	if _, errOut, code := gpuctlServer(t, url, serverTeamToken, "logs", "shared"); code != app.ExitFailed ||
		!strings.Contains(errOut, "job "+a+".shared has no pods yet") {
		t.Errorf("team: logs shared: exit %d %s", code, errOut)
	}
	if _, errOut, code := gpuctlServer(t, url, "wrong-token-value", "logs", "alpha"); code != app.ExitTrouble ||
		!strings.Contains(errOut, "the token was refused") || strings.Contains(errOut, "wrong-token-value") {
		t.Errorf("a wrong token: exit %d %s", code, errOut)
	}

	// WatchJobPods through the API (it asks every 2 s): the team sees a job of its namespace
	// appear, and never the other team's.
	watchCtx, stopWatch := context.WithCancel(ctx)
	lists := make(chan cluster.JobPodList, 16)
	watched := make(chan error, 1)
	go func() {
		watched <- team.WatchJobPods(watchCtx, cluster.JobPodFilter{}, func(l cluster.JobPodList) error {
			select {
			case lists <- l:
			case <-watchCtx.Done():
			}
			return nil
		})
	}()
	if first := <-lists; slices.ContainsFunc(first.Items, func(p cluster.JobPod) bool { return p.Name == "late" }) {
		t.Fatalf("team: the first list has late already: %+v", first.Items)
	}
	trainingJob(t, kube, b, "late", 1, 0, true)
	trainingJob(t, kube, a, "late", 1, 0, true)
	within := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case l := <-lists:
			for _, p := range l.Items {
				if p.Namespace != a {
					t.Fatalf("team: the watch shows %s.%s", p.Namespace, p.Name)
				}
				seen = seen || p.Name == "late"
			}
		case <-within:
			t.Fatal("team: WatchJobPods through the API did not show the new job within 10 s")
		}
	}
	stopWatch()
	if err := <-watched; err != nil {
		t.Errorf("team: WatchJobPods ended with %v", err)
	}

	// logs -f through the API shows a new line within a second.
	pod := startedPods(t, kube, a, "alpha", 2)[0].Name
	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.Setenv("GPUCTL_TOKEN", serverTeamToken)
	var follow, followErr syncbuf.Buffer
	done := make(chan int)
	go func() {
		cmd := app.NewRootCommand(app.Streams{Out: &follow, Err: &followErr})
		cmd.SetArgs([]string{"logs", "alpha", "-f", "--tail", "0", "--server", url})
		done <- app.Code(cmd.ExecuteContext(followCtx))
	}()
	time.Sleep(time.Second) // the stream is open
	writeLog(t, a, pod, "a line written now")
	deadline := time.Now().Add(time.Second)
	for !strings.Contains(follow.String(), "a line written now") {
		if time.Now().After(deadline) {
			t.Fatalf("logs -f --server: no line within 1s:\n%s%s", follow.String(), followErr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("logs -f --server ended with exit %d: %s", code, followErr.String())
	}
}

// firstWatch is the first list that WatchJobPods emits, or its error.
func firstWatch(ctx context.Context, m cluster.Model, f cluster.JobPodFilter) any {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first any
	err := m.WatchJobPods(ctx, f, func(l cluster.JobPodList) error {
		first = l
		cancel()
		return nil
	})
	if first == nil {
		return answer(first, err)
	}
	return first
}

// normalizeAges replaces the ages of a table or a description ("5s", "3m ago"): two runs a
// moment apart print them a second apart.
func normalizeAges(out string) string {
	return realign(age.ReplaceAllString(out, "1m"), nil)
}

// answer is a method's answer as one comparable value: the value, or the error's type and text.
func answer[T any](v T, err error) any {
	if err != nil {
		var nf *cluster.NotFoundError
		var amb *cluster.AmbiguousError
		var fe *cluster.FilterError
		var nl *cluster.NoLogsError
		switch {
		case errors.As(err, &nf), errors.As(err, &amb), errors.As(err, &fe), errors.As(err, &nl):
			return fmt.Sprintf("%T: %v", err, err)
		}
		return "error: " + err.Error()
	}
	return v
}
