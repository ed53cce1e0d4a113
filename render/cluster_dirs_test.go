package render_test

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/render"
)

// clusterPool is a pool file declaring pool name with one node.
func clusterPool(name, node string) string {
	return "kind: pool\nversion: v0.1\nmetadata:\n  name: " + name + "\nnodes:\n  " + node + ":\n    gpu-type: A100-80G\n"
}

// clusterJob is a plain Job named name.
func clusterJob(name string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\nspec:\n  template:\n    spec:\n" +
		"      restartPolicy: Never\n      containers:\n        - name: main\n          image: busybox\n"
}

// clusterRepo is a repository of two clusters, a and b, with shared files.
func clusterRepo() map[string]string {
	return map[string]string{
		".gpuctl.yaml":                  tenantConfig,
		"pools/shared.yaml":             clusterPool("shared-pool", "shared-0"),
		"teams/bob/job.yaml":            clusterJob("bob-job"),
		"clusters/a/pools.yaml":         clusterPool("a-pool", "a-0"),
		"clusters/a/teams/alice/j.yaml": clusterJob("alice-job"),
		"clusters/b/pools.yaml":         clusterPool("b-pool", "b-0"),
		"clusters/b/jobs/train.yaml":    clusterJob("b-train"),
	}
}

// renderCluster renders /repo of files for cluster (the path rendered: /repo/sub).
func renderCluster(t *testing.T, files map[string]string, cluster, sub string) (*render.Result, error) {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	return render.New(render.Options{Cluster: cluster}).Render(fs, strings.TrimSuffix("/repo/"+sub, "/"))
}

// objectNames are "Kind namespace/name" of every object.
func objectNames(res *render.Result) []string {
	var out []string
	for _, o := range res.Objects {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

// TestClusterLayout: a render for a cluster holds the shared files and its own directory's,
// never another cluster's (its pool would label that cluster's nodes); a team's directory
// under clusters/NAME/ is mapped as at the root (its namespace, its tenancy); a render for
// no cluster reads none of clusters/ and says so.
func TestClusterLayout(t *testing.T) {
	shared := []string{"Node /shared-0", "ConfigMap gpuctl-system/gpuctl-pool-shared-pool", "Job bob/bob-job", "ServiceAccount bob/gpuctl-tenant"}
	tests := map[string]struct {
		cluster, sub string
		want, not    []string
	}{
		"a": {cluster: "a", want: []string{"Node /a-0", "ConfigMap gpuctl-system/gpuctl-pool-a-pool", "Job alice/alice-job", "ServiceAccount alice/gpuctl-tenant"},
			not: []string{"Node /b-0", "ConfigMap gpuctl-system/gpuctl-pool-b-pool", "Job /b-train"}},
		"b": {cluster: "b", want: []string{"Node /b-0", "ConfigMap gpuctl-system/gpuctl-pool-b-pool", "Job /b-train"},
			not: []string{"Node /a-0", "ConfigMap gpuctl-system/gpuctl-pool-a-pool", "Job alice/alice-job", "ServiceAccount alice/gpuctl-tenant"}},
		"none": {not: []string{"Node /a-0", "Node /b-0", "Job alice/alice-job", "Job /b-train"}},
		// A directory below clusters/a/ is rendered for a, its team mapped as at the root.
		"path in a":      {sub: "clusters/a/teams", want: []string{"Job alice/alice-job"}, not: []string{"Job bob/bob-job", "Node /b-0"}},
		"b's path for b": {cluster: "b", sub: "clusters/b", want: []string{"Job /b-train"}, not: []string{"Job bob/bob-job"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := renderCluster(t, clusterRepo(), tc.cluster, tc.sub)
			if err != nil {
				t.Fatal(err)
			}
			got := objectNames(res)
			want := tc.want
			if tc.sub == "" {
				want = append(want, shared...)
			}
			for _, w := range want {
				if !slices.Contains(got, w) {
					t.Errorf("%s missing from %v", w, got)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(got, n) {
					t.Errorf("%s rendered for cluster %q", n, tc.cluster)
				}
			}
			for _, f := range res.Files {
				if other := "/repo/clusters/"; strings.HasPrefix(f, other) && !strings.HasPrefix(f, other+tc.cluster+"/") && tc.sub == "" {
					t.Errorf("read %s for cluster %q", f, tc.cluster)
				}
			}
			warned := slices.ContainsFunc(res.Warnings(), func(d *render.Diagnostic) bool {
				return d.File == "/repo/clusters" && strings.Contains(d.Message, "clusters/ is not rendered")
			})
			if warned != (name == "none") {
				t.Errorf("warning about clusters/: %v, want %v (%v)", warned, name == "none", res.Warnings())
			}
		})
	}
}

// TestClusterOthersNotRead: a broken file of cluster a fails a's render, naming it, and not
// b's, which does not read it.
func TestClusterOthersNotRead(t *testing.T) {
	files := clusterRepo()
	files["clusters/a/broken.yaml"] = "kind: pool\nversion: v0.1\nmetadata: [\n"
	if _, err := renderCluster(t, files, "b", ""); err != nil {
		t.Fatalf("b's render failed on a's file: %v", err)
	}
	_, err := renderCluster(t, files, "a", "")
	if err == nil || !strings.Contains(err.Error(), "/repo/clusters/a/broken.yaml:") {
		t.Fatalf("a's render: %v, want the error of clusters/a/broken.yaml", err)
	}
}

// TestClusterTenancy: a team's directory under clusters/NAME/ is a tenant directory, held to
// the pod policy and confined to its own directory in kustomizations.
func TestClusterTenancy(t *testing.T) {
	tests := map[string]struct {
		files map[string]string
		want  string
	}{
		"pod policy": {files: map[string]string{"clusters/a/teams/alice/evil.yaml": deployment("securityContext: {privileged: true}", "")},
			want: "/repo/clusters/a/teams/alice/evil.yaml:13:41: spec.template.spec.containers[0].securityContext.privileged: pod policy privileged"},
		"kustomization outside its directory": {files: map[string]string{
			"clusters/a/teams/alice/kustomization.yaml": "resources:\n  - ../../../../pools/shared.yaml\n"},
			want: "/repo/clusters/a/teams/alice/kustomization.yaml:2:5: resources[0]: the path leaves the team directory clusters/a/teams/alice/ (namespace \"alice\")"},
		"namespace of another team": {files: map[string]string{"clusters/a/teams/alice/x.yaml": strings.Replace(clusterJob("x"), "  name: x\n", "  name: x\n  namespace: bob\n", 1)},
			want: `files in clusters/a/teams/alice/ belong to namespace "alice" and cannot place objects in "bob"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files := clusterRepo()
			for k, v := range tc.files {
				files[k] = v
			}
			_, err := renderCluster(t, files, "a", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestClusterBadInput: a cluster that is not a DNS label, or has no directory, is an error
// naming it; a file directly in clusters/ and a .gpuctl.yaml in a cluster's directory are
// errors naming the file; a path of cluster a rendered for b is an error.
func TestClusterBadInput(t *testing.T) {
	tests := map[string]struct {
		cluster, sub  string
		file, content string
		want          string
	}{
		"unknown":     {cluster: "c", want: `cluster "c": no directory clusters/c/`},
		"not a label": {cluster: "A_b", want: `cluster "A_b": not a valid cluster name (a DNS label)`},
		"path of a":   {cluster: "b", sub: "clusters/a", want: `/repo/clusters/a is in the directory of cluster "a", not of cluster "b"`},
		"file in clusters/": {cluster: "a", file: "clusters/x.yaml", content: clusterJob("x"),
			want: "/repo/clusters/x.yaml: a file directly in clusters/ belongs to no cluster"},
		"shared object again": {cluster: "a", file: "clusters/a/teams/bob/job.yaml", content: clusterJob("bob-job"),
			want: "is rendered twice: also from"},
		"config of a": {cluster: "a", file: "clusters/a/.gpuctl.yaml", content: tenantConfig,
			want: "/repo/clusters/a/.gpuctl.yaml: .gpuctl.yaml is not read in a cluster's directory"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files := clusterRepo()
			if tc.file != "" {
				files[tc.file] = tc.content
			}
			_, err := renderCluster(t, files, tc.cluster, tc.sub)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestClusterOneClusterRepo: a repository without clusters/ is rendered whole for any cluster
// (a daemon that names its cluster for its notifications renders what it did before).
func TestClusterOneClusterRepo(t *testing.T) {
	files := map[string]string{".gpuctl.yaml": tenantConfig, "pools/p.yaml": clusterPool("p", "n-0"), "teams/bob/job.yaml": clusterJob("bob-job")}
	res, err := renderCluster(t, files, "a", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := objectNames(res); !slices.Contains(got, "Node /n-0") || !slices.Contains(got, "Job bob/bob-job") {
		t.Errorf("objects %v, want the whole repository's", got)
	}
	if _, err := renderCluster(t, files, "Not_a_label", ""); err == nil {
		t.Error("an invalid cluster name rendered")
	}
}

// TestClusterNestedConfigNeverConfigures: a .gpuctl.yaml that a team commits in its directory
// below clusters/NAME/ never configures a render, even of that directory alone (gpuctl
// validate clusters/a/teams/alice): the root's rules map the directory, as at the root
// (TestRedTeamNestedConfigNeverConfigures), so the team's pod is held to the pod policy; nor
// does one in clusters/a/, rendering clusters/a alone.
func TestClusterNestedConfigNeverConfigures(t *testing.T) {
	files := clusterRepo()
	files["clusters/a/teams/alice/.gpuctl.yaml"] = "namespaces: []\n"
	files["clusters/a/teams/alice/evil.yaml"] = deployment("securityContext: {privileged: true}", "")
	for _, cluster := range []string{"a", ""} {
		for _, sub := range []string{"", "clusters/a/teams/alice"} {
			if cluster == "" && sub == "" {
				continue // a render for no cluster reads none of clusters/
			}
			_, err := renderCluster(t, files, cluster, sub)
			for _, want := range []string{
				"/repo/clusters/a/teams/alice/.gpuctl.yaml: tenancy admin-file: .gpuctl.yaml is the admin's file",
				"/repo/clusters/a/teams/alice/evil.yaml:13:41: spec.template.spec.containers[0].securityContext.privileged: pod policy privileged",
			} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("render /repo/%s for cluster %q: want %q, got %v", sub, cluster, want, err)
				}
			}
		}
	}
	// Nor does one in the cluster's own directory, which is an error there as at the root.
	files = clusterRepo()
	files["clusters/a/.gpuctl.yaml"] = "namespaces: []\n"
	if _, err := renderCluster(t, files, "a", "clusters/a"); err == nil || !strings.Contains(err.Error(), "/repo/clusters/a/.gpuctl.yaml: .gpuctl.yaml is not read in a cluster's directory") {
		t.Errorf("render /repo/clusters/a for a: got %v, want the error of clusters/a/.gpuctl.yaml", err)
	}
}

// TestSplitCluster: the directory of a cluster is cut off a path, leaving what the namespace
// rules match; a shared path, clusters/ itself and a look-alike keep their whole path.
func TestSplitCluster(t *testing.T) {
	for dir, want := range map[string][2]string{
		"clusters/a/teams/alice":   {"a", "teams/alice"},
		"clusters/hub":             {"hub", "."},
		"teams/alice":              {"", "teams/alice"},
		"clusters":                 {"", "clusters"},
		"clusters-old/a/teams/bob": {"", "clusters-old/a/teams/bob"},
		"jobs/clusters/a":          {"", "jobs/clusters/a"},
		"./clusters/a//teams/":     {"a", "teams"},
	} {
		if c, inner := render.SplitCluster(dir); c != want[0] || inner != want[1] {
			t.Errorf("SplitCluster(%q) = %q, %q; want %q, %q", dir, c, inner, want[0], want[1])
		}
		if c, inner := render.SplitCluster(dir); c != "" && render.ClusterPath(c, inner) != path.Clean(dir) {
			t.Errorf("ClusterPath(%q, %q) = %q, want %q back", c, inner, render.ClusterPath(c, inner), dir)
		}
	}
}
