package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/gpuctl/gpuctl/internal/cores"
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
// kinds (those of client-go's scheme) are listed with protobuf into typed objects, and each
// is converted to unstructured without its managedFields; those are added back where the plan
// reads them (withManagedFields). Kinds the scheme does not know (CRDs) are listed as JSON with
// the dynamic client.

// protobuf is the content type of the typed lists; JSON is accepted as a fallback.
const protobuf = "application/vnd.kubernetes.protobuf"

// livePage is one page of a list: the objects without their managedFields (fields holds
// them, by index, for the typed lists; nil when the objects still carry theirs).
type livePage struct {
	items  []*unstructured.Unstructured
	fields [][]metav1.ManagedFieldsEntry
	next   string
}

// listPage lists one page of a resource across all namespaces.
func (m *Manager) listPage(ctx context.Context, rm *meta.RESTMapping, opts metav1.ListOptions) (*livePage, error) {
	listGVK := rm.GroupVersionKind.GroupVersion().WithKind(rm.GroupVersionKind.Kind + "List")
	if !scheme.Scheme.Recognizes(listGVK) {
		l, err := m.dyn.Resource(rm.Resource).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		p := &livePage{items: make([]*unstructured.Unstructured, len(l.Items)), next: l.GetContinue()}
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

// typedPage converts a typed list to unstructured objects of kind gvk, keeping their
// managedFields aside.
func typedPage(list runtime.Object, gvk schema.GroupVersionKind) (*livePage, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	p := &livePage{items: make([]*unstructured.Unstructured, len(items)), fields: make([][]metav1.ManagedFieldsEntry, len(items)),
		next: lm.GetContinue()}
	// The conversion is most of a no-op plan's time: it runs on every core, a share each.
	var mu sync.Mutex
	var errs []error
	cores.Each(len(items), func(i int) {
		if err := p.convert(i, items[i], gvk); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
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

// convert sets item i of the page from the typed object it, its managedFields kept aside.
func (p *livePage) convert(i int, it runtime.Object, gvk schema.GroupVersionKind) error {
	a, err := meta.Accessor(it)
	if err != nil {
		return err
	}
	p.fields[i] = a.GetManagedFields()
	a.SetManagedFields(nil)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, a.GetNamespace(), a.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(gvk)
	p.items[i] = u
	return nil
}

// withManagedFields gives a live object of a page its managedFields back where the plan reads
// them: on a Job (leftToKueue reads them, trimLive keeps them).
func (p *livePage) withManagedFields(i int) *unstructured.Unstructured {
	u := p.items[i]
	if p.fields != nil && p.fields[i] != nil && isJob(u) {
		u.SetManagedFields(p.fields[i])
		p.fields[i] = nil
	}
	return u
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
