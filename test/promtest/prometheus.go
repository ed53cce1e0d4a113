package promtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gpuctl/gpuctl/test/testcluster"
)

// Job is the job name of the scrape targets, as a Prometheus scraping dcgm-exporter names it.
const Job = "dcgm-exporter"

// Options configures a Prometheus.
type Options struct {
	// Targets are the host:port of /metrics endpoints to scrape, under job [Job].
	Targets []string
	// OtherJobs are more scrape jobs, name → targets (a cluster's other scrapes, such as
	// the pods' own /metrics); Start does not wait for their first scrape.
	OtherJobs map[string][]string
	// ScrapeInterval is how often the targets are scraped; 1s when zero.
	ScrapeInterval time.Duration
	// Backfill is OpenMetrics text (ending in "# EOF", e.g. dcgmtest.OpenMetrics) written into
	// the data directory with promtool before Prometheus starts.
	Backfill []byte
	// Dir is the data directory (it holds the TSDB, the configuration and prometheus.log); a
	// new temporary directory, removed by Stop, when empty.
	Dir string
	// Listen is the address to serve on; a free port of 127.0.0.1 when empty (the demo
	// names a fixed one, so that the reconciler can be told it before Prometheus starts).
	Listen string
	// Log receives the progress of hack/prometheus.sh; nil discards it.
	Log io.Writer
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	URL string // http://127.0.0.1:PORT
	Dir string // the data directory
	// API is a client of its HTTP API.
	API v1.API

	logPath string
	targets []string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process exited
	waitErr error         // valid after done is closed
	rmDir   bool          // Stop removes Dir
}

// stopGrace is how long Stop waits after SIGTERM before it kills Prometheus.
const stopGrace = 5 * time.Second

// Start backfills opts.Backfill, starts Prometheus and returns once it is ready and, when there
// are targets, the first scrape of each has succeeded (up == 1). On error nothing is left
// running.
//
// Without targets it is ready in a fraction of a second (backfill included). With targets it
// takes about 5.5 s: Prometheus 2.42's discovery manager hands even static targets to the
// scrape manager on a fixed 5 s tick, which no flag shortens (the scrape manager's own reload
// interval is set to 100 ms, so it adds nothing). A test package that scrapes should start one
// Prometheus for all its tests (in TestMain) rather than one per test.
func Start(ctx context.Context, opts Options) (_ *Prometheus, err error) {
	bin, err := Binaries(ctx, opts.Log)
	if err != nil {
		return nil, err
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	p := &Prometheus{Dir: opts.Dir, targets: opts.Targets, done: make(chan struct{})}
	if p.Dir == "" {
		if p.Dir, err = os.MkdirTemp("", "promtest-"); err != nil {
			return nil, err
		}
		p.rmDir = true
	}
	defer func() {
		if err != nil && p.rmDir {
			os.RemoveAll(p.Dir)
		}
	}()
	data := filepath.Join(p.Dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	if len(opts.Backfill) > 0 {
		if err := backfill(ctx, bin, p.Dir, data, opts.Backfill); err != nil {
			return nil, err
		}
	}
	config := filepath.Join(p.Dir, "prometheus.yml")
	if err := os.WriteFile(config, configYAML(opts.Targets, opts.OtherJobs, opts.ScrapeInterval), 0o644); err != nil {
		return nil, err
	}
	addr := opts.Listen
	if addr == "" {
		ports, err := testcluster.FreePorts(1)
		if err != nil {
			return nil, err
		}
		addr = "127.0.0.1:" + strconv.Itoa(ports[0])
	}
	p.URL = "http://" + addr
	if err := p.start(bin, config, data, addr); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.stopProcess()
		}
	}()
	client, err := api.NewClient(api.Config{Address: p.URL})
	if err != nil {
		return nil, err
	}
	p.API = v1.NewAPI(client)
	if err := p.waitReady(ctx); err != nil {
		return nil, err
	}
	if err := p.waitUp(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// StartT starts a Prometheus for t (its data directory under t.TempDir() unless opts.Dir is
// set), fails t if it cannot, and stops it when t ends. It waits at most a minute.
func StartT(t testing.TB, opts Options) *Prometheus {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start Prometheus: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop Prometheus: %v", err)
		}
	})
	return p
}

// configYAML is the configuration scraping targets every interval under job [Job].
func configYAML(targets []string, others map[string][]string, interval time.Duration) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n",
		model.Duration(interval), model.Duration(interval), model.Duration(interval))
	jobs := map[string][]string{}
	maps.Copy(jobs, others)
	if len(targets) > 0 {
		jobs[Job] = targets
	}
	if len(jobs) > 0 {
		b.WriteString("scrape_configs:\n")
	}
	for _, name := range slices.Sorted(maps.Keys(jobs)) {
		fmt.Fprintf(&b, "  - job_name: %q\n    static_configs:\n      - targets:\n", name)
		for _, t := range jobs[name] {
			fmt.Fprintf(&b, "          - %q\n", t)
		}
	}
	return []byte(b.String())
}

// backfill writes the OpenMetrics text into dir and turns it into TSDB blocks in data with
// `promtool tsdb create-blocks-from openmetrics`. promtool cuts blocks of at most 2 h (its
// hidden --max-block-duration), aligned on 2 h, so that hours of history are several blocks;
// Prometheus loads them all when it opens the TSDB (2.42 allows blocks that overlap).
func backfill(ctx context.Context, bin, dir, data string, text []byte) error {
	file := filepath.Join(dir, "backfill.om")
	if err := os.WriteFile(file, text, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "promtool"), "tsdb", "create-blocks-from", "openmetrics", "--quiet", file, data)
	cmd.SysProcAttr = testcluster.ChildProcAttr()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("promtool tsdb create-blocks-from openmetrics %s: %w\n%s", file, err, out)
	}
	return nil
}

// start starts the prometheus process, logging to <Dir>/prometheus.log.
func (p *Prometheus) start(bin, config, data, addr string) error {
	p.logPath = filepath.Join(p.Dir, "prometheus.log")
	logFile, err := os.Create(p.logPath)
	if err != nil {
		return err
	}
	args := []string{
		"--config.file=" + config,
		"--storage.tsdb.path=" + data,
		"--web.listen-address=" + addr,
		"--storage.tsdb.retention.time=30d",
		// The scrape manager applies new targets at most every 5 s by default, which made the
		// first scrape wait that long; a hidden flag of 2.42.
		"--scrape.discovery-reload-interval=100ms",
		// No console templates: Debian's defaults point at /etc/prometheus, which the unpacked
		// package does not install.
		"--web.console.templates=" + p.Dir,
		"--web.console.libraries=" + p.Dir,
	}
	p.cmd = exec.Command(filepath.Join(bin, "prometheus"), args...)
	p.cmd.Dir = p.Dir
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = testcluster.ChildProcAttr()
	fmt.Fprintf(logFile, "# %s %s\n", p.cmd.Path, strings.Join(args, " "))
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start prometheus: %w", err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return nil
}

// exited describes the exited process quoting its log, or returns nil while it runs.
func (p *Prometheus) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("prometheus exited (%v); last lines of %s:\n%s", p.waitErr, p.logPath, testcluster.Tail(p.logPath, 30))
	default:
		return nil
	}
}

// poll calls check every 50 ms until it returns true or an error, the process exits or ctx
// ends; what names what is awaited.
func (p *Prometheus) poll(ctx context.Context, what string, check func() (bool, error)) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if err := p.exited(); err != nil {
			return err
		}
		ok, err := check()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("prometheus at %s: %s: %w (last: %v; log %s)", p.URL, what, ctx.Err(), last, p.logPath)
		case <-tick.C:
		}
	}
}

// waitReady waits until /-/ready answers 200.
func (p *Prometheus) waitReady(ctx context.Context) error {
	return p.poll(ctx, "wait for /-/ready", func() (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("/-/ready: %s", resp.Status)
		}
		return true, nil
	})
}

// waitUp waits until the last scrape of every target succeeded.
func (p *Prometheus) waitUp(ctx context.Context) error {
	if len(p.targets) == 0 {
		return nil
	}
	return p.poll(ctx, "wait for the first scrape of "+strings.Join(p.targets, ", "), func() (bool, error) {
		up, err := p.perTarget(ctx, fmt.Sprintf(`up{job=%q}`, Job))
		if err != nil {
			return false, err
		}
		for _, t := range p.targets {
			if v, ok := up[t]; !ok || v != 1 {
				return false, fmt.Errorf("up{instance=%q} is %v (scraped: %v)", t, v, ok)
			}
		}
		return true, nil
	})
}

// WaitScraped waits until every target has been scraped once more by a scrape that began after
// the call, so that values a test changed before calling it are in Prometheus.
func (p *Prometheus) WaitScraped(ctx context.Context) error {
	since := float64(time.Now().UnixMilli()) / 1000
	return p.poll(ctx, "wait for a new scrape of "+strings.Join(p.targets, ", "), func() (bool, error) {
		// timestamp(up) is the start of the target's last scrape; its samples and up are
		// committed together, so a query sees the scraped values once it sees that up.
		// (timestamp of an expression other than a plain selector is the evaluation time, so
		// up == 1 is checked apart.)
		ts, err := p.perTarget(ctx, fmt.Sprintf(`timestamp(up{job=%q})`, Job))
		if err != nil {
			return false, err
		}
		up, err := p.perTarget(ctx, fmt.Sprintf(`up{job=%q}`, Job))
		if err != nil {
			return false, err
		}
		for _, t := range p.targets {
			if v, ok := ts[t]; !ok || v <= since {
				return false, fmt.Errorf("target %s last scraped at %v, not after %v", t, v, since)
			}
			if up[t] != 1 {
				return false, fmt.Errorf("the last scrape of %s failed (up %v)", t, up[t])
			}
		}
		return true, nil
	})
}

// perTarget runs an instant query and returns its value per instance label.
func (p *Prometheus) perTarget(ctx context.Context, query string) (map[string]float64, error) {
	val, _, _, err := p.API.Query(ctx, query, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", query, err)
	}
	vec, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: a %s, not a vector", query, val.Type())
	}
	out := map[string]float64{}
	for _, s := range vec {
		out[string(s.Metric[model.InstanceLabel])] = float64(s.Value)
	}
	return out, nil
}

// Stop stops Prometheus (SIGTERM, then SIGKILL after 5 s) and removes the data directory Start
// created (not one given in Options.Dir).
func (p *Prometheus) Stop() error {
	err := p.stopProcess()
	if p.rmDir {
		err = errors.Join(err, os.RemoveAll(p.Dir))
	}
	return err
}

// stopProcess ends the process and waits for it.
func (p *Prometheus) stopProcess() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop prometheus: %w", err)
	}
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	return nil
}
