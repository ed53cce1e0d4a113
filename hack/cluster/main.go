// Command cluster runs the local gpuctl test cluster (see test/testcluster) for people: the
// demo, manual testing and benchmarks.
//
//	go run ./hack/cluster up [--dir .cache/cluster] [--nodes FILE] [--kueue] [--kueue-config FILE] [--pod-logs=false]   start it in the background
//	go run ./hack/cluster status [--dir DIR]                                   is it up; list its nodes
//	go run ./hack/cluster down [--dir DIR]                                     stop it (idempotent)
//	go run ./hack/cluster gpu-metrics [--dir DIR] [--listen ADDR] [--history D] made-up GPU metrics in a real Prometheus (the demo's)
//
// up builds the binaries if needed, starts a detached "serve" process that owns the cluster,
// waits until the cluster is ready and prints the export KUBECONFIG=... line; its own exit
// leaves the cluster running. Everything lives in --dir (default .cache/cluster under the
// repository root): kubeconfig, serve.pid, serve.log and one log per component. FILE lists the
// fake nodes in the format of test/testcluster/testdata/nodes.yaml. --kueue also starts the
// Kueue controller (testcluster.Options.Kueue); --kueue-config FILE (a file of the repository,
// such as deploy/kueue/multikueue_manager_config.yaml for a MultiKueue manager) runs it with that
// Configuration instead of deploy/kueue/controller_manager_config.yaml
// (testcluster.Options.KueueConfig) and implies --kueue. Unless --pod-logs=false, serve also writes
// made-up logs for every pod, a line or two every 2 s while it runs, in the words of its kind
// (testcluster.Cluster.ServeFakePodLogs), so that kubectl logs and gpuctl logs -f show jobs
// working.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// Files in the cluster directory, besides those the cluster itself writes.
const (
	pidFile   = "serve.pid"
	logFile   = "serve.log"
	readyFile = "ready"
)

// Time limits of up (after the binaries exist) and down.
const (
	upTimeout   = 3 * time.Minute
	downTimeout = 20 * time.Second
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	dir := fs.String("dir", defaultDir(), "directory of the cluster's state, kubeconfig and logs")
	nodes := fs.String("nodes", "", "YAML list of fake nodes (default: testcluster.DefaultNodes)")
	bin := fs.String("bin", "", "directory of the binaries (serve only)")
	kueue := fs.Bool("kueue", false, "also start the Kueue controller, with its CRDs and webhooks")
	kueueConfig := fs.String("kueue-config", "", "the Kueue Configuration file of the repository to run Kueue with (default "+testcluster.KueueConfigFile+"); implies --kueue")
	podLogs := fs.Bool("pod-logs", true, "serve made-up logs for every pod (the lines of its kind, appended while it runs)")
	listen := fs.String("listen", "127.0.0.1:9099", "address of the Prometheus of gpu-metrics")
	history := fs.Duration("history", 3*time.Hour, "made-up history that gpu-metrics backfills")
	_ = fs.Parse(os.Args[2:])
	abs, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	k := kueueOptions{on: *kueue || *kueueConfig != "", config: *kueueConfig}
	switch cmd {
	case "up":
		err = up(abs, *nodes, k, *podLogs)
	case "down":
		err = down(abs)
	case "status":
		err = status(abs)
	case "serve":
		err = serve(abs, *nodes, *bin, k, *podLogs)
	case "gpu-metrics":
		err = gpuMetrics(abs, *listen, *history)
	default:
		usage()
	}
	if err != nil {
		fail(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run ./hack/cluster up|down|status|gpu-metrics [--dir DIR] [--nodes FILE] [--kueue] [--kueue-config FILE] [--pod-logs=false] [--listen ADDR] [--history D]")
	os.Exit(2)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cluster:", err)
	os.Exit(1)
}

// defaultDir is .cache/cluster under the repository root, or under the current directory.
func defaultDir() string {
	root, err := testcluster.RepoRoot()
	if err != nil {
		root = "."
	}
	return filepath.Join(root, ".cache", "cluster")
}

// up starts serve as a detached process and returns once the cluster is ready.
func up(dir, nodesFile string, kueue kueueOptions, podLogs bool) error {
	if kueue.config != "" {
		rel, err := repoPath(kueue.config)
		if err != nil {
			return err
		}
		kueue.config = rel
	}
	if pid := runningPid(dir); pid != 0 {
		if kueue.on && !serveArgsHave(pid, "--kueue=true") {
			return fmt.Errorf("cluster already running without Kueue (pid %d); stop it with: %s, then start it with --kueue", pid, stopCommand(dir))
		}
		if running := serveArg(pid, "--kueue-config"); kueue.on && running != kueue.config {
			return fmt.Errorf("cluster already running with Kueue's configuration %s, not %s (pid %d); stop it with: %s, then start it again",
				orDefault(running), orDefault(kueue.config), pid, stopCommand(dir))
		}
		if podLogs && !serveArgsHave(pid, "--pod-logs=true") {
			return fmt.Errorf("cluster already running without pod logs (pid %d, an older hack/cluster or --pod-logs=false); stop it with: %s, then start it again", pid, stopCommand(dir))
		}
		fmt.Fprintf(os.Stderr, "cluster already running (pid %d); stop it with: %s\n", pid, stopCommand(dir))
		printExport(dir)
		return nil
	}
	if nodesFile != "" {
		abs, err := filepath.Abs(nodesFile)
		if err != nil {
			return err
		}
		if _, err := testcluster.LoadNodes(abs); err != nil {
			return err
		}
		nodesFile = abs
	}
	bin, err := testcluster.Binaries(context.Background(), os.Stderr)
	if err != nil {
		return err
	}
	cmd, err := startServe(dir, nodesFile, bin, kueue, podLogs)
	if err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := waitReady(dir, exited); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return err
	}
	fmt.Fprintln(os.Stderr, upMessage(cmd.Process.Pid, dir))
	printExport(dir)
	return nil
}

// startServe starts `serve` in a new session, so that it outlives up, logging to serve.log.
func startServe(dir, nodesFile, bin string, kueue kueueOptions, podLogs bool) (*exec.Cmd, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(dir, readyFile))
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, logFile))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	args := append([]string{"serve", "--dir", dir, "--nodes", nodesFile, "--bin", bin}, kueue.args()...)
	cmd := exec.Command(exe, append(args, "--pod-logs="+strconv.FormatBool(podLogs))...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start serve: %w", err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(pid+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	return cmd, nil
}

// waitReady waits for serve to report the cluster ready, echoing serve's log meanwhile.
func waitReady(dir string, exited <-chan error) error {
	logPath := filepath.Join(dir, logFile)
	var shown int64
	deadline := time.After(upTimeout)
	for {
		shown = echoNew(logPath, shown)
		if _, err := os.Stat(filepath.Join(dir, readyFile)); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			echoNew(logPath, shown)
			return fmt.Errorf("serve exited before the cluster was ready (%v); see %s", err, logPath)
		case <-deadline:
			return fmt.Errorf("cluster not ready after %s; see %s", upTimeout, logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// echoNew copies what was appended to the file at path since offset to stderr.
func echoNew(path string, offset int64) int64 {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) <= offset {
		return offset
	}
	os.Stderr.Write(data[offset:])
	return int64(len(data))
}

func printExport(dir string) {
	fmt.Printf("export KUBECONFIG=%s\n", shellQuote(filepath.Join(dir, "kubeconfig")))
}

// upMessage is what up says once the cluster is ready: its pid, its logs, and the exact
// command that stops it.
func upMessage(pid int, dir string) string {
	return fmt.Sprintf("cluster up (pid %d, logs in %s); stop it with: %s", pid, dir, stopCommand(dir))
}

// stopCommand is the command that stops the cluster of dir (an absolute path), to paste in a
// shell at the repository root.
func stopCommand(dir string) string {
	return "go run ./hack/cluster down --dir " + shellQuote(dir)
}

// shellQuote quotes s for a POSIX shell when it holds anything but letters, digits and
// -_./:=@%+,
func shellQuote(s string) string {
	safe := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !safe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// serve runs the cluster until SIGTERM, SIGINT or SIGHUP, or until a component dies; with
// podLogs it writes made-up logs for every pod meanwhile.
func serve(dir, nodesFile, bin string, kueue kueueOptions, podLogs bool) error {
	var nodes []testcluster.NodeSpec
	if nodesFile != "" {
		var err error
		if nodes, err = testcluster.LoadNodes(nodesFile); err != nil {
			return err
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer cancel()
	c, err := testcluster.Start(ctx, testcluster.Options{Dir: dir, Nodes: nodes, Log: os.Stderr, BinDir: bin, Kueue: kueue.on, KueueConfig: kueue.config})
	if err != nil {
		return err
	}
	defer removeOwnFiles(dir)
	if err := os.WriteFile(filepath.Join(dir, readyFile), nil, 0o644); err != nil {
		return errors.Join(err, c.Stop())
	}
	if podLogs {
		go func() {
			_ = c.ServeFakePodLogs(ctx, testcluster.FakeLogsOptions{Errors: func(err error) { fmt.Fprintln(os.Stderr, "cluster:", err) }})
		}()
	}
	died := make(chan error, 1)
	go func() { died <- c.Wait() }()
	select {
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "cluster: stopping")
		return c.Stop()
	case err := <-died:
		return errors.Join(err, c.Stop())
	}
}

// removeOwnFiles removes the ready file, and the pid file if it names this process.
func removeOwnFiles(dir string) {
	_ = os.Remove(filepath.Join(dir, readyFile))
	if readPid(dir) == os.Getpid() {
		_ = os.Remove(filepath.Join(dir, pidFile))
	}
}

// down stops the cluster: SIGTERM to serve, which stops the components, then SIGKILL to its
// whole process group if it is still there after downTimeout.
func down(dir string) error {
	pid := runningPid(dir)
	if pid == 0 {
		fmt.Fprintln(os.Stderr, "cluster not running")
		return cleanup(dir)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for end := time.Now().Add(downTimeout); time.Now().Before(end) && alive(pid); {
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the session's group: serve and its components
	fmt.Fprintf(os.Stderr, "cluster stopped (pid %d)\n", pid)
	return cleanup(dir)
}

// cleanup removes the pid and ready files.
func cleanup(dir string) error {
	for _, f := range []string{pidFile, readyFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// readPid returns the pid in the pid file, or 0.
func readPid(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// runningPid returns the pid of this directory's serve process if it is alive, or 0.
func runningPid(dir string) int {
	pid := readPid(dir)
	if pid <= 0 || !alive(pid) || !isServe(pid, dir) {
		return 0
	}
	return pid
}

func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

// kueueOptions are up's and serve's flags of Kueue: whether to start it, and with which
// Configuration, a path of the repository ("" for testcluster.KueueConfigFile).
type kueueOptions struct {
	on     bool
	config string
}

// args are serve's flags of k, each as one argument (--name=value), as serveArg reads them.
func (k kueueOptions) args() []string {
	return []string{"--kueue=" + strconv.FormatBool(k.on), "--kueue-config=" + k.config}
}

// orDefault names a Kueue configuration file, testcluster.KueueConfigFile for "".
func orDefault(config string) string {
	if config == "" {
		return testcluster.KueueConfigFile
	}
	return config
}

// repoPath is file (absolute, or relative to the current directory) as the path in the
// repository that testcluster.Options.KueueConfig takes; an error if it is missing or lies
// outside the repository.
func repoPath(file string) (string, error) {
	root, err := testcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("--kueue-config: %w", err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("--kueue-config %s: not a file of the repository %s", file, root)
	}
	return rel, nil
}

// serveArg is the value of the flag name (--name=value) on the command line of process pid;
// "" when it has none (an older hack/cluster) or without /proc.
func serveArg(pid int, name string) string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	for _, a := range strings.Split(string(cmdline), "\x00") {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// serveArgsHave reports whether the command line of process pid has arg; without /proc, true.
func serveArgsHave(pid int, arg string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true
	}
	return slices.Contains(strings.Split(string(cmdline), "\x00"), arg)
}

// isServe checks that pid is a serve process of dir, not a process that reused the pid.
func isServe(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		_, noProc := os.Stat("/proc/self")
		return noProc != nil // without /proc, trust the pid file
	}
	args := strings.Split(string(cmdline), "\x00")
	return len(args) > 3 && args[1] == "serve" && args[3] == dir
}
