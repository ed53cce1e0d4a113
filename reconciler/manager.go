package reconciler

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Manager plans and applies desired objects against one cluster. It is safe for use by one
// sync at a time; discovery is cached across syncs.
type Manager struct {
	cfg    *rest.Config // the manager's own identity, from which tenant clients are derived
	dyn    dynamic.Interface
	mapper meta.ResettableRESTMapper
	opts   Options
	// inventoryID is the ApplySet id of the inventory: objects labelled with it are gpuctl's.
	inventoryID string

	mu       sync.Mutex
	mappings map[schema.GroupVersionKind]*meta.RESTMapping
	tenants  map[string]dynamic.Interface             // impersonating clients, by tenant namespace
	typed    map[schema.GroupVersion]*rest.RESTClient // protobuf clients of built-in kinds (typedClient)
	// httpClient is the transport of the typed clients, made with the first.
	httpClient *http.Client
	// watched is the view of the inventory's members that Plan reads instead of listing
	// (SetWatched); verified are the members it last found up to date.
	watched  Watched
	verified verified
	noting   atomic.Bool // remember what InSync finds up to date: a Watched view reads it
	// inventoryRV is the resourceVersion of the inventory's parent as the manager last read
	// or wrote it: the watched copy is used only while it is that one.
	inventoryRV atomic.Value
	// requests counts every request of the manager's clients (Plan reports its own).
	requests *atomic.Int64
	// prepared is what the last PlanDeferred prepared of each deferred object (preparedBody).
	prepared atomic.Pointer[map[preparedKey]preparedBody]
}

// NewManager connects to the cluster of cfg. Client-side rate limiting is raised (QPS 500,
// burst 1000) unless cfg sets it: the API server's own flow control protects it.
func NewManager(cfg *rest.Config, opts Options) (*Manager, error) {
	c := rest.CopyConfig(cfg)
	if c.QPS == 0 {
		c.QPS, c.Burst = 500, 1000
	}
	requests := &atomic.Int64{}
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return requestCounter{next: rt, n: requests} })
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	return &Manager{
		cfg:         c,
		dyn:         dyn,
		mapper:      restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		opts:        opts,
		inventoryID: newInventory(opts.InventoryName, opts.Namespace).id,
		mappings:    map[schema.GroupVersionKind]*meta.RESTMapping{},
		tenants:     map[string]dynamic.Interface{},
		typed:       map[schema.GroupVersion]*rest.RESTClient{},
		requests:    requests,
	}, nil
}

// Options returns the manager's options.
func (m *Manager) Options() Options { return m.opts }

// InventoryID is the ApplySet id of the manager's inventory: the value of the
// applyset.kubernetes.io/part-of label of the objects it applies.
func (m *Manager) InventoryID() string { return m.inventoryID }

// mapping resolves a kind to its resource, refreshing discovery once for kinds it does not know
// (a CRD installed since the last sync).
func (m *Manager) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rm, ok := m.mappings[gvk]; ok {
		return rm, nil
	}
	rm, err := m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		m.mapper.Reset()
		rm, err = m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: the cluster does not serve this kind: %w", gvk, err)
	}
	m.mappings[gvk] = rm
	return rm, nil
}

// resource returns the reader of an object's resource (the manager's own identity), in its
// namespace when namespaced.
func (m *Manager) resource(c *Change) dynamic.ResourceInterface {
	return scoped(m.dyn, c.resource, c.namespaced, c.Object.Namespace)
}

func scoped(dyn dynamic.Interface, gvr schema.GroupVersionResource, namespaced bool, ns string) dynamic.ResourceInterface {
	if namespaced {
		return dyn.Resource(gvr).Namespace(ns)
	}
	return dyn.Resource(gvr)
}

// parallel runs fn for each item with at most n in flight and returns the first error.
func parallel[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(n)
	for _, it := range items {
		g.Go(func() error { return fn(ctx, it) })
	}
	return g.Wait()
}
