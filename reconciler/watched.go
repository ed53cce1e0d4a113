package reconciler

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// A plan of a large inventory spends its time listing members that nothing changed. With a
// Watched view (the drift detector's metadata informers, which watch the same members), Plan
// lists nothing: a member whose identity, generation (or, for kinds without one, its
// resourceVersion) and labels and annotations are those the engine saw the last time it found
// the member up to date (when it listed or applied it, or the detector compared it) is up to
// date without a request. The others — changed, not yet verified, or to be pruned — are read
// one GET each, or by the LIST of their kind when they are many. The view is as fresh as the
// watch (milliseconds behind the API server): a change made out of band is seen by the first
// plan after its watch event, as it is by the detector, which reports or corrects it.

// Member is what a watch holds of a live member of the inventory.
type Member struct {
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	Generation      int64
	// MetaHash is object.MetaHash of the member's labels and annotations.
	MetaHash string
	Deleting bool
}

// Watched gives the live members of an inventory, its parent and the nodes from watches.
type Watched interface {
	// Members returns the members of inventory id of group-kind gk, and false when no synced
	// watch holds that group-kind for that inventory.
	Members(id string, gk schema.GroupKind) ([]Member, bool)
	// Inventory returns the ConfigMap namespace/name (nil: it does not exist), and false when
	// no synced watch holds it.
	Inventory(namespace, name string) (*unstructured.Unstructured, bool)
	// Nodes returns the nodes, with their labels and managedFields, and false when no synced
	// watch holds them.
	Nodes() ([]*unstructured.Unstructured, bool)
}

// watchedInventory returns the inventory's parent from the watch when it is the one the
// manager last read or wrote (any other change, or none seen yet, is read again), else nil.
func (m *Manager) watchedInventory(inv *inventory) (*unstructured.Unstructured, error) {
	w := m.watchedView()
	if w == nil {
		return nil, nil
	}
	u, ok := w.Inventory(inv.namespace, inv.name)
	if !ok || u == nil {
		return nil, nil
	}
	if rv, _ := m.inventoryRV.Load().(string); rv == "" || rv != u.GetResourceVersion() {
		return nil, nil
	}
	return u, nil
}

// watchedNodes returns the nodes from the watch.
func (m *Manager) watchedNodes() ([]*unstructured.Unstructured, bool) {
	w := m.watchedView()
	if w == nil {
		return nil, false
	}
	return w.Nodes()
}

// SetWatched makes Plan read the inventory's members from w where it can (nil: always list).
func (m *Manager) SetWatched(w Watched) {
	m.mu.Lock()
	m.watched = w
	m.mu.Unlock()
	m.noting.Store(w != nil)
}

func (m *Manager) watchedView() Watched {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.watched
}

// seen is a member as the engine last found it up to date with a desired object.
type seen struct {
	uid             types.UID
	resourceVersion string
	generation      int64
	metaHash        string
	appliedHash     string // the desired object's applied-hash
}

// verified remembers, by object.Ref.Key, the members last found up to date.
type verified struct {
	mu sync.Mutex
	m  map[string]seen
}

// note records that live was found up to date with the configuration of applied-hash h.
func (v *verified) note(live *unstructured.Unstructured, h string) {
	s := seen{uid: live.GetUID(), resourceVersion: live.GetResourceVersion(), generation: live.GetGeneration(),
		metaHash: object.MetaHash(live.GetLabels(), live.GetAnnotations()), appliedHash: h}
	key := object.RefOf(live).Key()
	v.mu.Lock()
	if v.m == nil {
		v.m = map[string]seen{}
	}
	v.m[key] = s
	v.mu.Unlock()
}

// unchanged reports whether member, of key and group-kind gk, is still as it was when found
// up to date with the configuration of applied-hash h: same object, same generation (or
// resourceVersion for a kind whose generation does not follow its changes), same labels and
// annotations.
func (v *verified) unchanged(gk schema.GroupKind, key string, mb Member, h string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.unchangedLocked(gk, key, mb, h)
}

// unchangedLocked is unchanged with v.mu held.
func (v *verified) unchangedLocked(gk schema.GroupKind, key string, mb Member, h string) bool {
	s, ok := v.m[key]
	if !ok || mb.Deleting || s.uid != mb.UID || s.metaHash != mb.MetaHash || s.appliedHash != h {
		return false
	}
	if mb.Generation > 0 && object.GenerationTracksChanges(gk) {
		return s.generation == mb.Generation
	}
	return s.resourceVersion == mb.ResourceVersion
}

// keepOnly forgets the members that are not in keys.
func (v *verified) keepOnly(keep map[string]*Change) {
	v.mu.Lock()
	for k := range v.m {
		if keep[k] == nil {
			delete(v.m, k)
		}
	}
	v.mu.Unlock()
}

// maxWatchedReads is the number of members of one kind above which the LIST of the kind is
// cheaper than a GET each.
const maxWatchedReads = 32

// listWatched decides the members of gk from the watch: those unchanged since they were found
// up to date are marked unchanged on their desired change; the others are read (GET) and
// passed to keep. It returns the number of members it saw, or -1, having decided nothing, when
// the view does not hold gk or more than maxWatchedReads members need a read: the kind is then
// listed.
func (m *Manager) listWatched(ctx context.Context, w Watched, inv *inventory, gk schema.GroupKind, rm *meta.RESTMapping,
	desired map[string]*Change, keep func(u *unstructured.Unstructured)) (int, error) {
	members, ok := w.Members(inv.id, gk)
	if !ok {
		return -1, nil
	}
	var unchanged []*Change
	var reads []Member
	m.verified.mu.Lock() // once, not once per member
	for _, mb := range members {
		key := object.KeyOf(gk, mb.Namespace, mb.Name)
		if c := desired[key]; c != nil && m.verified.unchangedLocked(gk, key, mb, c.appliedHash()) {
			unchanged = append(unchanged, c)
			continue
		}
		reads = append(reads, mb)
		if len(reads) > maxWatchedReads {
			m.verified.mu.Unlock()
			return -1, nil
		}
	}
	m.verified.mu.Unlock()
	var mu sync.Mutex
	var got []*unstructured.Unstructured
	err := parallel(ctx, m.opts.Concurrency, reads, func(ctx context.Context, mb Member) error {
		ri := m.dyn.Resource(rm.Resource).Namespace(mb.Namespace)
		u, err := ri.Get(ctx, mb.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // deleted since the watch saw it
		}
		if err != nil {
			return err
		}
		if object.LabelOf(u, keys.ApplySetPartOf) != inv.id {
			return nil // no longer a member
		}
		mu.Lock()
		got = append(got, u)
		mu.Unlock()
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return -1, err
		}
		return -1, nil // a read refused or failed: the LIST of the kind says what to do
	}
	for _, c := range unchanged {
		c.Action, c.liveSeen = ActionUnchanged, true
	}
	for _, u := range got {
		keep(u)
	}
	return len(members), nil
}

// requestCounter counts the requests of a manager's clients.
type requestCounter struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (r requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n.Add(1)
	return r.next.RoundTrip(req)
}
