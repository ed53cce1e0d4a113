package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// A workload's pods that reference a Secret that does not exist never start
// (CreateContainerConfigError, or a volume that never mounts). Render records each workload's
// references with their lines (render.SecretRef, annotation keys.SecretRefs); the plan takes
// them off the desired objects before hashing them (takeSecretRefs: the annotation is never
// applied), and fails the change of a workload whose Secret no desired object declares and the
// cluster does not hold (checkSecretRefs), with the objects of its document: nothing of it is
// applied, the rest of the plan goes ahead. Only the Secret's metadata is read, never its
// data: in a tenant namespace as the tenant (the tenant ClusterRole may get Secrets there),
// elsewhere as the manager (deploy/ grants the reconciler no access to Secrets: such a Secret
// is then not checked, and the plan warns so).

var (
	secretsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// secretRefs are the Secret references of the desired objects that have some, or why their
// annotation could not be read.
type secretRefs struct {
	refs   map[*unstructured.Unstructured][]render.SecretRef
	broken map[*unstructured.Unstructured]error
}

// takeSecretRefs takes render's Secret references off the desired objects (in place; an
// object whose body is deferred keeps its annotations in its head).
func takeSecretRefs(objects []*unstructured.Unstructured) secretRefs {
	var out secretRefs
	for _, u := range objects {
		refs, err := render.TakeSecretRefs(u)
		switch {
		case err != nil:
			if out.broken == nil {
				out.broken = map[*unstructured.Unstructured]error{}
			}
			out.broken[u] = err
		case len(refs) > 0:
			if out.refs == nil {
				out.refs = map[*unstructured.Unstructured][]render.SecretRef{}
			}
			out.refs[u] = refs
		}
	}
	return out
}

// secretLookup is one read of a Secret's metadata: as a tenant ("" for the manager itself),
// in a namespace.
type secretLookup struct {
	tenant, namespace, name string
}

// secretFound is what a lookup found: whether the Secret exists, or why that is not known.
type secretFound struct {
	exists bool
	err    error
}

// checkSecretRefs fails each desired change whose Secret references name a Secret that no
// desired change declares and the cluster does not hold, and the changes of the same
// document (its Services); a Secret that cannot be read is a warning of the plan.
func (m *Manager) checkSecretRefs(ctx context.Context, plan *Plan, changes []*Change, refs secretRefs) {
	if len(refs.refs) == 0 && len(refs.broken) == 0 {
		return
	}
	declared := map[string]bool{}
	for _, c := range changes {
		if c.Error == "" && c.Object.Group() == "" && c.Object.Kind == "Secret" {
			declared[c.Object.Namespace+"/"+c.Object.Name] = true
		}
	}
	lookups := map[secretLookup]*secretFound{}
	for _, c := range changes {
		for _, r := range refs.refs[c.Desired] {
			if !declared[c.Object.Namespace+"/"+r.Secret] {
				lookups[m.secretLookupOf(c, r)] = nil
			}
		}
	}
	m.lookUpSecrets(ctx, lookups)
	failed := map[string]*Change{} // source file, namespace and job -> the workload that failed
	warned := map[secretLookup]bool{}
	for _, c := range changes {
		if err := refs.broken[c.Desired]; err != nil { // written by hand in a manifest
			c.fail("%v", err)
			continue
		}
		var missing []string
		for _, r := range refs.refs[c.Desired] {
			if declared[c.Object.Namespace+"/"+r.Secret] {
				continue
			}
			l := m.secretLookupOf(c, r)
			switch f := lookups[l]; {
			case f.err != nil && !warned[l]:
				warned[l] = true
				plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: %s: cannot check that Secret %q exists in namespace %s (%s): %v",
					refAt(c, r), r.Field, r.Secret, c.Object.Namespace, c.Object, f.err))
			case f.err == nil && !f.exists:
				missing = append(missing, fmt.Sprintf("%s: %s: Secret %q does not exist in namespace %s: no file declares it and the cluster does not hold it",
					refAt(c, r), r.Field, r.Secret, c.Object.Namespace))
			}
		}
		if len(missing) > 0 && c.Error == "" {
			c.fail("%s", strings.Join(missing, "; "))
			failed[documentKey(c)] = c
		}
	}
	if len(failed) == 0 {
		return
	}
	for _, c := range changes {
		if w := failed[documentKey(c)]; w != nil && w != c && c.Error == "" && object.LabelOf(c.Desired, keys.App) != "" {
			c.fail("not applied: %s of the same document references a Secret that does not exist", w.Object)
		}
	}
}

// documentKey names the gpuctl document a change's object was rendered from: its file,
// namespace and job (label keys.App).
func documentKey(c *Change) string {
	return c.Source + "\x00" + c.Object.Namespace + "\x00" + object.LabelOf(c.Desired, keys.App)
}

// refAt is where a reference is made: file:line.
func refAt(c *Change, r render.SecretRef) string {
	if r.Line > 0 {
		return c.Source + ":" + strconv.Itoa(r.Line)
	}
	return c.Source
}

// secretLookupOf is the read that checks a change's reference: as its tenant when the change
// is written as the tenant, else as the manager.
func (m *Manager) secretLookupOf(c *Change, r render.SecretRef) secretLookup {
	l := secretLookup{namespace: c.Object.Namespace, name: r.Secret}
	if m.impersonated(c) {
		l.tenant = c.tenant
	}
	return l
}

// lookUpSecrets reads the metadata of each Secret, Concurrency at a time. A read refused as
// Forbidden is answered by the namespace: a Secret of a namespace that does not exist (a team
// whose first sync this is) does not exist either.
func (m *Manager) lookUpSecrets(ctx context.Context, lookups map[secretLookup]*secretFound) {
	if len(lookups) == 0 {
		return
	}
	var mu sync.Mutex
	clients := map[string]metadata.Interface{}
	client := func(tenant string) (metadata.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		if c := clients[tenant]; c != nil {
			return c, nil
		}
		cfg := rest.CopyConfig(m.cfg)
		if tenant != "" {
			cfg.Impersonate = rest.ImpersonationConfig{UserName: TenantUser(tenant)}
		}
		c, err := metadata.NewForConfig(cfg)
		if err == nil {
			clients[tenant] = c
		}
		return c, err
	}
	list := make([]secretLookup, 0, len(lookups))
	for l := range lookups {
		list = append(list, l)
		lookups[l] = &secretFound{err: errors.New("not read")} // until read
	}
	_ = parallel(ctx, m.opts.Concurrency, list, func(ctx context.Context, l secretLookup) error {
		f := m.lookUpSecret(ctx, client, l)
		mu.Lock()
		lookups[l] = &f
		mu.Unlock()
		return nil // each read's error is its lookup's
	})
}

// lookUpSecret reads one Secret's metadata (lookUpSecrets).
func (m *Manager) lookUpSecret(ctx context.Context, client func(string) (metadata.Interface, error), l secretLookup) secretFound {
	c, err := client(l.tenant)
	if err != nil {
		return secretFound{err: err}
	}
	_, err = c.Resource(secretsGVR).Namespace(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
	switch {
	case err == nil:
		return secretFound{exists: true}
	case apierrors.IsNotFound(err):
		return secretFound{}
	case !apierrors.IsForbidden(err):
		return secretFound{err: err}
	}
	own, nerr := client("")
	if nerr == nil {
		_, nerr = own.Resource(namespacesGVR).Get(ctx, l.namespace, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(nerr) {
		return secretFound{}
	}
	return secretFound{err: err}
}
