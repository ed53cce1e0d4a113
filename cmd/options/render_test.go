package options

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/spf13/pflag"
)

// TestRenderFlagsFollowTheConfigRules: the render flags are held to the rules of
// .gpuctl.yaml: a mapping to a reserved namespace and an unclean prefix are refused.
func TestRenderFlagsFollowTheConfigRules(t *testing.T) {
	cases := map[string]struct {
		opts Render
		want string // error substring; "" = valid
	}{
		"team map":            {Render{NamespaceMap: []string{"teams/*/**=$1"}}, ""},
		"kube-system":         {Render{NamespaceMap: []string{"teams/*/**=kube-system"}}, "kube-system"},
		"system namespace":    {Render{NamespaceMap: []string{"ops/**=" + keys.SystemNamespace}}, keys.SystemNamespace},
		"no equals":           {Render{NamespaceMap: []string{"teams"}}, "PATTERN=NAMESPACE"},
		"root prefix":         {Render{HostPathPrefixes: []string{"/"}}, "hostPathPrefixes"},
		"writable outside":    {Render{HostPathPrefixes: []string{"/data"}, WritableHostPathPrefixes: []string{"/etc"}}, "writableHostPathPrefixes"},
		"writable below data": {Render{HostPathPrefixes: []string{"/data"}, WritableHostPathPrefixes: []string{"/data/scratch"}}, ""},
		"queueing kueue":      {Render{Queueing: "kueue"}, ""},
		"queueing unknown":    {Render{Queueing: "volcano"}, "--queueing (queueing): unknown queueing \"volcano\""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.opts.Options()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			case tc.want == "" && got.Config == nil:
				t.Fatal("no configuration built from the flags")
			}
		})
	}
	got, err := (&Render{NamespaceMap: []string{"teams/*/**=$1"}, WritableHostPathPrefixes: []string{"/output"}}).Options()
	if err != nil {
		t.Fatal(err)
	}
	if ns, ok := got.Config.NamespaceFor("teams/alice/x"); !ok || ns != "alice" {
		t.Errorf("NamespaceFor(teams/alice/x) = %q, %v", ns, ok)
	}
	if !reflect.DeepEqual(got.Config.WritableHostPathPrefixes, []string{"/output"}) {
		t.Errorf("writable prefixes = %v", got.Config.WritableHostPathPrefixes)
	}
}

// TestRenderConfigFile: --config is the configuration and its directory the root; a broken
// file is an error that names its place and lists every error; it is not combined with the
// flags; without any setting the renderer is left to find a .gpuctl.yaml.
func TestRenderConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := write("good.yaml", "version: v0.1\nnamespaces:\n  - path: teams/*/**\n    namespace: $1\n")
	got, err := (&Render{ConfigFile: good}).Options()
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != dir || got.Config == nil {
		t.Fatalf("--config %s: root %q, config %v", good, got.Root, got.Config)
	}
	if ns, ok := got.Config.NamespaceFor("teams/bob/x"); !ok || ns != "bob" {
		t.Errorf("NamespaceFor(teams/bob/x) = %q, %v", ns, ok)
	}

	bad := write("bad.yaml", "version: v9\nhostPathPrefixes: [/]\n")
	_, err = (&Render{ConfigFile: bad}).Options()
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "v9") || !strings.Contains(err.Error(), "hostPathPrefixes") {
		t.Errorf("broken --config: want both errors with the file's name, got %v", err)
	}
	if _, err := (&Render{ConfigFile: filepath.Join(dir, "missing.yaml")}).Options(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing --config: %v", err)
	}
	if _, err := (&Render{ConfigFile: good, NamespaceMap: []string{"a=b"}}).Options(); err == nil || !strings.Contains(err.Error(), "cannot be combined") {
		t.Errorf("--config with --namespace-map: %v", err)
	}
	if _, err := (&Render{ConfigFile: good, Queueing: "kueue"}).Options(); err == nil || !strings.Contains(err.Error(), "cannot be combined") {
		t.Errorf("--config with --queueing: %v", err)
	}
	kueue, err := (&Render{Queueing: "kueue"}).Options()
	if err != nil || !kueue.Config.Kueue() {
		t.Errorf("--queueing kueue: %+v, %v", kueue.Config, err)
	}

	none, err := (&Render{}).Options()
	if err != nil || none.Config != nil || none.Root != "" {
		t.Errorf("no settings: %+v, %v (want none: the renderer finds .gpuctl.yaml)", none, err)
	}
	if (&Render{}).Given() || !(&Render{ConfigFile: good}).Given() || !(&Render{HostPathPrefixes: []string{"/d"}}).Given() {
		t.Error("Given")
	}
	flags, err := (&Render{NamespaceMap: []string{"teams/*/**=$1"}}).Options()
	if err != nil || flags.Root != "" {
		t.Errorf("flags: root %q (want the rendered directory), %v", flags.Root, err)
	}
}

// TestRenderBindFlags: the flags parse into the options, --namespace-map repeated and the
// prefixes comma-separated.
func TestRenderBindFlags(t *testing.T) {
	var o Render
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	err := fs.Parse([]string{"--namespace-map", "a/**=x", "--namespace-map", "b/**=y", "--host-path-prefixes", "/data,/models",
		"--writable-host-path-prefixes", "/data/out", "--config", "c.yaml", "--queueing", "kueue"})
	if err != nil {
		t.Fatal(err)
	}
	want := Render{ConfigFile: "c.yaml", NamespaceMap: []string{"a/**=x", "b/**=y"}, HostPathPrefixes: []string{"/data", "/models"},
		WritableHostPathPrefixes: []string{"/data/out"}, Queueing: "kueue"}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("parsed %+v, want %+v", o, want)
	}
}
