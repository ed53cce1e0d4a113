package app_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/cmd/gpuctl/app"
)

func TestDisplayName(t *testing.T) {
	for argv0, want := range map[string]string{
		"gpuctl":                              "gpuctl",
		"/usr/local/bin/gpuctl":               "gpuctl",
		"bin/gpuctl-linux-amd64":              "gpuctl",
		"/home/a/go/bin/kubectl-gpuctl":       "kubectl gpuctl",
		"kubectl-gpuctl.exe":                  "kubectl gpuctl",
		"kubectl-gpu_ctl":                     "kubectl gpu-ctl",
		"/opt/plugins/kubectl-gpuctl-nightly": "kubectl gpuctl nightly",
		"kubectl-":                            "gpuctl",
	} {
		if got := app.DisplayName(argv0); got != want {
			t.Errorf("DisplayName(%q) = %q, want %q", argv0, got, want)
		}
	}
}

// TestRunProgramAsKubectlPlugin: run with the argv kubectl gives the plugin kubectl-gpuctl, the
// usage lines and examples say `kubectl gpuctl`; run as gpuctl, they say gpuctl alone.
func TestRunProgramAsKubectlPlugin(t *testing.T) {
	help := func(argv ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := app.RunProgram(t.Context(), app.Streams{Out: &out, Err: &errOut}, argv); code != 0 {
			t.Fatalf("%v: exit %d: %s", argv, code, errOut.String())
		}
		return out.String()
	}
	plugin := help("/usr/local/bin/kubectl-gpuctl", "get", "jobs", "--help")
	for _, want := range []string{"\n  kubectl gpuctl get jobs [flags]\n", "\n  kubectl gpuctl get jobs -A --kind training"} {
		if !strings.Contains(plugin, want) {
			t.Errorf("kubectl-gpuctl get jobs --help lacks %q:\n%s", want, plugin)
		}
	}
	root := help("/usr/local/bin/kubectl-gpuctl", "--help")
	for _, want := range []string{"\n  kubectl gpuctl [command]\n", "\n  kubectl gpuctl validate examples/"} {
		if !strings.Contains(root, want) {
			t.Errorf("kubectl-gpuctl --help lacks %q:\n%s", want, root)
		}
	}
	if !strings.HasPrefix(root, "gpuctl turns short YAML files") { // prose keeps the product's name
		t.Errorf("kubectl-gpuctl --help:\n%s", root)
	}
	plain := help("/usr/local/bin/gpuctl", "get", "jobs", "--help")
	if strings.Contains(plain, "kubectl gpuctl") || !strings.Contains(plain, "\n  gpuctl get jobs [flags]\n") {
		t.Errorf("gpuctl get jobs --help:\n%s", plain)
	}
	// The tree is built per run: the plugin's name does not stay behind for the next run.
	if again := help("gpuctl", "--help"); strings.Contains(again, "kubectl gpuctl") {
		t.Errorf("gpuctl --help after the plugin's run:\n%s", again)
	}
}
