package reconciler_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/testcluster"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m, testcluster.Options{})) }

// counter counts the requests a client sends, by kind.
type counter struct {
	writes, dryRuns, reads atomic.Int64
	failAfter              atomic.Int64 // when > 0, writes beyond this many fail like a dead server
}

func (c *counter) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		switch {
		case req.Method == http.MethodGet:
			c.reads.Add(1)
		case strings.Contains(req.URL.RawQuery, "dryRun="):
			c.dryRuns.Add(1)
		default:
			n := c.writes.Add(1)
			if f := c.failAfter.Load(); f > 0 && n > f {
				return nil, fmt.Errorf("dial tcp %s: connect: connection refused", req.URL.Host)
			}
		}
		return next.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// env is one test's engine, with its own inventory, and a request counter.
type env struct {
	t       *testing.T
	ctx     context.Context
	count   *counter
	kube    kubernetes.Interface
	opts    reconciler.Options
	manager *reconciler.Manager
}

func newEnv(t *testing.T, opts reconciler.Options) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cfg := testcluster.Current().RESTConfig()
	c := &counter{}
	counted := rest.CopyConfig(cfg)
	counted.Wrap(c.RoundTrip)
	if opts.InventoryName == "" || opts.InventoryName == keys.InventoryName {
		opts.InventoryName = "inv-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	}
	m, err := reconciler.NewManager(counted, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, count: c, kube: kubernetes.NewForConfigOrDie(cfg), opts: opts, manager: m}
}

// renderFiles renders gpuctl files written into memory.
func renderFiles(t *testing.T, files map[string]string) []*unstructured.Unstructured {
	t.Helper()
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	res, err := render.New(render.Options{}).Render(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	return res.Objects
}

// sync plans and applies, failing the test on an error.
func (e *env) sync(objs []*unstructured.Unstructured) (*reconciler.Plan, *reconciler.ChangeSet) {
	e.t.Helper()
	plan, err := e.manager.Plan(e.ctx, objs)
	if err != nil {
		e.t.Fatalf("plan: %v", err)
	}
	cs, err := e.manager.Apply(e.ctx, plan, nil)
	if err != nil {
		e.t.Fatalf("apply: %v", err)
	}
	return plan, cs
}

// actions lists "action Kind ns/name" for the changes that are not unchanged.
func actions(p *reconciler.Plan) string {
	var out []string
	for _, c := range p.Changes {
		if c.Action != reconciler.ActionUnchanged {
			out = append(out, string(c.Action)+" "+c.Object.String())
		}
	}
	return strings.Join(out, "\n")
}

func (e *env) resetCounts() {
	e.count.writes.Store(0)
	e.count.dryRuns.Store(0)
	e.count.reads.Store(0)
}
