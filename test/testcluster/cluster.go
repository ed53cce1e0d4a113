package testcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/internal/humanize"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Time limits of Start (after the binaries exist) and Stop.
const (
	startTimeout = 2 * time.Minute
	pollInterval = 100 * time.Millisecond
	requestLimit = 5 * time.Second
	stopGrace    = 5 * time.Second
)

// Options configures Start. The zero value is a temporary cluster with DefaultNodes.
type Options struct {
	// Dir holds the cluster's state, credentials, kubeconfig and component logs
	// (<Dir>/<component>.log). If empty, a temporary directory is used and removed by Stop. A
	// given Dir is kept; Start wipes the state of an earlier cluster in it.
	Dir string
	// Nodes are the fake nodes to create; DefaultNodes if empty.
	Nodes []NodeSpec
	// Log receives progress lines (and the first build's progress); nil discards them.
	Log io.Writer
	// BinDir holds the binaries; if empty, Binaries finds or builds them.
	BinDir string
	// Kueue also starts the Kueue controller (built with the other binaries) once the nodes are
	// up: its CRDs, its webhook configurations pointing at it on 127.0.0.1 and namespace
	// KueueNamespace are installed, and Start returns once its webhooks answer. It queues the
	// Jobs, pods, Deployments and StatefulSets that carry a kueue.x-k8s.io/queue-name label, or
	// live in a namespace with a LocalQueue named default.
	Kueue bool
	// KueueConfig is the repository path of the Kueue Configuration to run Kueue with, its
	// server settings replaced; KueueConfigFile if empty (a MultiKueue manager's is
	// MultiKueueManagerConfigFile).
	KueueConfig string
	// JobSet also starts the JobSet controller (kubernetes-sigs/jobset, built with Kueue) once
	// the nodes are up, before Kueue: its CRD and its webhook configurations pointing at it on
	// 127.0.0.1 are installed, and Start returns once its webhook answers. gpuctl renders
	// multi-node training as a JobSet with `multiNode: jobset` (docs/format.md §2.2).
	JobSet bool
}

// Cluster is a running local control plane with fake GPU nodes.
type Cluster struct {
	// Dir holds the cluster's state and the component logs.
	Dir string
	// Kubeconfig is the path of a kubeconfig for the admin, context gpuctl-local.
	Kubeconfig string
	// Token is the admin's bearer token (user gpuctl-admin, group system:masters).
	Token string

	server  string
	caPEM   []byte
	ca      *authority
	client  kubernetes.Interface
	log     io.Writer
	bin     string
	tempDir bool
	begin   time.Time

	mu        sync.Mutex
	tiers     [][]*process  // in start order; Stop goes backwards
	dead      chan struct{} // closed when the first component exits
	deadOnce  sync.Once
	firstDead *process
	restarts  int // components started again (restart.go), to number their earlier logs
	stopOnce  sync.Once
	stopErr   error

	logsMu  sync.Mutex
	podLogs map[string][]string // "<namespace>/<pod>" → containers with a log file (WritePodLog)
}

// Start starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, creates
// the fake nodes and returns once the nodes are Ready and untainted and pods can be created in
// namespace default, with the tenant ClusterRole of deploy/ installed; with Options.JobSet and
// Options.Kueue it then starts the JobSet controller and Kueue and returns once their webhooks
// answer. If a component dies meanwhile,
// the error names it and quotes its log; on any error Start stops what it started and keeps
// Dir for the logs. A given Dir must not hold a
// running cluster. Call Stop when done.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	nodes := opts.Nodes
	if len(nodes) == 0 {
		nodes = DefaultNodes()
	}
	if err := validateNodes(nodes); err != nil {
		return nil, err
	}
	c := &Cluster{log: opts.Log, bin: opts.BinDir, dead: make(chan struct{})}
	if c.log == nil {
		c.log = io.Discard
	}
	if err := c.findBinaries(ctx); err != nil {
		return nil, err
	}
	if err := c.makeDir(opts.Dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = c.abort(err)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c.begin = time.Now()
	if err := c.startControlPlane(ctx); err != nil {
		return nil, err
	}
	if err := c.addNodes(ctx, nodes); err != nil {
		return nil, err
	}
	if err := c.waitDefaultServiceAccount(ctx); err != nil {
		return nil, err
	}
	// What deploy/ installs beside the reconciler and every tenant namespace's RoleBinding
	// refers to, so that syncs of team directories work as on a real installation.
	if err := c.InstallTenantRole(ctx); err != nil {
		return nil, fmt.Errorf("install the tenant ClusterRole: %w", err)
	}
	if opts.JobSet { // first: Kueue sets up its JobSet integration only if the kind is served
		if err := c.startJobSet(ctx); err != nil {
			return nil, err
		}
	}
	if opts.Kueue {
		if err := c.startKueue(ctx, opts.KueueConfig); err != nil {
			return nil, err
		}
	}
	c.logf("cluster up in %s; KUBECONFIG=%s", c.since(), c.Kubeconfig)
	return c, nil
}

// findBinaries sets c.bin, building the binaries if needed.
func (c *Cluster) findBinaries(ctx context.Context) error {
	if c.bin != "" {
		return checkBinaries(c.bin)
	}
	begin := time.Now()
	bin, err := Binaries(ctx, c.log)
	if err != nil {
		return err
	}
	if d := time.Since(begin); d > 5*time.Second {
		c.logf("binaries ready in %s: %s", d.Round(time.Second), bin)
	}
	c.bin = bin
	return nil
}

// makeDir creates the cluster's directory, or wipes the state an earlier cluster left in it.
func (c *Cluster) makeDir(dir string) error {
	if dir == "" {
		removeStaleTempDirs()
		d, err := os.MkdirTemp("", tempDirPrefix)
		if err != nil {
			return err
		}
		c.Dir, c.tempDir = d, true
		return os.WriteFile(filepath.Join(d, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	c.Dir = d
	for _, stale := range []string{"etcd", "pki", "kubeconfig", "kueue"} {
		if err := os.RemoveAll(filepath.Join(d, stale)); err != nil {
			return err
		}
	}
	return os.MkdirAll(d, 0o755)
}

// startControlPlane starts etcd and the API server, waits for /readyz, then starts the
// controller manager, the scheduler and kwok.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	creds, err := writeCredentials(c.Dir)
	if err != nil {
		return fmt.Errorf("write credentials: %w", err)
	}
	p, err := newPorts()
	if err != nil {
		return err
	}
	c.server, c.caPEM, c.ca, c.Token = p.apiserverURL(), creds.caPEM, creds.ca, creds.token
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.server, c.caPEM, c.Token); err != nil {
		return err
	}
	if c.client, err = kubernetes.NewForConfig(c.RESTConfig()); err != nil {
		return err
	}
	c.logf("starting etcd and kube-apiserver in %s", c.Dir)
	// Separate tiers, so that Stop stops the API server before etcd.
	if err := c.startTier(component{"etcd", etcdArgs(c.Dir, p), nil}); err != nil {
		return err
	}
	if err := c.startTier(component{"kube-apiserver", apiserverArgs(c.Dir, p, creds), nil}); err != nil {
		return err
	}
	if err := c.waitReadyz(ctx); err != nil {
		return err
	}
	c.logf("kube-apiserver ready at %s after %s", c.server, c.since())
	// kwok reads its Logs and ClusterLogs from the cluster: their CRDs come first.
	if err := c.applyYAML(ctx, "kwok-crds.yaml", kwokCRDs); err != nil {
		return fmt.Errorf("install kwok's CRDs: %w", err)
	}
	if err := c.waitLogsAPI(ctx); err != nil {
		return err
	}
	kwok, err := kwokArgs(c.Dir, c.Kubeconfig, p, creds)
	if err != nil {
		return err
	}
	if err := c.startTier(
		component{"kube-controller-manager", controllerManagerArgs(c.Kubeconfig, creds), nil},
		component{"kube-scheduler", schedulerArgs(c.Kubeconfig), nil},
	); err != nil {
		return err
	}
	return c.startKwok(ctx, component{"kwok", kwok, []string{"HOME=" + c.Dir}}, p.kubelet) // keep ~/.kwok/kwok.yaml out
}

// kwokStarts is how often startKwok starts kwok before it gives up.
const kwokStarts = 3

// startKwok starts kwok and waits until its server listens on port. kwok v0.8.0 now and then
// dies while it builds the CEL environment of its metrics, before it serves (a panic in
// easycel's type registry); a kwok that exits before it listens is started again, up to
// kwokStarts times, its earlier log kept as kwok.log.<n>.
func (c *Cluster) startKwok(ctx context.Context, comp component, port int) error {
	addr := net.JoinHostPort(NodeIP, strconv.Itoa(port))
	for attempt := 1; ; attempt++ {
		p, err := startProcess(c.Dir, c.bin, comp)
		if err != nil {
			return err
		}
		listening, err := listensBeforeExit(ctx, p, addr)
		if err != nil {
			return err
		}
		if listening {
			c.mu.Lock()
			c.tiers = append(c.tiers, []*process{p})
			c.mu.Unlock()
			c.watch(p)
			return nil
		}
		if attempt == kwokStarts {
			return p.exitError()
		}
		_ = os.Rename(p.logPath, fmt.Sprintf("%s.%d", p.logPath, attempt))
		c.logf("kwok exited before it listened (start %d of %d); starting it again", attempt, kwokStarts)
	}
}

// watch records p as the first component to die, if it is, for Wait; one killed on purpose
// (StopAPIServer) does not count.
func (c *Cluster) watch(p *process) {
	go func() {
		<-p.done
		if p.killed.Load() {
			return
		}
		c.deadOnce.Do(func() { c.firstDead = p; close(c.dead) })
	}()
}

// listensBeforeExit waits until p accepts connections on addr (true) or exits (false); ctx
// ending stops p.
func listensBeforeExit(ctx context.Context, p *process, addr string) (bool, error) {
	for {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return true, nil
		}
		select {
		case <-ctx.Done():
			_ = p.stop(time.Second)
			return false, ctx.Err()
		case <-p.done:
			return false, nil
		case <-time.After(pollInterval):
		}
	}
}

// component is one binary to start, its arguments and extra environment.
type component struct {
	name string
	args []string
	env  []string
}

// startTier starts components that may run concurrently.
func (c *Cluster) startTier(comps ...component) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var tier []*process
	defer func() { c.tiers = append(c.tiers, tier) }()
	for _, comp := range comps {
		p, err := startProcess(c.Dir, c.bin, comp)
		if err != nil {
			return err
		}
		tier = append(tier, p)
		c.watch(p)
	}
	return nil
}

// addNodes creates the fake nodes and waits until they are Ready and untainted.
func (c *Cluster) addNodes(ctx context.Context, nodes []NodeSpec) error {
	if err := c.createNodes(ctx, nodes); err != nil {
		return err
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	if err := c.waitNodesReady(ctx, names); err != nil {
		return err
	}
	c.logf("%s ready after %s", humanize.Plural(len(nodes), "node"), c.since())
	return nil
}

// waitReadyz waits until the API server reports ready.
func (c *Cluster) waitReadyz(ctx context.Context) error {
	return c.waitFor(ctx, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, body)
		}
		return true, nil
	})
}

// waitDefaultServiceAccount waits for the ServiceAccount every pod in namespace default needs.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context) error {
	return c.waitFor(ctx, "ServiceAccount default/default", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// waitFor polls cond until it holds, ctx ends or a component exits. On timeout the error
// quotes cond's last error.
func (c *Cluster) waitFor(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	var last error
	for {
		if err := c.exitError(); err != nil {
			return fmt.Errorf("while waiting for %s: %w", what, err)
		}
		reqCtx, cancel := context.WithTimeout(ctx, requestLimit)
		ok, err := cond(reqCtx)
		cancel()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// exitError reports the first component that has exited, if any, but one killed on purpose
// (StopAPIServer).
func (c *Cluster) exitError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tier := range c.tiers {
		for _, p := range tier {
			if p.killed.Load() {
				continue
			}
			if err := p.exitError(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Wait blocks until a component exits and returns an error that names it and quotes its log.
// It suits long-running clusters that must notice a crash; after Stop it returns at once.
func (c *Cluster) Wait() error {
	<-c.dead
	return c.firstDead.exitError()
}

// abort stops the components after a failed start and keeps Dir for its logs. A temporary
// Dir is removed by the first Start after this process has exited.
func (c *Cluster) abort(err error) error {
	c.stopOnce.Do(func() { c.stopErr = c.stopProcesses() })
	return fmt.Errorf("%w\n(component logs are in %s)", err, c.Dir)
}

// Stop stops the components (SIGTERM, then SIGKILL after a grace period): Kueue, kwok, the
// scheduler and the controller manager first, then the API server, then etcd. It removes Dir if Start
// created it. Stop is idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.stopProcesses()
		if c.tempDir {
			c.stopErr = errors.Join(c.stopErr, os.RemoveAll(c.Dir))
		}
	})
	return c.stopErr
}

// stopProcesses stops the components, tier by tier, last started first.
func (c *Cluster) stopProcesses() error {
	c.mu.Lock()
	tiers := c.tiers
	c.mu.Unlock()
	var errs []error
	for i := len(tiers) - 1; i >= 0; i-- {
		errs = append(errs, stopAll(tiers[i], stopGrace))
	}
	return errors.Join(errs...)
}

// Name prefix and owner file of temporary cluster directories.
const (
	tempDirPrefix = "gpuctl-testcluster-"
	ownerFile     = "owner.pid"
)

// removeStaleTempDirs removes the temporary directories of clusters whose process is gone,
// e.g. a test binary killed before it could call Stop.
func removeStaleTempDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(string(data)); err == nil && !processAlive(pid) {
			_ = os.RemoveAll(d)
		}
	}
}

// logf writes one progress line to the log.
func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "testcluster: "+format+"\n", args...)
}

// since is the time since the components started, rounded for humans.
func (c *Cluster) since() time.Duration { return time.Since(c.begin).Round(10 * time.Millisecond) }
