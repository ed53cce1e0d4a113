package render_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

const teamsConfig = "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n"

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"

// countingServer answers every request and counts them.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		_, _ = w.Write([]byte("secret-from-metadata\n"))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestKustomizeNeverFetches: a configMapGenerator file that is a URL (cloud metadata
// credentials) is refused with file:line before kustomize runs, in a team directory and in an
// admin directory alike, and the server never hears a request.
func TestKustomizeNeverFetches(t *testing.T) {
	srv, hits := countingServer(t)
	for _, dir := range []string{"teams/alice", "platform"} {
		t.Run(dir, func(t *testing.T) {
			res, err := renderFiles(t, map[string]string{
				".gpuctl.yaml":   teamsConfig,
				dir + "/cm.yaml": configMap,
				dir + "/kustomization.yaml": "resources:\n  - cm.yaml\nconfigMapGenerator:\n  - name: creds\n    files:\n" +
					"      - creds=" + srv.URL + "/latest/meta-data/iam/security-credentials/node\n",
			})
			want := dir + "/kustomization.yaml:6:9: configMapGenerator[0].files[0]: a remote reference (URL or git repository) is refused"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("want an error %q, got %v", want, err)
			}
			if len(res.Objects) != 0 {
				t.Fatalf("objects rendered despite the error: %d", len(res.Objects))
			}
			if strings.Contains(err.Error(), "127.0.0.1") {
				t.Fatalf("the error quotes the URL: %v", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the renderer sent %d requests", n)
	}
}

// TestKustomizeRefusesRemoteInEveryField: each field that kustomize reads a path or URL from
// refuses a URL, with the field and its line; Helm is refused whole.
func TestKustomizeRefusesRemoteInEveryField(t *testing.T) {
	const url = "https://example.com/x.yaml"
	cases := map[string]struct {
		kustomization string // after a first line "resources: [cm.yaml]"
		field         string
		line          int
		want          string
	}{
		"resources":                {"resources:\n  - cm.yaml\n  - " + url + "\n", "resources[1]", 3, "remote reference"},
		"resources git@":           {"resources:\n  - cm.yaml\n  - git@github.com:org/repo.git//x\n", "resources[1]", 3, "remote reference"},
		"resources github.com":     {"resources:\n  - cm.yaml\n  - github.com/org/repo//x?ref=v1\n", "resources[1]", 3, "remote reference"},
		"resources git::":          {"resources:\n  - cm.yaml\n  - git::https://github.com/org/repo\n", "resources[1]", 3, "remote reference"},
		"resources ssh":            {"resources:\n  - cm.yaml\n  - ssh://git@host/org/repo\n", "resources[1]", 3, "remote reference"},
		"resources file://":        {"resources:\n  - cm.yaml\n  - file:///etc\n", "resources[1]", 3, "remote reference"},
		"resources absolute":       {"resources:\n  - cm.yaml\n  - /etc/passwd\n", "resources[1]", 3, "absolute path"},
		"resources missing":        {"resources:\n  - cm.yaml\n  - nothere\n", "resources[1]", 3, "does not exist"},
		"Resources in other case":  {"Resources:\n  - cm.yaml\n  - " + url + "\n", "resources[1]", 3, "remote reference"},
		"bases":                    {"resources: [cm.yaml]\nbases:\n  - " + url + "\n", "bases[0]", 3, "remote reference"},
		"components":               {"resources: [cm.yaml]\ncomponents:\n  - " + url + "\n", "components[0]", 3, "remote reference"},
		"patches path":             {"resources: [cm.yaml]\npatches:\n  - path: " + url + "\n", "patches[0].path", 3, "remote reference"},
		"patchesStrategicMerge":    {"resources: [cm.yaml]\npatchesStrategicMerge:\n  - " + url + "\n", "patchesStrategicMerge[0]", 3, "remote reference"},
		"patchesJson6902 path":     {"resources: [cm.yaml]\npatchesJson6902:\n  - target: {kind: ConfigMap, name: cm}\n    path: " + url + "\n", "patchesJson6902[0].path", 4, "remote reference"},
		"configMapGenerator files": {"resources: [cm.yaml]\nconfigMapGenerator:\n  - name: x\n    files: [" + url + "]\n", "configMapGenerator[0].files[0]", 4, "remote reference"},
		"configMapGenerator envs":  {"resources: [cm.yaml]\nconfigMapGenerator:\n  - name: x\n    envs:\n      - " + url + "\n", "configMapGenerator[0].envs[0]", 5, "remote reference"},
		"configMapGenerator env":   {"resources: [cm.yaml]\nconfigMapGenerator:\n  - name: x\n    env: " + url + "\n", "configMapGenerator[0].env", 4, "remote reference"},
		"secretGenerator files":    {"resources: [cm.yaml]\nsecretGenerator:\n  - name: x\n    files:\n      - k=" + url + "\n", "secretGenerator[0].files[0]", 5, "remote reference"},
		"secretGenerator envs":     {"resources: [cm.yaml]\nsecretGenerator:\n  - name: x\n    envs: [" + url + "]\n", "secretGenerator[0].envs[0]", 4, "remote reference"},
		"replacements path":        {"resources: [cm.yaml]\nreplacements:\n  - path: " + url + "\n", "replacements[0].path", 3, "remote reference"},
		"openapi path":             {"resources: [cm.yaml]\nopenapi:\n  path: " + url + "\n", "openapi.path", 3, "remote reference"},
		"crds":                     {"resources: [cm.yaml]\ncrds:\n  - " + url + "\n", "crds[0]", 3, "remote reference"},
		"configurations":           {"resources: [cm.yaml]\nconfigurations:\n  - " + url + "\n", "configurations[0]", 3, "remote reference"},
		"generators":               {"resources: [cm.yaml]\ngenerators:\n  - " + url + "\n", "generators[0]", 3, "remote reference"},
		"transformers":             {"resources: [cm.yaml]\ntransformers:\n  - " + url + "\n", "transformers[0]", 3, "remote reference"},
		"validators":               {"resources: [cm.yaml]\nvalidators:\n  - " + url + "\n", "validators[0]", 3, "remote reference"},
		"inline transformer": {"resources: [cm.yaml]\ntransformers:\n  - |\n    apiVersion: builtin\n    kind: PatchTransformer\n    metadata: {name: p}\n    path: " + url + "\n",
			"transformers[0]", 3, "plugin configuration with a URL"},
		"inline generator": {"resources: [cm.yaml]\ngenerators:\n  - |\n    apiVersion: builtin\n    kind: ConfigMapGenerator\n    metadata: {name: g}\n    files: [" + url + "]\n",
			"generators[0]", 3, "plugin configuration with a URL"},
		"helmCharts":                  {"resources: [cm.yaml]\nhelmCharts:\n  - name: x\n    repo: " + url + "\n", "helmCharts", 3, "Helm charts are refused"},
		"helmGlobals":                 {"resources: [cm.yaml]\nhelmGlobals:\n  chartHome: charts\n", "helmGlobals", 3, "Helm charts are refused"},
		"helmChartInflationGenerator": {"resources: [cm.yaml]\nhelmChartInflationGenerator:\n  - chartName: x\n", "helmChartInflationGenerator", 3, "Helm charts are refused"},
	}
	srv, hits := countingServer(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			k := strings.ReplaceAll(tc.kustomization, url, srv.URL+"/x.yaml")
			_, err := renderFiles(t, map[string]string{"app/cm.yaml": configMap, "app/kustomization.yaml": k})
			want := "app/kustomization.yaml:" + strconv.Itoa(tc.line) + ":"
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.field+": ") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error at %s on %s (%s), got %v", want, tc.field, tc.want, err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the renderer sent %d requests", n)
	}
}

// TestKustomizeRefusesRemoteInComponentAndNestedBase: references are checked in every
// kustomization that a build reads, including a Component and a local base.
func TestKustomizeRefusesRemoteInComponentAndNestedBase(t *testing.T) {
	_, err := renderFiles(t, map[string]string{
		"app/kustomization.yaml":  "resources: [../base]\ncomponents: [../comp]\n",
		"base/kustomization.yaml": "resources:\n  - https://example.com/a.yaml\n",
		"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nconfigMapGenerator:\n  - name: c\n    files: [x=https://example.com/b]\n",
	})
	for _, want := range []string{"base/kustomization.yaml:2:5: resources[0]: a remote reference",
		"comp/kustomization.yaml:5:13: configMapGenerator[0].files[0]: a remote reference"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("want %q, got %v", want, err)
		}
	}
}

// TestRemoteBaseRunsNoGit: a remote base never makes kustomize run git.
func TestRemoteBaseRunsNoGit(t *testing.T) {
	bin := t.TempDir()
	marker := filepath.Join(t.TempDir(), "git-ran")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	for _, base := range []string{"github.com/org/repo//x?ref=v1", "https://github.com/org/repo", "git@github.com:org/repo"} {
		_, err := renderFiles(t, map[string]string{"app/kustomization.yaml": "resources:\n  - " + base + "\n"})
		if err == nil || !strings.Contains(err.Error(), "app/kustomization.yaml:2:5: resources[0]: a remote reference") {
			t.Fatalf("%s: want a remote-reference error, got %v", base, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git was run")
	}
}

const bobJob = "kind: training\nversion: v0.1\njob: {name: bobjob}\nenvironment: {image: pytorch/pytorch:2.3.0}\nresources: {gpu: 1}\n"

// TestTeamKustomizationCannotTakeAnotherTeams: alice's kustomization that lists ../bob is
// refused at its line; once fixed, bob's objects are rendered in bob and none moves to alice.
func TestTeamKustomizationCannotTakeAnotherTeams(t *testing.T) {
	files := map[string]string{
		".gpuctl.yaml":                   teamsConfig,
		"teams/alice/kustomization.yaml": "namespace: alice\nresources:\n  - cm.yaml\n  - ../bob\n",
		"teams/alice/cm.yaml":            configMap,
		"teams/bob/kustomization.yaml":   "resources: [job.yaml]\n",
		"teams/bob/job.yaml":             bobJob,
	}
	_, err := renderFiles(t, files)
	want := `teams/alice/kustomization.yaml:4:5: resources[1]: the path leaves the team directory teams/alice/ (namespace "alice")`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %q, got %v", want, err)
	}
	files["teams/alice/kustomization.yaml"] = "namespace: alice\nresources:\n  - cm.yaml\n"
	res, err := renderFiles(t, files)
	if err != nil {
		t.Fatal(err)
	}
	if ns := namespaceOf(res, "Job", "bobjob"); ns != "bob" {
		t.Fatalf("bob's Job is in %q, want bob", ns)
	}
}

// TestAnotherScopeNeverDemotes: a kustomization of another scope (here an admin's) that lists
// a team's kustomization does not stop the team's from being built in the team's namespace.
func TestAnotherScopeNeverDemotes(t *testing.T) {
	res, err := renderFiles(t, map[string]string{
		".gpuctl.yaml":                     teamsConfig,
		"platform/kustomization.yaml":      "namespace: platform\nnamePrefix: copy-\nresources: [../teams/bob]\n",
		"teams/bob/kustomization.yaml":     "resources: [job.yaml]\n",
		"teams/bob/job.yaml":               bobJob,
		"teams/bob/sub/kustomization.yaml": "resources: [cm.yaml]\n",
		"teams/bob/sub/cm.yaml":            configMap,
	})
	if err != nil {
		t.Fatal(err)
	}
	if ns := namespaceOf(res, "Job", "bobjob"); ns != "bob" {
		t.Fatalf("bob's Job is in %q, want bob (demoted by the platform's kustomization?)", ns)
	}
	if ns := namespaceOf(res, "Job", "copy-bobjob"); ns != "platform" {
		t.Fatalf("the platform's copy is in %q", ns)
	}
}

// TestTeamKustomizationSymlinkEscape: a symbolic link inside alice's directory that points
// into bob's is resolved before the check.
func TestTeamKustomizationSymlinkEscape(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gpuctl.yaml", teamsConfig)
	write("teams/alice/kustomization.yaml", "resources:\n  - link\n")
	write("teams/bob/kustomization.yaml", "resources: [job.yaml]\n")
	write("teams/bob/job.yaml", bobJob)
	if err := os.Symlink("../bob", filepath.Join(dir, "teams/alice/link")); err != nil {
		t.Fatal(err)
	}
	_, err := render.New(render.Options{}).Render(diskFS(), dir)
	if err == nil || !strings.Contains(err.Error(), "teams/alice/kustomization.yaml:2:5: resources[0]: the path leaves the team directory") {
		t.Fatalf("want the symlink refused, got %v", err)
	}
}

func namespaceOf(res *render.Result, kind, name string) string {
	for _, o := range res.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o.GetNamespace()
		}
	}
	return "<none>"
}
