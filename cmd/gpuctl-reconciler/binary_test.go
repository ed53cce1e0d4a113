package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoTemplateExecutor builds the daemon as `make build` does and checks that text/template's
// executor is not in it. The executor calls reflect.Value.MethodByName with names it learns
// at run time, so once it is reachable the linker keeps every exported method of every type
// in the binary: 98 MB instead of 58 MB, and some 20 MiB more of the daemon's memory in mapped
// pages. The web page is built with gomponents for that reason (httpapi's ui_html.go);
// importing html/template for its escaping functions is harmless, executing a template is not.
func TestNoTemplateExecutor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the daemon")
	}
	bin := filepath.Join(t.TempDir(), "gpuctl-reconciler")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	nm := exec.Command("go", "tool", "nm", bin)
	nm.Stderr = &stderr
	out, err := nm.Output()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, stderr.String())
	}
	const executor = "text/template.(*state).evalField"
	if !strings.Contains(string(out), "main.run") {
		t.Fatalf("go tool nm lists no main.run: not the daemon's symbols?")
	}
	if strings.Contains(string(out), executor) {
		t.Errorf("the daemon's binary has %s: something executes a text/template or html/template "+
			"again, which makes the linker keep every exported method (40 MB of binary, ~20 MiB of "+
			"the daemon's RSS). Find its caller with `go build -ldflags=-dumpdep ./cmd/gpuctl-reconciler "+
			"2>&1 | grep 'template.(\\*Template).Execute'` and render without it", executor)
	}
}
