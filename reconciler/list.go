package reconciler

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The inventory's LIST is most of a no-op sync: decoding JSON into unstructured objects costs
// ~15 times more than decoding protobuf into typed ones, and half of a Job's bytes are its
// managedFields, which the plan needs only for queue-managed Jobs (leftToKueue). So built-in
// kinds (those of client-go's scheme) are listed with protobuf into typed objects, which are
// compared with their desired objects as they are (object.ContainsTyped): only a member that
// is not up to date is converted to unstructured (without its managedFields, but a Job's,
// which trimLive keeps). Kinds the scheme does not know (CRDs) are listed as JSON with the
// dynamic client.

// protobuf is the content type of the typed lists; JSON is accepted as a fallback.
const protobuf = "application/vnd.kubernetes.protobuf"

// livePage is one page of a list. A typed page holds its objects as decoded (typed), each
// converted to unstructured on demand (live); a page of the dynamic client holds them in items.
type livePage struct {
	items []*unstructured.Unstructured
	typed []runtime.Object
	gvk   schema.GroupVersionKind
	next  string
}

// listPage lists one page of a resource across all namespaces.
func (m *Manager) listPage(ctx context.Context, rm *meta.RESTMapping, opts metav1.ListOptions) (*livePage, error) {
	listGVK := rm.GroupVersionKind.GroupVersion().WithKind(rm.GroupVersionKind.Kind + "List")
	if !scheme.Scheme.Recognizes(listGVK) {
		l, err := m.dyn.Resource(rm.Resource).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		p := &livePage{items: make([]*unstructured.Unstructured, len(l.Items)), gvk: rm.GroupVersionKind, next: l.GetContinue()}
		for i := range l.Items {
			p.items[i] = &unstructured.Unstructured{Object: l.Items[i].Object}
		}
		return p, nil
	}
	rc, err := m.typedClient(rm.GroupVersionKind.GroupVersion())
	if err != nil {
		return nil, err
	}
	obj, err := scheme.Scheme.New(listGVK)
	if err != nil {
		return nil, err
	}
	req := rc.Get().Resource(rm.Resource.Resource).Param("limit", strconv.FormatInt(opts.Limit, 10))
	if opts.LabelSelector != "" {
		req = req.Param("labelSelector", opts.LabelSelector)
	}
	if opts.Continue != "" {
		req = req.Param("continue", opts.Continue)
	}
	if err := req.Do(ctx).Into(obj); err != nil {
		return nil, err
	}
	return typedPage(obj, rm.GroupVersionKind)
}

// typedPage is the page of a typed list of objects of kind gvk.
func typedPage(list runtime.Object, gvk schema.GroupVersionKind) (*livePage, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		it.GetObjectKind().SetGroupVersionKind(gvk) // protobuf leaves it out; desired objects have it
	}
	return &livePage{items: make([]*unstructured.Unstructured, len(items)), typed: items, gvk: gvk, next: lm.GetContinue()}, nil
}

// pageResult is a page of a list, or why it could not be read.
type pageResult struct {
	page *livePage
	err  error
}

// fetchPage lists one page (listPage) in the background.
func (m *Manager) fetchPage(ctx context.Context, rm *meta.RESTMapping, opts metav1.ListOptions) <-chan pageResult {
	ch := make(chan pageResult, 1)
	go func() {
		p, err := m.listPage(ctx, rm, opts)
		ch <- pageResult{p, err}
	}()
	return ch
}

// key is the object.Ref key of item i.
func (p *livePage) key(i int) string {
	if p.typed == nil {
		return object.RefOf(p.items[i]).Key()
	}
	a, err := meta.Accessor(p.typed[i])
	if err != nil {
		return ""
	}
	return object.Ref{APIVersion: p.gvk.GroupVersion().String(), Kind: p.gvk.Kind, Namespace: a.GetNamespace(), Name: a.GetName()}.Key()
}

// upToDateInPage tells whether item i is up to date with its desired change c, and if so decides
// it unchanged (seenUpToDate): a typed item is compared as it is, with its metadata alone
// converted (what upToDate reads besides the values).
func (m *Manager) upToDateInPage(c *Change, p *livePage, i int) bool {
	if p.typed == nil {
		return m.seenUpToDate(c, p.items[i], nil)
	}
	a, err := meta.Accessor(p.typed[i])
	if err != nil || a.GetAnnotations()[keys.AppliedHash] != object.AnnotationOf(c.Desired, keys.AppliedHash) {
		return false
	}
	release := c.whole() // needsManagedFields reads its spec
	defer release()
	md := &unstructured.Unstructured{Object: map[string]any{}}
	md.SetGroupVersionKind(p.gvk)
	md.SetNamespace(a.GetNamespace())
	md.SetName(a.GetName())
	md.SetUID(a.GetUID())
	md.SetResourceVersion(a.GetResourceVersion())
	md.SetGeneration(a.GetGeneration())
	md.SetLabels(a.GetLabels())
	md.SetAnnotations(a.GetAnnotations())
	if needsManagedFields(c.Desired, md) {
		md.SetManagedFields(a.GetManagedFields())
	}
	return m.seenUpToDate(c, md, p.typed[i])
}

// live returns item i as an unstructured object, without managedFields but a Job's (see
// trimLive).
func (p *livePage) live(i int) (*unstructured.Unstructured, error) {
	if p.items[i] != nil || p.typed == nil {
		return p.items[i], nil
	}
	it := p.typed[i]
	a, err := meta.Accessor(it)
	if err != nil {
		return nil, err
	}
	fields := a.GetManagedFields()
	a.SetManagedFields(nil)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", p.gvk.Kind, a.GetNamespace(), a.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(p.gvk)
	if isJob(u) && fields != nil {
		u.SetManagedFields(fields)
	}
	p.items[i] = u
	return u, nil
}

// pruneCandidate returns item i, a member that no desired object names, as a plan keeps it:
// whole (live) with whole, else its kind and metadata alone (metadataOnly) and its GPUs,
// counted from the whole object before the rest is dropped.
func (p *livePage) pruneCandidate(i int, whole bool) (*unstructured.Unstructured, int64, error) {
	if whole || p.typed == nil {
		u, err := p.live(i)
		if err != nil || whole {
			return u, 0, err
		}
		gpus := object.GPUs(u)
		p.items[i] = nil // the page holds the whole object no longer
		return metadataOnly(u), gpus, nil
	}
	it := p.typed[i]
	a, err := meta.Accessor(it)
	if err != nil {
		return nil, 0, err
	}
	a.SetManagedFields(nil) // not converted: half of a Job's bytes
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s/%s: %w", p.gvk.Kind, a.GetNamespace(), a.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(p.gvk)
	return metadataOnly(u), object.GPUs(u), nil
}

// metadataOnly is u reduced to its apiVersion, kind and metadata without managedFields: what
// a prune reads of the member it deletes (its name, labels and annotations). It takes u's
// metadata map, which it changes.
func metadataOnly(u *unstructured.Unstructured) *unstructured.Unstructured {
	md, _ := u.Object["metadata"].(map[string]any)
	delete(md, "managedFields")
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"], "metadata": md}}
}

// needsManagedFields tells a live object whose up-to-date check reads its managedFields (see
// leftToKueue).
func needsManagedFields(desired, live *unstructured.Unstructured) bool {
	if !(QueueManaged(desired) || QueueManaged(live)) {
		return false
	}
	_, found, _ := unstructured.NestedFieldNoCopy(desired.Object, suspendPath...)
	return found
}

// typedClient returns the protobuf REST client of a built-in group-version, made once.
func (m *Manager) typedClient(gv schema.GroupVersion) (*rest.RESTClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rc := m.typed[gv]; rc != nil {
		return rc, nil
	}
	c := rest.CopyConfig(m.cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.ContentType = protobuf
	c.AcceptContentTypes = protobuf + ",application/json"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if m.httpClient == nil {
		hc, err := rest.HTTPClientFor(m.cfg)
		if err != nil {
			return nil, err
		}
		m.httpClient = hc
	}
	rc, err := rest.RESTClientForConfigAndClient(c, m.httpClient)
	if err != nil {
		return nil, err
	}
	m.typed[gv] = rc
	return rc, nil
}
