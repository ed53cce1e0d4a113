package render_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/render"
)

// Red-team attacks that need a filesystem on disk: symbolic links, FIFOs, sparse files.

// diskTree writes files below a new temporary directory, with tenantConfig as .gpuctl.yaml
// and a .git directory (the top of the configuration lookup), and returns the directory.
func diskTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{".gpuctl.yaml": tenantConfig, ".git/HEAD": "ref: refs/heads/main\n"}
	for k, v := range files {
		all[k] = v
	}
	for name, content := range all {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// renderWithin renders path on disk and fails the test when it takes more than limit.
func renderDiskWithin(t *testing.T, path string, limit time.Duration) (*render.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	res, err := render.New(render.Options{}).RenderContext(ctx, diskFS(), path)
	if ctx.Err() != nil {
		t.Fatalf("the render did not end within %s: %v", limit, err)
	}
	return res, err
}

// TestRedTeamGeneratorReadsOutsideThroughALink: a file that kustomize reads for a ConfigMap,
// named by the kustomization or by a generator configuration, is a symbolic link to a
// secret outside the repository (the reconciler's ServiceAccount token). It is refused
// before kustomize runs, and the secret is in no object and no message.
func TestRedTeamGeneratorReadsOutsideThroughALink(t *testing.T) {
	const secret = "eyJhbGciOiJSUzI1NiJ9.reconciler-token"
	outside := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(outside, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		files map[string]string
		want  string
	}{
		"configMapGenerator files": {files: map[string]string{"teams/alice/kustomization.yaml": "configMapGenerator:\n- name: stolen\n  files: [token=tok]\n"},
			want: "teams/alice/kustomization.yaml:3:11: configMapGenerator[0].files[0]: the path leaves the team directory teams/alice/"},
		"a generator configuration file": {files: map[string]string{"teams/alice/kustomization.yaml": "generators: [gen.yaml]\n",
			"teams/alice/gen.yaml": "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: stolen}\nfiles: [tok]\n"},
			want: "teams/alice/kustomization.yaml:1:14: generators[0].files: the path leaves the team directory teams/alice/"},
		"an inline secret generator's env file": {files: map[string]string{"teams/alice/kustomization.yaml": "generators:\n- |\n  apiVersion: builtin\n  kind: SecretGenerator\n  metadata: {name: stolen}\n  envs: [tok]\n"},
			want: "teams/alice/kustomization.yaml:2:3: generators[0].envs: the path leaves the team directory teams/alice/"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := diskTree(t, tc.files)
			if err := os.Symlink(outside, filepath.Join(dir, "teams/alice/tok")); err != nil {
				t.Fatal(err)
			}
			res, err := renderDiskWithin(t, dir, 20*time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			assertNoSecret(t, err, secret)
			if len(res.Objects) != 0 {
				t.Errorf("%d objects rendered", len(res.Objects))
			}
		})
	}
}

// TestRedTeamFilesKustomizeMustNotRead: a FIFO (a read that never ends), a sparse file of a
// gigabyte (the reconciler's memory) and /dev/zero behind a link, named as a resource, a
// generator file or the kustomization itself, are refused at once with file:line, without
// being opened.
func TestRedTeamFilesKustomizeMustNotRead(t *testing.T) {
	cases := map[string]struct {
		kustomization string
		make          func(t *testing.T, p string)
		want          string
	}{
		"a FIFO as a resource": {kustomization: "resources: [x.txt]\n", make: mkfifo,
			want: "teams/alice/kustomization.yaml:1:13: resources[0]: not a regular file (a device, pipe or socket); only files are read"},
		"a gigabyte as a generator file": {kustomization: "configMapGenerator:\n- name: big\n  files: [x.txt]\n", make: sparse(1 << 30),
			want: "teams/alice/kustomization.yaml:3:11: configMapGenerator[0].files[0]: file is too large (1024.0 MiB, the limit is 1.0 MiB)"},
		"a gigabyte in a generator configuration": {kustomization: "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: big}\n  files: [x.txt]\n", make: sparse(1 << 30),
			want: "teams/alice/kustomization.yaml:2:3: generators[0].files: file is too large (1024.0 MiB, the limit is 1.0 MiB)"},
		"/dev/zero behind a link": {kustomization: "resources: [x.txt]\n", make: func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, want: "teams/alice/kustomization.yaml:1:13: resources[0]: the path leaves the team directory teams/alice/"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := diskTree(t, map[string]string{"teams/alice/kustomization.yaml": tc.kustomization})
			tc.make(t, filepath.Join(dir, "teams/alice/x.txt"))
			_, err := renderDiskWithin(t, dir, 20*time.Second)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
	t.Run("the kustomization itself", func(t *testing.T) {
		for what, make := range map[string]func(*testing.T, string){"a FIFO": mkfifo, "a gigabyte": sparse(1 << 30)} {
			dir := diskTree(t, nil)
			if err := os.MkdirAll(filepath.Join(dir, "teams/alice"), 0o755); err != nil {
				t.Fatal(err)
			}
			make(t, filepath.Join(dir, "teams/alice/kustomization.yaml"))
			_, err := renderDiskWithin(t, dir, 20*time.Second)
			if err == nil || !strings.Contains(err.Error(), "teams/alice/kustomization.yaml: ") {
				t.Errorf("%s: want an error on the kustomization, got %v", what, err)
			}
		}
	})
}

func mkfifo(t *testing.T, p string) {
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

// sparse returns a maker of a sparse file of n bytes (no disk space used).
func sparse(n int64) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		f, err := os.Create(p)
		if err == nil {
			err = f.Truncate(n)
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestRedTeamNestedConfigNeverConfigures: a .gpuctl.yaml that a team commits in its own
// directory (an empty mapping: "no tenants") is an error, and rendering that directory alone
// (gpuctl validate teams/alice) still uses the root's configuration that maps it.
func TestRedTeamNestedConfigNeverConfigures(t *testing.T) {
	dir := diskTree(t, map[string]string{
		"teams/alice/.gpuctl.yaml": "namespaces: []\nhostPathPrefixes: [/etc]\n",
		"teams/alice/pod.yaml":     redPod("hostPID: true"),
	})
	for _, path := range []string{dir, filepath.Join(dir, "teams/alice")} {
		_, err := renderDiskWithin(t, path, 20*time.Second)
		for _, want := range []string{
			"teams/alice/.gpuctl.yaml: tenancy admin-file: .gpuctl.yaml is the admin's file and a tenant directory (teams/alice/) may not hold one; it is not read",
			"teams/alice/pod.yaml:6:12: spec.hostPID: pod policy host-namespaces",
		} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("render %s: want %q, got %v", path, want, err)
			}
		}
	}
}

// TestRedTeamLinkWithAKnownDigest: the cache and Options.Digest (a source's digests, which
// follow links inside the repository) hold alice's file. She replaces it with a symbolic link
// to bob's file of the same content: the digest of her path is one the cache knows, but the
// link is refused by the walk before any digest is asked, and nothing is rendered from it.
func TestRedTeamLinkWithAKnownDigest(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"
	dir := diskTree(t, map[string]string{"teams/alice/cm.yaml": cm, "teams/bob/cm.yaml": cm})
	digest := func(abs string) (sum [sha256.Size]byte, ok bool) {
		data, err := os.ReadFile(abs) // follows links, as the local source does inside the root
		return sha256.Sum256(data), err == nil
	}
	cache := render.NewCache(0)
	renderCached := func() *render.Result {
		t.Helper()
		res, err := render.New(render.Options{Cache: cache, Digest: digest}).RenderContext(t.Context(), diskFS(), dir)
		var ve *render.ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatal(err)
		}
		return res
	}
	settings := func(res *render.Result) (namespaces []string) {
		for _, o := range res.Objects {
			if o.GetKind() == "ConfigMap" && o.GetName() == "settings" {
				namespaces = append(namespaces, o.GetNamespace())
			}
		}
		return namespaces
	}
	if got := settings(renderCached()); len(got) != 2 {
		t.Fatalf("ConfigMaps settings in %v, want alice's and bob's", got)
	}
	alice := filepath.Join(dir, "teams/alice/cm.yaml")
	if err := os.Remove(alice); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "teams/bob/cm.yaml"), alice); err != nil {
		t.Fatal(err)
	}
	res := renderCached()
	if got := settings(res); len(got) != 1 || got[0] != "bob" {
		t.Errorf("ConfigMaps settings in %v after the link, want bob's alone", got)
	}
	skipped := false
	for _, d := range res.Diagnostics {
		skipped = skipped || (strings.Contains(d.Error(), "teams/alice/cm.yaml") && strings.Contains(d.Error(), "symbolic link skipped"))
	}
	if !skipped {
		t.Errorf("the link is not reported as skipped: %v", res.Diagnostics)
	}
}

// On disk the walk reads file types from directory entries and asks the size of a file only
// when the cache does not know its content by its digest. A cached file that grows past
// MaxFileSize has a new digest: its size is asked and it is refused, never read whole; so is
// a large file added beside it; and the small file beside them is still rendered.
func TestRedTeamLargeFileWithDigests(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {a: b}\n"
	dir := diskTree(t, map[string]string{"teams/alice/cm.yaml": fmt.Sprintf(cm, "one"), "teams/alice/small.yaml": fmt.Sprintf(cm, "two")})
	digest := func(abs string) (sum [sha256.Size]byte, ok bool) {
		data, err := os.ReadFile(abs)
		return sha256.Sum256(data), err == nil
	}
	cache := render.NewCache(0)
	renderCached := func() (*render.Result, error) {
		t.Helper()
		res, err := render.New(render.Options{Cache: cache, Digest: digest}).RenderContext(t.Context(), diskFS(), dir)
		var ve *render.ValidationError
		if err != nil && !errors.As(err, &ve) {
			t.Fatal(err)
		}
		return res, err
	}
	if _, err := renderCached(); err != nil {
		t.Fatal(err)
	}
	big := fmt.Sprintf(cm, "one") + "# " + strings.Repeat("x", render.MaxFileSize) + "\n"
	for _, f := range []string{"teams/alice/cm.yaml", "teams/alice/new.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := renderCached()
	if err == nil {
		t.Fatal("files larger than the limit rendered without an error")
	}
	for _, f := range []string{"teams/alice/cm.yaml", "teams/alice/new.yaml"} {
		found := false
		for _, d := range res.Errors() {
			found = found || strings.Contains(d.Error(), f) && strings.Contains(d.Error(), "file is too large")
		}
		if !found {
			t.Errorf("%s: no error says it is too large: %v", f, res.Errors())
		}
	}
	if len(res.Files) != 1 || !strings.HasSuffix(res.Files[0], "small.yaml") {
		t.Errorf("files read: %q, want small.yaml alone", res.Files)
	}
}

// A workload's own checks are kept with its file's cache entry (validateWorkload). A team's
// file that places a job in another team's namespace is refused by every render, the cached
// ones too, with the same error, and nothing of it is rendered; fixed, it renders in its own
// namespace.
func TestRedTeamCachedWorkloadChecks(t *testing.T) {
	escape := "kind: training\nversion: v0.1\njob:\n  name: sft\n  namespace: bob\nenvironment:\n  image: pytorch/pytorch:2.3.0\nresources:\n  gpu: 2\n"
	dir := diskTree(t, map[string]string{"teams/alice/job.yaml": escape, "teams/bob/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	digest := func(abs string) (sum [sha256.Size]byte, ok bool) {
		data, err := os.ReadFile(abs)
		return sha256.Sum256(data), err == nil
	}
	cache := render.NewCache(0)
	want := `job.namespace: files in teams/alice/ belong to namespace "alice" and cannot place jobs in "bob"`
	for i := range 3 {
		res, err := render.New(render.Options{Cache: cache, Digest: digest}).RenderContext(t.Context(), diskFS(), dir)
		if err == nil || len(res.Objects) != 0 {
			t.Fatalf("render %d: the escape rendered (%d objects, err %v)", i, len(res.Objects), err)
		}
		found := false
		for _, d := range res.Errors() {
			found = found || strings.Contains(d.Error(), want)
		}
		if !found {
			t.Errorf("render %d: no error %q: %v", i, want, res.Errors())
		}
	}
	if s := cache.Stats(); s.Hits == 0 {
		t.Fatalf("no cache hit: the cached checks were not used (%+v)", s)
	}
	if err := os.WriteFile(filepath.Join(dir, "teams/alice/job.yaml"), []byte(strings.Replace(escape, "  namespace: bob\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := render.New(render.Options{Cache: cache, Digest: digest}).RenderContext(t.Context(), diskFS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if o.GetKind() == "Job" && o.GetNamespace() != "alice" {
			t.Errorf("the fixed job renders in %q", o.GetNamespace())
		}
	}
}
