package install

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestModuleAndCommands: the module is github.com/gpuctl/gpuctl and each binary's directory is
// a main package, so `go install github.com/gpuctl/gpuctl/cmd/NAME@VERSION` resolves.
func TestModuleAndCommands(t *testing.T) {
	if got := strings.TrimSpace(goCmd(t, repoRoot, nil, "list", "-m")); got != module {
		t.Errorf("go list -m: %q, want %q", got, module)
	}
	out := goCmd(t, repoRoot, nil, "list", "-f", "{{.ImportPath}} {{.Name}}", "./cmd/gpuctl", "./cmd/gpuctl-reconciler", "./cmd/gpuctl-node-labeler")
	want := module + "/cmd/gpuctl main\n" + module + "/cmd/gpuctl-reconciler main\n" + module + "/cmd/gpuctl-node-labeler main\n"
	if out != want {
		t.Errorf("go list ./cmd/...:\n%s\nwant:\n%s", out, want)
	}
	// go install MODULE@VERSION refuses a module whose go.mod replaces or excludes modules.
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "replace" || f[0] == "exclude") {
			t.Errorf("go.mod: %q: go install %s/cmd/gpuctl@VERSION refuses it", line, module)
		}
	}
}

// testVersionPrefix starts the made-up versions TestGoInstall installs: a pre-release of v0.0.0
// that no tag of the module has, unique per run (so that the module cache has no copy of it).
const testVersionPrefix = "v0.0.0-test."

// TestGoInstall runs `go install github.com/gpuctl/gpuctl/cmd/gpuctl@VERSION` as a user does,
// with the module served at a made-up version by a module proxy on disk (GOPROXY=file://...,
// the layout of the GOPROXY protocol) holding this working tree; the dependencies come from the
// module cache (or the configured proxy after it). The installed binary reports VERSION: the
// go command records it in the build information, and no link flag is set.
func TestGoInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpuctl from a module zip")
	}
	version := fmt.Sprintf("%s%d", testVersionPrefix, time.Now().UnixNano())
	proxy := t.TempDir()
	writeModuleProxy(t, proxy, version)
	modcache := strings.TrimSpace(goCmd(t, repoRoot, nil, "env", "GOMODCACHE"))
	upstream := strings.TrimSpace(goCmd(t, repoRoot, nil, "env", "GOPROXY"))
	t.Cleanup(func() { forgetModuleVersion(t, modcache, version) })

	gobin := t.TempDir()
	env := []string{
		"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + upstream,
		"GONOSUMDB=" + module, // the made-up version is in no checksum database
		"GOBIN=" + gobin,
		"GOFLAGS=",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	}
	start := time.Now()
	goCmd(t, t.TempDir(), env, "install", module+"/cmd/gpuctl@"+version)
	t.Logf("go install %s/cmd/gpuctl@%s: %v", module, version, time.Since(start).Round(time.Millisecond))

	var info struct{ Version string }
	out := run(t, filepath.Join(gobin, "gpuctl"), "version", "-o", "json")
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.Version != version {
		t.Errorf("gpuctl version -o json: %v\n%s\nwant version %s", err, out, version)
	}
}

// writeModuleProxy lays out dir as a module proxy that serves this working tree as module@version:
// @v/list, @v/VERSION.info, .mod and .zip.
func writeModuleProxy(t *testing.T, dir, version string) {
	t.Helper()
	at := filepath.Join(dir, filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(map[string]any{"Version": version, "Time": time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": mod} {
		if err := os.WriteFile(filepath.Join(at, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := writeModuleZip(f, version, moduleFiles(t)); err != nil {
		t.Fatal(err)
	}
}

// moduleFiles lists the files of the module as Git sees the working tree (tracked and new,
// ignored ones left out, as a tag's archive would hold), without those of nested modules
// (directories with their own go.mod: bench/, hack/tools/*), which a module zip must not hold.
func moduleFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files, nested []string
	paths := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	for _, p := range paths {
		if filepath.Base(p) == "go.mod" && p != "go.mod" {
			nested = append(nested, filepath.Dir(p)+"/")
		}
	}
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(repoRoot, p))
		if err != nil || !fi.Mode().IsRegular() || hasPrefix(p, nested) {
			continue // deleted in the working tree, a symbolic link, or another module's
		}
		files = append(files, p)
	}
	return files
}

func hasPrefix(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// writeModuleZip writes the module zip of module@version: each file under "module@version/".
func writeModuleZip(w io.Writer, version string, files []string) error {
	zw := zip.NewWriter(w)
	for _, p := range files {
		content, err := os.ReadFile(filepath.Join(repoRoot, p))
		if err != nil {
			return err
		}
		fw, err := zw.Create(module + "@" + version + "/" + filepath.ToSlash(p))
		if err != nil {
			return err
		}
		if _, err := fw.Write(content); err != nil {
			return err
		}
	}
	return zw.Close()
}

// forgetModuleVersion removes what the go command kept of module@version in the module cache:
// the extracted tree (read-only, as the go command leaves it), the downloaded files, and the
// proxy's version list when it names only versions of this test.
func forgetModuleVersion(t *testing.T, modcache, version string) {
	extracted := filepath.Join(modcache, filepath.FromSlash(module)+"@"+version)
	_ = filepath.WalkDir(extracted, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(extracted); err != nil {
		t.Errorf("remove %s: %v", extracted, err)
	}
	at := filepath.Join(modcache, "cache", "download", filepath.FromSlash(module), "@v")
	downloads, _ := filepath.Glob(filepath.Join(at, version+".*"))
	if list, err := os.ReadFile(filepath.Join(at, "list")); err == nil && onlyTestVersions(string(list)) {
		downloads = append(downloads, filepath.Join(at, "list"))
	}
	for _, p := range downloads {
		if err := os.Remove(p); err != nil {
			t.Errorf("remove %s: %v", p, err)
		}
	}
}

// onlyTestVersions tells whether a version list names no version but those of this test.
func onlyTestVersions(list string) bool {
	for _, v := range strings.Fields(list) {
		if !strings.HasPrefix(v, testVersionPrefix) {
			return false
		}
	}
	return true
}
