package drift_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/internal/markdown"
	"github.com/gpuctl/gpuctl/internal/markdown/mdtest"
	"github.com/gpuctl/gpuctl/internal/object"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// now is the fixed reference time of the renderings.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *time.Time {
	t := now.Add(-d)
	return &t
}

// fullReport has one item of every category, a correction that failed and a history.
func fullReport() drift.Report {
	items := []drift.Item{
		{
			Object:   object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-a", Name: "web"},
			Category: drift.Modified, Source: "teams/a/web.yaml",
			Message: "2 fields differ from Git",
			Fields: []drift.Field{
				{Path: "spec.replicas", Desired: 1, Live: 3, Manager: "kubectl-edit", Operation: "Update", Time: ago(5 * time.Minute)},
				{Path: "spec.template.spec.containers[0].resources.limits", Desired: map[string]any{"nvidia.com/gpu": 2, "memory": "64Gi"},
					Manager: "kubectl-client-side-apply", Operation: "Update", Time: ago(7 * time.Minute), Inferred: true},
			},
			Manager: "kubectl-edit", Changed: ago(5 * time.Minute), Detected: now.Add(-4 * time.Minute),
		},
		{
			Object:   object.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "team-a", Name: "web-config"},
			Category: drift.Modified, Source: "teams/a/web.yaml",
			Message: "1 field differs from Git",
			Fields: []drift.Field{
				{Path: "data.config\\.yaml", Desired: "model: llama-3-8b\nbatch: 32\nlearning-rate: 0.0001\n",
					Live: "model: llama-3-70b\nbatch: 32\nlearning-rate: 0.0001\n", Manager: "helm", Operation: "Apply"},
			},
			Manager: "helm", Detected: now.Add(-3 * time.Hour),
			Correction: "re-apply 1 field", Error: "apply: Apply failed with 1 conflict: conflict with \"helm\": .data.config.yaml",
		},
		{
			Object:   object.Ref{APIVersion: "v1", Kind: "Service", Namespace: "team-a", Name: "web"},
			Category: drift.Deleted, Source: "teams/a/web.yaml",
			Message: "deleted from the cluster", Manager: "kubectl", Changed: ago(3 * time.Hour), Detected: now.Add(-3 * time.Hour),
			Correction: "re-create",
		},
		{
			Object:   object.Ref{APIVersion: "v1", Kind: "Node", Name: "gpu-node-1"},
			Category: drift.NodeLabel, Source: "pools/a100.yaml",
			Message: `label g8s.host/pool is "test", pool a100 sets "a100"`,
			Fields: []drift.Field{
				{Path: "metadata.labels.g8s\\.host/pool", Desired: "a100", Live: "test", Manager: "kubectl-label", Operation: "Update", Time: ago(26 * time.Hour)},
			},
			Manager: "kubectl-label", Changed: ago(26 * time.Hour), Detected: now.Add(-25 * time.Hour),
		},
		{
			Object:   object.Ref{APIVersion: "v1", Kind: "Node", Name: "gpu-node-9"},
			Category: drift.NodeMissing, Source: "pools/a100.yaml",
			Message: "pool a100 names node gpu-node-9, which does not exist", Detected: now.Add(-50 * time.Hour),
		},
		{
			Object:   object.Ref{APIVersion: "v1", Kind: "Node", Name: "gpu-node-2"},
			Category: drift.GPUType, Source: "pools/h100.yaml",
			Message:  "pool h100 declares gpu-type H100, the node labeler found A100-80GB",
			Fields:   []drift.Field{{Path: "metadata.labels.g8s\\.host/gpu-type", Desired: "H100", Live: "A100-80GB"}},
			Detected: now.Add(-10 * 24 * time.Hour),
		},
		{
			Object:   object.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "team-b", Name: "adhoc-sweep"},
			Category: drift.Shadow, Message: "8 GPUs in a managed namespace, not in Git",
			Manager: "kubectl-create", Changed: ago(45 * time.Second), GPUs: 8, Detected: now.Add(-30 * time.Second),
		},
	}
	r := drift.Report{Generated: now.Add(-20 * time.Second), Mode: drift.ModeCorrect, Revision: "0123456789abcdef0123456789abcdef01234567", Items: items}
	hist := []drift.Entry{
		{Time: now.Add(-30 * time.Hour), Change: drift.Detected, Item: drift.Item{Object: object.Ref{Kind: "Deployment", Namespace: "team-a", Name: "old"}, Category: drift.Modified, Manager: "kubectl-scale"}},
		{Time: now.Add(-25 * time.Hour), Change: drift.Detected, Item: items[3]},
		{Time: now.Add(-3 * time.Hour), Change: drift.Detected, Item: items[1]},
		{Time: now.Add(-3 * time.Hour), Change: drift.Detected, Item: items[2]},
		{Time: now.Add(-2 * time.Hour), Change: drift.Corrected, Item: drift.Item{Object: object.Ref{Kind: "Deployment", Namespace: "team-a", Name: "old"}, Category: drift.Modified, Manager: "kubectl-scale"}},
		{Time: now.Add(-4 * time.Minute), Change: drift.Detected, Item: items[0]},
		{Time: now.Add(-3 * time.Minute), Change: drift.ShadowDeleted, Item: drift.Item{Object: object.Ref{Kind: "Pod", Namespace: "team-b", Name: "debug"}, Category: drift.Shadow, GPUs: 1, Manager: "kubectl-run"}},
		{Time: now.Add(-90 * time.Second), Change: drift.Detected, Item: drift.Item{Object: object.Ref{Kind: "Job", Namespace: "team-b", Name: "quick"}, Category: drift.Shadow, GPUs: 1, Manager: "kubectl-create"}},
		{Time: now.Add(-60 * time.Second), Change: drift.Resolved, Reason: "completed", Item: drift.Item{Object: object.Ref{Kind: "Job", Namespace: "team-b", Name: "quick"}, Category: drift.Shadow, GPUs: 1, Manager: "kubectl-create"}},
		{Time: now.Add(-30 * time.Second), Change: drift.Detected, Item: items[6]},
	}
	drift.Sort(r.Items)
	return r.Since(hist, 0, now)
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./drift -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test ./drift -run TestGolden -update if the change is intended):\n--- got\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	reports := map[string]drift.Report{
		"empty": {Generated: now.Add(-2 * time.Minute), Mode: drift.ModeReport, Revision: "fedcba9876543210"},
		"full":  fullReport(),
	}
	for name, r := range reports {
		t.Run(name, func(t *testing.T) {
			var txt, md, js bytes.Buffer
			if err := drift.WriteText(&txt, r, now); err != nil {
				t.Fatal(err)
			}
			if err := drift.WriteMarkdown(&md, r, now); err != nil {
				t.Fatal(err)
			}
			if err := drift.WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			golden(t, name+".txt", txt.Bytes())
			golden(t, name+".md", md.Bytes())
			golden(t, name+".json", js.Bytes())
			var back drift.Report
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Items) != len(r.Items) || len(back.History) != len(r.History) {
				t.Fatalf("JSON does not read back: %v (%d items, %d entries)", err, len(back.Items), len(back.History))
			}
		})
	}
}

func TestTextEmptyIsPlain(t *testing.T) {
	var buf bytes.Buffer
	if err := drift.WriteText(&buf, drift.Report{}, now); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "no drift\n" {
		t.Fatalf("got %q", buf.String())
	}
}

func TestTextDetails(t *testing.T) {
	var buf bytes.Buffer
	if err := drift.WriteText(&buf, fullReport(), now); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"revision 0123456789ab · mode correct · generated 2025-06-01 11:59:40 UTC (20s ago) · 7 drifted: 2 modified, 1 deleted, 1 node-label, 1 node-missing, 1 gpu-type, 1 shadow (8 GPUs)",
		"spec.replicas: 3 (Git: 1)",
		`spec.template.spec.containers[0].resources.limits: <none> (Git: {"memory":"64Gi","nvidia.com/gpu":2})`,
		`data.config\.yaml: model: llama-3-70b\nbatch: 32\nlearning… (Git: model: llama-3-8b\nbatch: 32\nlearning-…)`,
		"deleted; Git declares it in teams/a/web.yaml",
		"8 GPUs, not in Git",
		"pool a100 names node gpu-node-9, which does not exist",
		"re-apply 1 field (failed, see below)",
		"ConfigMap team-a/web-config: apply: Apply failed with 1 conflict",
		"2025-06-01 11:56:00  detected             modified    Deployment team-a/web        kubectl-edit",
		"2025-06-01 11:59:00  resolved: completed  shadow      Job team-b/quick             kubectl-create",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	// The second field continues under DETAIL.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.Contains(l, "spec.replicas: 3") {
			col := strings.Index(l, "spec.replicas")
			if next := lines[i+1]; strings.TrimSpace(next[:col]) != "" || !strings.HasPrefix(next[col:], "spec.template") {
				t.Errorf("second field not under DETAIL:\n%s\n%s", l, next)
			}
		}
	}
	// Without corrections there is no CORRECTION column.
	r := fullReport()
	for i := range r.Items {
		r.Items[i].Correction, r.Items[i].Error = "", ""
	}
	buf.Reset()
	_ = drift.WriteText(&buf, r, now)
	if strings.Contains(buf.String(), "CORRECTION") || strings.Contains(buf.String(), "Failed corrections") {
		t.Errorf("CORRECTION column without corrections:\n%s", buf.String())
	}
}

// cellCount counts the cells of a markdown table row: its unescaped pipes, minus one.
func cellCount(row string) int {
	n := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n - 1
}

// checkTables checks that every row of every markdown table has as many cells as its header.
func checkTables(t *testing.T, md string) {
	t.Helper()
	want := -1
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			want = -1
			continue
		}
		if want < 0 {
			want = cellCount(l)
			continue
		}
		if got := cellCount(l); got != want {
			t.Errorf("row has %d cells, its table %d: %s", got, want, l)
		}
	}
}

func TestMarkdownEscapes(t *testing.T) {
	r := drift.Report{Generated: now, Mode: drift.ModeReport, Items: []drift.Item{{
		Object:   object.Ref{Kind: "ConfigMap", Namespace: "ns", Name: "a|b"},
		Category: drift.Modified, Source: "x.yaml", Message: "m",
		Fields: []drift.Field{
			{Path: "data.cmd", Desired: "echo `id` | sh", Live: "a || b ``x``", Manager: "ed|it`or"},
			{Path: "data.edge", Desired: "`start", Live: "end`"},
		},
		Detected: now,
	}, {
		Object:   object.Ref{Kind: "Node", Name: "n"},
		Category: drift.NodeLabel, Message: "label <x> is *bold* | `code` [link](http://x)",
		Detected: now, Correction: "fix | now", Error: "fail `here`",
	}}}
	var buf bytes.Buffer
	if err := drift.WriteMarkdown(&buf, r, now); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	checkTables(t, md)
	for _, want := range []string{
		"`ConfigMap ns/a\\|b`",
		"``echo `id` \\| sh``",
		"``` a \\|\\| b ``x`` ```",
		"`` `start ``",
		"`` end` ``",
		"`ed\\|it`or`",
		"label \\<x\\> is \\*bold\\* \\| \\`code\\` \\[link\\](http://x)",
		"fix \\| now ❌ fail \\`here\\`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %s:\n%s", want, md)
		}
	}
	if strings.Contains(md, "<x>") {
		t.Errorf("raw HTML in markdown:\n%s", md)
	}
}

// Live objects and field managers are anyone's: a name, value or manager that holds a newline,
// a table row, a heading or HTML stays in its cell.
func TestMarkdownHostileValues(t *testing.T) {
	const evil = "x\n## Approved\n| x |<img src=x> @alice [a](http://e)"
	it := drift.Item{
		Object:   object.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: evil},
		Category: drift.Modified, Source: "teams/" + evil + ".yaml", Message: evil,
		Fields:  []drift.Field{{Path: "data." + evil, Desired: evil, Live: map[string]any{evil: evil}, Manager: evil, Operation: evil, Time: ago(time.Minute)}},
		Manager: evil, Detected: now, Correction: evil, Error: evil,
	}
	r := drift.Report{Generated: now, Mode: drift.ModeCorrect, Items: []drift.Item{it},
		History: []drift.Entry{{Time: now, Change: drift.Detected, Item: it}}}
	var buf bytes.Buffer
	if err := drift.WriteMarkdown(&buf, r, now); err != nil {
		t.Fatal(err)
	}
	out := mdtest.HTML(t, buf.String())
	if bad := mdtest.Injected(out); len(bad) > 0 {
		t.Errorf("%v in the HTML:\n%s\n%s", bad, buf.String(), out)
	}
	// the items, the field values and the history: a header and one row each
	if rows := mdtest.TableRows(out); fmt.Sprint(rows) != "[2 2 2]" {
		t.Errorf("table rows %v, want [2 2 2]:\n%s", rows, buf.String())
	}
	if mdtest.Mentions(out) {
		t.Errorf("a mention outside code:\n%s", out)
	}
}

// bigReport has n modified items of two fields each, and a history of 200 entries.
func bigReport(n int) drift.Report {
	r := drift.Report{Generated: now, Mode: drift.ModeReport, Revision: "abc"}
	for i := range n {
		it := drift.Item{
			Object:   object.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: fmt.Sprintf("team-%03d", i%100), Name: fmt.Sprintf("service-number-%04d", i)},
			Category: drift.Modified, Source: fmt.Sprintf("teams/%03d/service-%04d.yaml", i%100, i), Message: "2 fields differ",
			Fields: []drift.Field{
				{Path: "spec.replicas", Desired: 1, Live: 4, Manager: "kubectl-edit", Operation: "Update", Time: ago(time.Hour)},
				{Path: "spec.template.spec.containers[0].image", Desired: "registry.example.com/team/image:v1.2.3",
					Live: "registry.example.com/team/image:v1.2.4-hotfix", Manager: "kubectl-set", Operation: "Update", Time: ago(time.Hour)},
			},
			Manager: "kubectl-edit", Changed: ago(time.Hour), Detected: now,
		}
		r.Items = append(r.Items, it)
		if i < drift.DefaultHistory {
			r.History = append(r.History, drift.Entry{Time: now.Add(-time.Duration(i) * time.Minute), Change: drift.Detected, Item: it})
		}
	}
	return r
}

func TestMarkdownBound(t *testing.T) {
	var buf bytes.Buffer
	if err := drift.WriteMarkdown(&buf, bigReport(2000), now); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	if len(md) >= markdown.MaxChars {
		t.Fatalf("markdown of 2000 items is %d characters, want < %d", len(md), markdown.MaxChars)
	}
	m := regexp.MustCompile(`✂️ (\d+) of 2000 items are not listed here`).FindStringSubmatch(md)
	if m == nil {
		t.Fatalf("no truncation note:\n%s", md[len(md)-2000:])
	}
	var left int
	fmt.Sscan(m[1], &left)
	if rows := strings.Count(md, "\n| modified | "); rows+left != 2000 || rows < 100 {
		t.Errorf("%d rows listed + %d left out, want 2000 (and at least 100 listed)", rows, left)
	}
	for _, want := range []string{"<summary>Field values: Git and live</summary>", "more objects are left out", "<summary>History (200 changes)</summary>"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if strings.Count(md, "<details>") != strings.Count(md, "</details>") {
		t.Error("unbalanced <details>")
	}
	checkTables(t, md)
	t.Logf("2000 items: %d characters, %d rows listed, %d field blocks, %d history rows", len(md), 2000-left,
		strings.Count(md, "| Field | Git |"), strings.Count(md, "| detected | modified |"))

	// A report that fits is complete: no note.
	buf.Reset()
	_ = drift.WriteMarkdown(&buf, bigReport(20), now)
	if strings.Contains(buf.String(), "✂️") || strings.Count(buf.String(), "\n| modified | ") != 20 {
		t.Errorf("20 items truncated:\n%s", buf.String())
	}
}

func TestMarkdownStoredTruncation(t *testing.T) {
	r := bigReport(3)
	r.Truncated = 42
	var buf bytes.Buffer
	_ = drift.WriteMarkdown(&buf, r, now)
	if !strings.Contains(buf.String(), "42 more items are not in the report: a stored report keeps at most 500.") {
		t.Errorf("no note of the stored truncation:\n%s", buf.String())
	}
	buf.Reset()
	_ = drift.WriteText(&buf, r, now)
	if !strings.Contains(buf.String(), "42 more items not listed: a stored report keeps at most 500.") {
		t.Errorf("no note of the stored truncation:\n%s", buf.String())
	}
}
