package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/client-go/kubernetes/fake"
	sigsyaml "sigs.k8s.io/yaml"
)

// driftNow is the fixed reference time of the drift tests.
var driftNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// driftFixture is a report of a modified Deployment and a shadow Job, and a history with one
// entry of two days ago and two of the last hour.
func driftFixture() (drift.Report, []drift.Entry) {
	changed := driftNow.Add(-10 * time.Minute)
	web := drift.Item{
		Object:   object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-a", Name: "web"},
		Category: drift.Modified, Source: "teams/a/web.yaml", Message: "1 field differs",
		Fields:  []drift.Field{{Path: "spec.replicas", Desired: 1, Live: 3, Manager: "kubectl-edit", Operation: "Update", Time: &changed}},
		Manager: "kubectl-edit", Changed: &changed, Detected: driftNow.Add(-9 * time.Minute),
	}
	shadow := drift.Item{
		Object:   object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "team-b", Name: "sweep"},
		Category: drift.Shadow, Message: "4 GPUs, not in Git", GPUs: 4, Detected: driftNow.Add(-3 * 24 * time.Hour),
	}
	old := drift.Item{Object: object.Ref{Kind: "Service", Namespace: "team-a", Name: "old-svc"}, Category: drift.Deleted}
	r := drift.Report{Generated: driftNow.Add(-time.Minute), Mode: drift.ModeReport, Revision: "0123456789abcdef", Items: []drift.Item{web, shadow}}
	hist := []drift.Entry{
		{Time: driftNow.Add(-48 * time.Hour), Change: drift.Resolved, Item: old},
		{Time: driftNow.Add(-9 * time.Minute), Change: drift.Detected, Item: web},
		{Time: driftNow.Add(-5 * time.Minute), Change: drift.Changed, Item: web},
	}
	return r, hist
}

func TestPrintDriftOutputs(t *testing.T) {
	r, hist := driftFixture()
	for _, output := range []string{"text", "json", "yaml", "markdown"} {
		t.Run(output, func(t *testing.T) {
			var day, all bytes.Buffer
			if err := printDrift(&day, r.Since(hist, 24*time.Hour, driftNow), output, driftNow); err != nil {
				t.Fatal(err)
			}
			if err := printDrift(&all, r.Since(hist, 0, driftNow), output, driftNow); err != nil {
				t.Fatal(err)
			}
			// Both list the current drift, however old; only --since 0 has the resolved entry
			// of two days ago.
			for name, out := range map[string]string{"24h": day.String(), "0": all.String()} {
				if !strings.Contains(out, "team-a") || !strings.Contains(out, "sweep") {
					t.Errorf("--since %s: drift not listed:\n%s", name, out)
				}
			}
			if strings.Contains(day.String(), "old-svc") || !strings.Contains(all.String(), "old-svc") {
				t.Errorf("--since 24h lists the entry of two days ago, or --since 0 does not:\n%s\n---\n%s", day.String(), all.String())
			}
			var rep drift.Report
			switch output {
			case "json":
				if err := json.Unmarshal(day.Bytes(), &rep); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, day.String())
				}
			case "yaml":
				if err := sigsyaml.Unmarshal(day.Bytes(), &rep); err != nil {
					t.Fatalf("not YAML: %v\n%s", err, day.String())
				}
			case "text":
				for _, want := range []string{"revision 0123456789ab · mode report", "spec.replicas: 3 (Git: 1)", "4 GPUs, not in Git", "History (2 changes)"} {
					if !strings.Contains(day.String(), want) {
						t.Errorf("text lacks %q:\n%s", want, day.String())
					}
				}
			case "markdown":
				for _, want := range []string{"### gpuctl drift report", "**2 drifted: 1 modified, 1 shadow (4 GPUs)**", "<summary>History (2 changes)</summary>"} {
					if !strings.Contains(day.String(), want) {
						t.Errorf("markdown lacks %q:\n%s", want, day.String())
					}
				}
			}
			if output == "json" || output == "yaml" {
				if len(rep.Items) != 2 || len(rep.History) != 2 || rep.History[1].Change != drift.Changed {
					t.Errorf("%s: %d items, history %+v", output, len(rep.Items), rep.History)
				}
			}
		})
	}
}

func TestPrintDriftEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := printDrift(&buf, drift.Report{}, "text", driftNow); err != nil || buf.String() != "no drift\n" {
		t.Fatalf("%v %q", err, buf.String())
	}
	buf.Reset()
	if err := printDrift(&buf, drift.Report{}, "yaml", driftNow); err != nil || !strings.Contains(buf.String(), "items: []") {
		t.Fatalf("%v %q", err, buf.String())
	}
}

func TestDriftExit(t *testing.T) {
	r, _ := driftFixture()
	cases := map[string]struct {
		r        drift.Report
		exitCode bool
		want     int
	}{
		"drift, no --exit-code":      {r, false, 0},
		"drift, --exit-code":         {r, true, ExitFailed},
		"no drift, --exit-code":      {drift.Report{Mode: drift.ModeReport}, true, 0},
		"truncated only, -exit-code": {drift.Report{Truncated: 3}, true, ExitFailed},
	}
	for name, tc := range cases {
		if got := Code(driftExit(tc.r, tc.exitCode)); got != tc.want {
			t.Errorf("%s: exit %d, want %d", name, got, tc.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "24h": 24 * time.Hour, "30m": 30 * time.Minute, "7d": 7 * 24 * time.Hour, "1.5d": 36 * time.Hour} {
		if got, err := parseSince(in); err != nil || got != want {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "-1h", "7days"} {
		if _, err := parseSince(in); err == nil {
			t.Errorf("parseSince(%q) accepted", in)
		}
	}
}

// runDriftCommand runs gpuctl with args and returns stdout, stderr (with the error, as main
// prints it) and the exit code.
func runDriftCommand(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewRootCommand(Streams{Out: &out, Err: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil && err.Error() != "" {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), Code(err)
}

// TestDriftFlags: bad flags exit 2 before any cluster is contacted (the kubeconfig does not
// exist).
func TestDriftFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"bad output":     {[]string{"-o", "xml"}, `unsupported output format "xml" (allowed: [text json yaml markdown])`},
		"bad since":      {[]string{"--since", "yesterday"}, `--since: "yesterday" is not a duration such as 30m, 24h or 7d (0 for all)`},
		"negative since": {[]string{"--since", "-1h"}, `--since: "-1h" is negative`},
		"arguments":      {[]string{"extra"}, `unknown command "extra"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"drift", "--kubeconfig", "/does/not/exist"}, tc.args...)
			out, errOut, code := runDriftCommand(t, args...)
			if code != ExitTrouble || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "kubeconfig") {
				t.Errorf("exit %d (want %d), stderr lacks %q or names the kubeconfig:\n%s%s", code, ExitTrouble, tc.want, out, errOut)
			}
		})
	}
	if _, errOut, code := runDriftCommand(t, "drift", "--kubeconfig", "/does/not/exist"); code != ExitTrouble || !strings.Contains(errOut, "kubeconfig") {
		t.Errorf("missing kubeconfig: exit %d, stderr %q", code, errOut)
	}
	if out, _, code := runDriftCommand(t, "drift", "--help"); code != 0 || !strings.Contains(out, "--exit-code") || !strings.Contains(out, "gpuctl drift --since 7d") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}

// TestRunDriftStore reads the drift ConfigMap through a fake clientset: only the store's
// Get of one ConfigMap is involved, no API-server behaviour.
func TestRunDriftStore(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	o := driftOptions{output: "text", exitCode: true}
	rec := kubeRecords{client: kube, namespace: keys.SystemNamespace}

	var out bytes.Buffer
	err := runDrift(ctx, &out, rec, o, 24*time.Hour, driftNow)
	if Code(err) != ExitTrouble || out.Len() != 0 {
		t.Fatalf("without ConfigMap: exit %d, output %q", Code(err), out.String())
	}
	for _, want := range []string{"no drift report in namespace " + keys.SystemNamespace + " yet", "gpuctl-drift", "gpuctl-reconciler writes it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}

	r, hist := driftFixture()
	if err := drift.NewStore(kube, keys.SystemNamespace).Write(ctx, r, hist); err != nil {
		t.Fatal(err)
	}
	err = runDrift(ctx, &out, rec, o, 24*time.Hour, driftNow)
	if Code(err) != ExitFailed || err.Error() != "" {
		t.Fatalf("with drift and --exit-code: exit %d, error %v", Code(err), err)
	}
	if !strings.Contains(out.String(), "2 drifted: 1 modified, 1 shadow (4 GPUs)") || !strings.Contains(out.String(), "History (2 changes)") {
		t.Errorf("output:\n%s", out.String())
	}

	o.exitCode, rec.namespace = false, "elsewhere"
	if err := runDrift(ctx, &out, rec, o, 0, driftNow); Code(err) != ExitTrouble || !strings.Contains(err.Error(), "namespace elsewhere") {
		t.Errorf("other namespace: %v", err)
	}
}
