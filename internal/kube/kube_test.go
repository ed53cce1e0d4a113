package kube

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tokenFile is where a pod's service account token is mounted; clientcmd and rest look
// there and nowhere else.
const tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// writeKubeconfig writes a kubeconfig whose contexts name the servers given (context name ->
// server), current is the current context.
func writeKubeconfig(t *testing.T, current string, servers map[string]string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for name, server := range servers {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "t-" + name}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.CurrentContext = current
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// isolate clears what the lookup reads from the environment: $KUBECONFIG, ~/.kube/config and
// the variables of a pod.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	home := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = filepath.Join(t.TempDir(), ".kube", "config")
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = home })
}

// TestRESTConfigLookup: --kubeconfig wins over $KUBECONFIG, which wins over ~/.kube/config;
// --context picks a context other than the current one; a kubeconfig wins over a pod's
// service account.
func TestRESTConfigLookup(t *testing.T) {
	flagFile := writeKubeconfig(t, "a", map[string]string{"a": "https://flag.example:6443", "b": "https://flag-b.example:6443"})
	envFile := writeKubeconfig(t, "e", map[string]string{"e": "https://env.example:6443"})
	homeFile := writeKubeconfig(t, "h", map[string]string{"h": "https://home.example:6443"})
	cases := map[string]struct {
		opts    Options
		env     string // $KUBECONFIG
		home    bool   // ~/.kube/config exists
		inPod   bool   // KUBERNETES_SERVICE_HOST and _PORT set
		want    string // server
		wantErr string
	}{
		"explicit path":                  {opts: Options{Kubeconfig: flagFile}, env: envFile, home: true, want: "https://flag.example:6443"},
		"$KUBECONFIG":                    {env: envFile, home: true, want: "https://env.example:6443"},
		"~/.kube/config":                 {home: true, want: "https://home.example:6443"},
		"--context":                      {opts: Options{Kubeconfig: flagFile, Context: "b"}, want: "https://flag-b.example:6443"},
		"--context with $KUBECONFIG":     {opts: Options{Context: "e"}, env: envFile, want: "https://env.example:6443"},
		"kubeconfig wins over the pod":   {env: envFile, inPod: true, want: "https://env.example:6443"},
		"unknown context":                {opts: Options{Kubeconfig: flagFile, Context: "nope"}, wantErr: `"nope"`},
		"missing explicit file":          {opts: Options{Kubeconfig: "/does/not/exist"}, env: envFile, wantErr: "/does/not/exist"},
		"nothing at all":                 {wantErr: ErrNoConfiguration.Error()},
		"context without any kubeconfig": {opts: Options{Context: "e"}, wantErr: "kubeconfig: "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			isolate(t)
			t.Setenv("KUBECONFIG", tc.env)
			if tc.home {
				if err := os.MkdirAll(filepath.Dir(clientcmd.RecommendedHomeFile), 0o755); err != nil {
					t.Fatal(err)
				}
				data, _ := os.ReadFile(homeFile)
				if err := os.WriteFile(clientcmd.RecommendedHomeFile, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.inPod {
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
				t.Setenv("KUBERNETES_SERVICE_PORT", "443")
			}
			cfg, err := tc.opts.RESTConfig(UserAgent("gpuctl-test"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "kubeconfig: ") {
					t.Fatalf("want an error starting with kubeconfig: and containing %q, got %v (config %v)", tc.wantErr, err, cfg)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.want {
				t.Errorf("server %q, want %q", cfg.Host, tc.want)
			}
			if !strings.HasPrefix(cfg.UserAgent, "gpuctl-test/") {
				t.Errorf("user agent %q", cfg.UserAgent)
			}
		})
	}
}

// TestRESTConfigInPodWithoutToken: without a kubeconfig, in a pod whose service account token
// is not mounted, the error says both that no kubeconfig was found and why the pod's service
// account could not be used.
func TestRESTConfigInPodWithoutToken(t *testing.T) {
	if _, err := os.Stat(tokenFile); err == nil {
		t.Skipf("%s exists: this runs in a pod (see TestRESTConfigInPod)", tokenFile)
	}
	isolate(t)
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	_, err := (&Options{}).RESTConfig(UserAgent("gpuctl-test"))
	if !errors.Is(err, ErrNoConfiguration) || !strings.Contains(err.Error(), tokenFile) {
		t.Fatalf("want ErrNoConfiguration naming %s, got %v", tokenFile, err)
	}
}

// TestRESTConfigInPod: in a pod with a service account and no kubeconfig, the service account
// is used. The token's path is fixed (clientcmd and rest read no other), so the test runs where
// one is mounted (in a pod), or, as root with unshare(1), again in a private mount namespace
// with a token on a tmpfs over /var/run; elsewhere it is skipped.
func TestRESTConfigInPod(t *testing.T) {
	if _, err := os.Stat(tokenFile); err != nil || os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		unshare, lookErr := exec.LookPath("unshare")
		if os.Getenv("GPUCTL_KUBE_TEST_PRIVATE_MOUNTS") != "" || os.Getuid() != 0 || lookErr != nil {
			t.Skip("not in a pod (no service account token), and no private mount namespace to mount one in")
		}
		script := `mount -t tmpfs tmpfs /var/run && mkdir -p "$(dirname "$1")" && echo token >"$1" && exec "$0" -test.run '^TestRESTConfigInPod$' -test.v`
		cmd := exec.Command(unshare, "-m", "sh", "-c", script, os.Args[0], tokenFile)
		cmd.Env = append(os.Environ(), "GPUCTL_KUBE_TEST_PRIVATE_MOUNTS=1", "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443")
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "mount: ") || strings.Contains(string(out), "unshare: ") {
			t.Skipf("no private mount namespace here:\n%s", out)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestRESTConfigInPod") {
			t.Fatalf("in a private mount namespace: %v\n%s", err, out)
		}
		return
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	isolate(t)
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	cfg, err := (&Options{}).RESTConfig(UserAgent("gpuctl-test"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerTokenFile != tokenFile || !strings.Contains(cfg.Host, host) || !strings.HasPrefix(cfg.UserAgent, "gpuctl-test/") {
		t.Errorf("not the pod's service account: host %q, token file %q, user agent %q", cfg.Host, cfg.BearerTokenFile, cfg.UserAgent)
	}
}

// TestBindFlags: the flags keep kubectl's names.
func TestBindFlags(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--kubeconfig", "/k", "--context", "c"}); err != nil {
		t.Fatal(err)
	}
	if o != (Options{Kubeconfig: "/k", Context: "c"}) {
		t.Errorf("parsed %+v", o)
	}
}

// TestNamespace: the context's namespace, "default" when the context names none, and the
// namespace of the context --context picks.
func TestNamespace(t *testing.T) {
	isolate(t)
	path := writeKubeconfig(t, "a", map[string]string{"a": "https://a.example:6443", "b": "https://b.example:6443"})
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts["b"].Namespace = "alice"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	for ctx, want := range map[string]string{"": "default", "b": "alice"} {
		got, err := (&Options{Kubeconfig: path, Context: ctx}).Namespace()
		if err != nil || got != want {
			t.Errorf("context %q: namespace %q, %v; want %q", ctx, got, err, want)
		}
	}
}
