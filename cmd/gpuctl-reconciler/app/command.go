package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuctl/gpuctl/cluster"
	"github.com/gpuctl/gpuctl/cmd/gpuctl-reconciler/app/httpapi"
	"github.com/gpuctl/gpuctl/cmd/options"
	"github.com/gpuctl/gpuctl/drift"
	"github.com/gpuctl/gpuctl/drift/detector"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/kube"
	"github.com/gpuctl/gpuctl/internal/logging"
	"github.com/gpuctl/gpuctl/internal/version"
	"github.com/gpuctl/gpuctl/reconciler/daemon"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/sources"
	gitsource "github.com/gpuctl/gpuctl/sources/git"
	"github.com/gpuctl/gpuctl/usage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Options are all the flags of gpuctl-reconciler.
type Options struct {
	Source SourceOptions
	Render options.Render
	Log    logging.Options
	Kube   kube.Options
	Engine options.Engine
	Rates  RateOptions
	// Notify are the alerts, the commit statuses and the cluster's name (notify.go).
	Notify NotifyOptions
	// Prometheus is where GPU utilization is read (the API's metrics, the page's charts, the
	// idle policy); without a URL there is none.
	Prometheus options.Prometheus
	// IdleEvery is how often the leader applies the idle policy (daemon.Options.IdleEvery).
	IdleEvery time.Duration

	Namespace     string
	Interval      time.Duration
	Listen        string
	TLSCertFile   string
	TLSKeyFile    string
	TokensFile    string
	LeaderElect   bool
	Identity      string
	LeaseDuration time.Duration
	Drift         drift.Mode
	DriftDelete   bool
	DriftHistory  int
	DriftIgnore   []string
	MemoryLimit   string
	// ReadModelIdle stops the API's informers after this long without a read (0: never).
	ReadModelIdle time.Duration
	// ProfilingListen serves the Go runtime's profiles (net/http/pprof) on a second address.
	ProfilingListen string
	RenderCache     string
	RenderTimeout   time.Duration
	SyncTimeout     time.Duration

	// wrapTransport, when set, wraps the transport of the daemon's own clients (tests count
	// their requests).
	wrapTransport func(http.RoundTripper) http.RoundTripper
}

// BindFlags adds every flag.
func (o *Options) BindFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	o.Source.BindFlags(fs)
	o.Render.BindFlags(fs)
	o.Log.BindFlags(fs)
	o.Kube.BindFlags(fs)
	o.Engine.BindFlags(fs)
	o.Rates.BindFlags(fs)
	o.Notify.BindFlags(fs)
	o.Prometheus.BindFlags(fs)
	fs.DurationVar(&o.IdleEvery, "idle-every", daemon.DefaultIdleEvery, "how often the leader, with --prometheus-url, applies gpuctl-policy.yaml's idle rules and sets gpuctl_team_gpus")
	fs.StringVar(&o.Namespace, "namespace", keys.SystemNamespace, "the daemon's namespace: status, inventory, lease, pool registry")
	fs.DurationVar(&o.Interval, "interval", 5*time.Minute, "sync at least this often, even when no change is signalled")
	fs.StringVar(&o.Listen, "listen", ":8080", "address of the HTTP server (/healthz, /readyz, /metrics, /api/v1, /hooks/*)")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serve HTTPS with this PEM certificate (chain); needs --tls-key-file; plain HTTP is then refused on --listen")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", "", "the PEM private key of --tls-cert-file")
	fs.StringVar(&o.TokensFile, "tokens-file", "", "bearer tokens of /api/v1: lines token,name[,admin or ,namespaces=NS1;NS2] (no file: the API answers 401)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "run several replicas; only the holder of the Lease syncs")
	fs.StringVar(&o.Identity, "identity", "", "this replica's name in the Lease and the status (default $POD_NAME or the host name)")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "how long a standby waits for a silent leader before taking over")
	o.Drift = drift.ModeReport
	fs.Var(&o.Drift, "drift", "drift mode: report (record drift; a sync of an unchanged revision leaves it) or correct (repair drift as it happens)")
	fs.BoolVar(&o.DriftDelete, "drift-delete-shadow", false, "with --drift=correct, delete GPU workloads in managed namespaces that are not in Git (default: report them only)")
	fs.IntVar(&o.DriftHistory, "drift-history", drift.DefaultHistory, "how many drift changes the ConfigMap gpuctl-drift keeps")
	fs.StringSliceVar(&o.DriftIgnore, "drift-ignore-manager", detector.DefaultIgnoreManagers, "field managers whose changes are not drift (controllers such as an HPA's)")
	fs.DurationVar(&o.RenderTimeout, "render-timeout", daemon.DefaultRenderTimeout, "give up a render that takes longer (the sync fails; the last good revision stays applied)")
	fs.StringVar(&o.RenderCache, "render-cache-size", "64Mi", "memory kept for the render cache, which re-renders only the files a revision changed (64Mi holds about 10,000 files); 0 disables it")
	fs.DurationVar(&o.SyncTimeout, "sync-timeout", daemon.DefaultSyncTimeout, "give up a sync (fetch, render, plan, apply) that takes longer")
	fs.StringVar(&o.ProfilingListen, "profiling-listen", "", "serve the Go runtime's profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060 (off by default; no authentication: keep it on localhost)")
	fs.DurationVar(&o.ReadModelIdle, "read-model-idle", 10*time.Minute, "the API's read model (informers on gpuctl's workloads and every pod, node, quota and event) starts with the first read of the API or the web page and stops after this long without one; 0 starts it after the first sync and keeps it")
	fs.StringVar(&o.MemoryLimit, "memory-limit", "auto", "soft memory limit of the Go runtime (GOMEMLIMIT): the garbage collector works harder near it; auto: 80% of the container's memory limit, or 400Mi without one; 0 disables")
}

// NewCommand builds gpuctl-reconciler.
func NewCommand() *cobra.Command { return newCommand(&Options{}) }

// newCommand builds gpuctl-reconciler over o, whose flags it binds.
func newCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gpuctl-reconciler --source=dir:PATH|git:URL",
		Short: "Keep a cluster in sync with a tree of gpuctl files",
		Long: `gpuctl-reconciler watches a directory or a Git repository of gpuctl files and keeps the
cluster in sync: on every change, webhook, sync request (gpuctl sync) and interval it renders the
files, plans and applies them with server-side apply and prunes what left Git. A revision with
invalid files, or a failed fetch, changes nothing: the last good revision stays applied. The
status is kept in the ConfigMap gpuctl-status of --namespace (gpuctl status reads it).

With --git-push the API's writes (POST /api/v1/jobs, DELETE /api/v1/jobs/{jobId}, pause, resume,
scale) are commits that the daemon pushes to the source with its credentials, then applies; a
directory source is written in place.`,
		Example: `  gpuctl-reconciler --source=dir:examples --kubeconfig ~/.kube/config
  gpuctl-reconciler --source=git:https://git.example.com/platform/gpu-jobs.git --ref=main \
      --git-token-file=/etc/gpuctl/git/token --webhook-github-secret-file=/etc/gpuctl/git/hook \
      --namespace-map='teams/*/**=$1' --leader-elect --git-push`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), o)
		},
	}
	o.BindFlags(cmd)
	return cmd
}

func (o *Options) identity() string {
	if o.Identity != "" {
		return o.Identity
	}
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, _ := os.Hostname()
	return h
}

// renderOptions are the render's options: the render flags', for the cluster of --cluster
// (which names it in the notifications too): the shared files and clusters/<cluster>/.
func (o *Options) renderOptions() (render.Options, error) {
	o.Render.Cluster = o.Notify.Cluster
	return o.Render.Options()
}

func run(ctx context.Context, o *Options) error {
	if o.Source.Source == "" {
		return errors.New("--source is required: dir:PATH or git:URL")
	}
	if o.RenderTimeout <= 0 || o.SyncTimeout <= 0 {
		return errors.New("--render-timeout and --sync-timeout must be positive")
	}
	if err := o.Rates.validate(); err != nil {
		return err
	}
	log, err := o.Log.Logger(os.Stderr)
	if err != nil {
		return err
	}
	if err := setMemoryLimit(o.MemoryLimit); err != nil {
		return err
	}
	setGCPercent()
	renderOpts, err := o.renderOptions()
	if err != nil {
		return err
	}
	cacheSize, err := resource.ParseQuantity(o.RenderCache)
	if err != nil || cacheSize.Sign() < 0 {
		return fmt.Errorf("--render-cache-size %q: not a size such as 64Mi", o.RenderCache)
	}
	renderCacheBytes := cacheSize.Value()
	if renderCacheBytes == 0 {
		renderCacheBytes = -1 // no cache
	}
	cfg, err := o.Kube.RESTConfig(kube.UserAgent("gpuctl-reconciler"))
	if err != nil {
		return err
	}
	own := o.Rates.clientConfig(cfg) // the engine's clients keep their own rate
	if o.wrapTransport != nil {
		own.Wrap(o.wrapTransport)
	}
	kube, err := kubernetes.NewForConfig(own)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(own) // Kueue's objects, for the read model
	if err != nil {
		return err
	}
	o.Engine.Namespace = o.Namespace // the inventory lives beside the status
	if o.Drift == drift.ModeCorrect {
		o.Engine.Force = true // Git wins: fields taken by other managers are taken back
	}
	engine, err := o.Engine.Manager(cfg)
	if err != nil {
		return err
	}
	src, err := o.Source.Open(log.With("component", "source"))
	if err != nil {
		return err
	}
	defer src.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := daemon.NewMetrics(reg)
	gpus, err := o.prometheus()
	if err != nil {
		return err
	}
	dispatcher, alerts, err := o.Notify.alerts(log.With("component", "alerts"))
	if err != nil {
		return err
	}
	if dispatcher != nil {
		defer dispatcher.Close()
	}
	statuses, err := o.Notify.statuses(ctx, o.Source.Source, log.With("component", "forge"))
	if err != nil {
		return err
	}
	driftStore := drift.NewStore(kube, o.Namespace)
	events := record.NewBroadcaster()
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	// The Events of syncs and of drift say the cluster as their source's host (kubectl get
	// events -o wide: SOURCE gpuctl-reconciler, NAME; reportingInstance NAME).
	recorder := events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: keys.ReconcilerFieldManager, Host: o.Notify.Cluster})
	det, err := detector.New(detector.Options{Config: own, Kube: kube, Engine: engine, Store: driftStore, Mode: o.Drift,
		DeleteShadow: o.DriftDelete, IgnoreManagers: o.DriftIgnore, HistorySize: o.DriftHistory, Resync: o.Interval,
		Metrics: metrics.Drift, Events: recorder, Alerts: alerts, Log: log.With("component", "drift")})
	if err != nil {
		return err
	}
	engine.SetWatched(det) // a plan reads the members from the detector's watches, not by listing
	dopts := daemon.Options{Source: src, Render: renderOpts, Engine: engine, Store: daemon.NewStore(kube, o.Namespace),
		Interval: o.Interval, Identity: o.identity(), DriftMode: o.Drift, Drift: det, DriftStore: driftStore,
		RenderTimeout: o.RenderTimeout, SyncTimeout: o.SyncTimeout, RenderCacheBytes: renderCacheBytes, Writes: o.Source.Writes, Usage: gpus, IdleEvery: o.IdleEvery,
		Alerts: alerts, Dynamic: dyn, Recorder: recorder, Metrics: metrics, Log: log.With("component", "sync")}
	if statuses != nil { // not a nil *forge.Reporter in the interface
		dopts.Statuses = statuses
	}
	d := daemon.New(dopts)
	if o.ProfilingListen != "" {
		go serveProfiles(ctx, o.ProfilingListen, log)
	}
	// The API's informers list once the first sync has ended (a leader is not Ready before) or
	// this replica stands by: at a restart over 10,000 objects their lists took a second of
	// the first sync's 2 cores (bench/README.md).
	readModel := make(chan struct{})
	var readModelOnce sync.Once
	openReadModel := func() { readModelOnce.Do(func() { close(readModel) }) }
	go func() {
		select {
		case <-d.FirstSync():
			openReadModel()
		case <-ctx.Done():
		}
	}()
	srv, err := o.serve(ctx, log, kube, dyn, reg, d, src, readModel, gpus)
	if err != nil {
		return err
	}
	log.Info("gpuctl-reconciler starting", "version", version.String(), "source", src.URL(), "identity", o.identity(), "listen", srv.Addr)
	if err := daemon.EnsureNamespace(ctx, kube, o.Namespace); err != nil {
		log.Warn("cannot create the daemon's namespace", "namespace", o.Namespace, "err", err)
	}
	// Every replica serves the status from its informer of the status ConfigMap: a read of
	// the API or the page makes no request to the API server.
	if err := d.WatchStatus(ctx); err != nil {
		return fmt.Errorf("watch the status: %w", err)
	}
	if o.LeaderElect {
		daemon.RunAsLeader(ctx, daemon.LeaderOptions{Kube: kube, Namespace: o.Namespace, Identity: o.identity(),
			LeaseDuration: o.LeaseDuration, RenewDeadline: o.LeaseDuration * 2 / 3, RetryPeriod: o.LeaseDuration / 7,
			ReleaseOnCancel: true, OnStandby: openReadModel, Log: log.With("component", "leader")},
			func(ctx context.Context) { _ = d.Run(ctx) })
	} else {
		err = d.Run(ctx)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return err
}

// serve starts the HTTP server: health, metrics, API and webhooks, with timeouts
// (defaultHTTPTimeouts), over TLS with --tls-cert-file and --tls-key-file.
func (o *Options) serve(ctx context.Context, log *slog.Logger, kube kubernetes.Interface, dyn dynamic.Interface, reg *prometheus.Registry,
	d *daemon.Daemon, src sources.Source, readModel <-chan struct{}, gpus *usage.Client) (*http.Server, error) {
	var tokens httpapi.TokenSource
	if o.TokensFile != "" {
		t, err := httpapi.LoadStaticTokens(o.TokensFile, log)
		if err != nil {
			return nil, err
		}
		tokens = t
	}
	hooks := map[string]http.Handler{}
	if trig, ok := src.(sources.Trigger); ok {
		for kind, file := range map[gitsource.WebhookKind]string{gitsource.WebhookGitHub: o.Source.GitHubSecretFile,
			gitsource.WebhookGitLab: o.Source.GitLabSecretFile, gitsource.WebhookGeneric: o.Source.GenericSecretFile} {
			if file != "" {
				hooks["/hooks/"+string(kind)] = gitsource.NewWebhookHandler(kind, file, trig, log.With("component", "webhook"))
			}
		}
	}
	// The read model answers from informers: no LIST per request. They list once readModel
	// is closed (after the first sync): at once without --read-model-idle, else on the first read.
	var objects *cluster.InformerObjects
	if o.ReadModelIdle > 0 {
		objects = cluster.LazyInformers(ctx, readModel, kube, dyn, o.Namespace, o.ReadModelIdle)
	} else {
		objects = cluster.StartInformersAfter(ctx, readModel, kube, dyn, o.Namespace)
	}
	handler := httpapi.New(httpapi.Options{Backend: d, Writer: d, Kube: kube, Dynamic: dyn, Objects: objects, SystemNamespace: o.Namespace, Cluster: o.Notify.Cluster, Tokens: tokens,
		Registry: reg, Webhooks: hooks, Ready: d.Ready, Usage: gpus, RateLimit: o.Rates.APIQPS, RateBurst: o.Rates.APIBurst, Log: log.With("component", "http")})
	srv, err := newHTTPServer(handler, defaultHTTPTimeouts, o.TLSCertFile, o.TLSKeyFile)
	if err != nil {
		return nil, err
	}
	if err := startHTTP(srv, o.Listen, log.With("component", "http")); err != nil {
		return nil, err
	}
	return srv, nil
}

// prometheus is the client of --prometheus-url, nil without one.
func (o *Options) prometheus() (*usage.Client, error) {
	c, err := o.Prometheus.Client()
	if errors.Is(err, usage.ErrNoPrometheus) {
		return nil, nil
	}
	return c, err
}

// setMemoryLimit sets the Go runtime's soft memory limit, unless GOMEMLIMIT is set.
func setMemoryLimit(s string) error {
	if os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	limit, err := memoryLimit(s, containerMemoryLimit())
	if err != nil {
		return err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return nil
}

// gcPercent is the daemon's collector percentage (GOGC), unless GOGC is set: the heap grows to
// 1.35 times what a collection found live, not twice. What the daemon keeps between syncs is
// small (~45 MB at 10,000 gpuctl files), and a sync allocates in bursts; the goal that GOGC 100
// gave let a burst take twice the pages. At 10,000 manifests GOGC 50 made the peak RSS 158 →
// 132–137 MiB; at 10,000 gpuctl files (deferred bodies) GOGC 35 made it 141–177 → 134–139 MiB
// (first sync 131–137), edit → applied p50 0.15–0.16 s as at 50, a restart's first sync 2.3 s
// (bench/README.md).
const gcPercent = 35

// setGCPercent sets the collector's percentage to gcPercent, unless GOGC is set.
func setGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// defaultMemoryLimit is --memory-limit=auto outside a container with a memory limit.
const defaultMemoryLimit = 400 << 20

// memoryLimit is the soft limit that --memory-limit s asks for, in bytes (0: none); container
// is the container's memory limit (0: none). auto is 80 % of it: the rest is the room that the
// heap's garbage and the runtime take beyond the soft limit. Below it the collector runs more
// often; too far below, it runs all the time (at 10,000 objects a 200Mi limit made every sync
// about 2.5 times slower than 400Mi; bench/README.md).
func memoryLimit(s string, container int64) (int64, error) {
	if s == "auto" {
		if container > 0 {
			return container / 5 * 4, nil
		}
		return defaultMemoryLimit, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit %q: %w", s, err)
	}
	return q.Value(), nil
}

// containerMemoryLimit reads the memory limit of the process's cgroup (v2, then v1); 0 when
// there is none.
func containerMemoryLimit() int64 {
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // "max", or v1's "no limit" (a huge number)
			return 0
		}
		return n
	}
	return 0
}

// serveProfiles serves net/http/pprof on addr until ctx ends.
func serveProfiles(ctx context.Context, addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != nil && ctx.Err() == nil {
		log.Warn("profiling server stopped", "addr", addr, "err", err)
	}
}
