package render

import (
	"path"
	"path/filepath"
	"strconv"

	"github.com/gpuctl/gpuctl/internal/cores"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// build renders every valid document; kustomization directories are built by kustomize.
func (st *run) build() []*unstructured.Unstructured {
	docs := 0
	for _, s := range st.sources {
		docs += len(s.docs)
	}
	// Sized for the documents: a map grown one object at a time allocated twice what it held
	// (issue #18: allocations of an edit's sync).
	st.objSrc = make(map[object.Ref]objectSource, docs)
	objs := make([]*unstructured.Unstructured, 0, docs)
	origins := make(map[*unstructured.Unstructured]origin, docs)
	anyWorkload := false
	if st.deferred {
		st.bodies = &Bodies{m: map[*unstructured.Unstructured]*deferredBody{}}
	}
	cached := st.decodeCached()
	for k, s := range st.sources {
		tenantNS := st.tenantOf(s)
		for i, doc := range s.docs {
			anyWorkload = anyWorkload || doc.Workload != nil
			if s.kustom {
				continue
			}
			var rendered []*unstructured.Unstructured
			if cached[k] != nil {
				rendered = cached[k][i].objs
				st.deferBodies(cached[k][i])
			}
			if rendered == nil {
				rendered = st.renderCached(s, i, tenantNS)
			}
			for _, o := range rendered {
				objs = st.add(objs, o, doc.File, doc.Pos)
				origins[o] = origin{s: s, doc: doc}
			}
		}
	}
	var rendered map[string][]byte
	for _, k := range st.topKustomizations() {
		if rendered == nil {
			rendered = st.renderKustomized()
		}
		for _, o := range st.kustomize(k, rendered) {
			objs = st.add(objs, o, relTo(st.repo, k), Pos{})
		}
	}
	if anyWorkload {
		for _, pc := range priorityClasses() {
			objs = st.add(objs, toUnstructured(pc), "", Pos{})
		}
	}
	objs = st.kueueObjects(objs)
	objs = st.multiKueueObjects(objs)
	st.suspendQueuedJobs(objs)
	st.warnUndispatched(objs)
	if !st.ds.hasErrors() { // an error in a tenant's output would also collide with its identity
		configFile := st.displayOf(filepath.Join(st.repo, keys.ConfigFile))
		for _, o := range st.tenantIdentities() {
			objs = st.add(objs, toUnstructured(o), configFile, Pos{})
		}
	}
	objs = st.appendAdmissionPolicy(objs)
	for _, o := range objs {
		if object.KindOf(o) == "Node" {
			continue
		}
		object.SetLabel(o, keys.ManagedBy, keys.ManagedByValue)
	}
	sortObjects(objs)
	st.checkQuotaRequests(objs, origins)
	st.checkSecretKeys(objs, origins)
	return objs
}

// objectSource is the file and line an object was rendered from (line 0: none).
type objectSource struct {
	file string
	line int
}

func (w objectSource) String() string {
	if w.line > 0 {
		return w.file + ":" + strconv.Itoa(w.line)
	}
	return w.file
}

// add appends an object unless another file already rendered the same one.
func (st *run) add(objs []*unstructured.Unstructured, o *unstructured.Unstructured, file string, p Pos) []*unstructured.Unstructured {
	id := object.RefOf(o)
	if first, dup := st.objSrc[id]; dup {
		if _, tenant := st.diagnosticScope(file); !tenant {
			if _, firstTenant := st.diagnosticScope(first.file); firstTenant && first.file != "" {
				// A team's file and an admin's declare one object: the team's file is the one
				// in error, so that the daemon holds that team only (Options.Hold).
				file, p, first = first.file, Pos{Line: first.line}, objectSource{file: file, line: p.Line}
			}
		}
		st.ds.errorf(file, p, "", "%s is rendered twice: also from %s", id, first)
		return objs
	}
	st.objSrc[id] = objectSource{file: file, line: p.Line}
	return append(objs, o)
}

// tenantOf is the namespace of the tenant directory that holds s, or "".
func (st *run) tenantOf(s *source) string {
	if ns, tenant := st.namespaceFor(path.Dir(s.rel)); tenant {
		return ns
	}
	return ""
}

// decodeCached returns the objects of every gpuctl document that the cache holds (by source
// and document; nil where it holds none), decoded on every core: decoding them one after the
// other was most of building a render of 10,000 gpuctl files.
func (st *run) decodeCached() [][]cachedObjects {
	out := make([][]cachedObjects, len(st.sources))
	cores.Each(len(st.sources), func(k int) {
		s := st.sources[k]
		if s.kustom || s.entry == nil {
			return
		}
		tenant := st.tenantOf(s)
		for i, doc := range s.docs {
			if doc.Manifest != nil {
				continue
			}
			if objs, encs := st.cache.rendered(s.entry, i, renderVariant{queued: st.queued(doc), tenant: tenant}, st.deferred); objs != nil {
				if out[k] == nil {
					out[k] = make([]cachedObjects, len(s.docs))
				}
				out[k][i] = cachedObjects{objs, encs}
			}
		}
	})
	return out
}

// cachedObjects are the objects of a document that the cache handed out, and the encodings
// of those it handed out as heads (Options.Deferred; nil for the others).
type cachedObjects struct {
	objs []*unstructured.Unstructured
	encs [][]byte
}

// deferBodies records the bodies of the objects handed out as heads.
func (st *run) deferBodies(c cachedObjects) {
	if c.encs == nil {
		return
	}
	st.bodies.table = st.cache.table() // it only grows: it decodes what was encoded before
	for j, enc := range c.encs {
		if enc != nil {
			st.bodies.m[c.objs[j]] = &deferredBody{enc: enc}
		}
	}
}

// renderCached is renderDoc of document i of s, with tenantRendered when tenant names the
// namespace of a tenant directory, kept in the cache (decodeCached hands out what it holds):
// the objects of a gpuctl document are a function of the file, the configuration and whether
// the document is queued (the teams come from other files). Plain manifests are not cached:
// they are rendered as written, sharing their maps with the document. Objects that break the
// pod policy are not cached, so that every render reports them.
func (st *run) renderCached(s *source, i int, tenant string) []*unstructured.Unstructured {
	doc := s.docs[i]
	v := renderVariant{queued: st.queued(doc), tenant: tenant}
	objs := st.renderDoc(doc, s)
	errs := len(st.ds.list)
	if tenant != "" {
		for _, o := range objs {
			st.tenantRendered(o, doc, tenant)
		}
	}
	if s.entry != nil && doc.Manifest == nil && len(st.ds.list) == errs {
		st.cache.remember(s.entry, i, v, objs)
		// What the cache hands out from now on, handed out at once: its maps are the size of
		// their contents and share what other files' objects hold, where the typed objects'
		// conversion makes a map as large as each struct's fields. At 10,000 training files
		// that was 127 MiB of objects during a first sync, against ~40 (issue #18, bar 6).
		if kept, encs := st.cache.rendered(s.entry, i, v, st.deferred); kept != nil {
			st.deferBodies(cachedObjects{kept, encs})
			return kept
		}
	}
	return objs
}

// renderDoc renders one valid document.
func (st *run) renderDoc(doc *Document, s *source) []*unstructured.Unstructured {
	var typed []runtime.Object
	switch {
	case doc.Workload != nil:
		typed = buildWorkload(workloadInput{Workload: doc.Workload, doc: doc, namespace: doc.Namespace, source: s.rel,
			writable: st.cfg.writableHostPathPrefixes(), queued: st.queued(doc), jobset: st.cfg.multiNode() == MultiNodeJobSet})
	case doc.Pool != nil:
		typed = buildPool(doc.Pool, s.rel, st.cfg.systemNamespace())
	case doc.Quota != nil:
		typed = buildQuota(doc.Quota, s.rel, doc.Has, !st.cfg.Kueue())
	case doc.Manifest != nil:
		// The object shares its maps with the document: a plain manifest is rendered as it is
		// written, and copying every manifest would double the memory of large trees.
		u := &unstructured.Unstructured{Object: doc.Manifest}
		object.SetAnnotation(u, keys.Source, s.rel)
		return []*unstructured.Unstructured{u}
	}
	out := make([]*unstructured.Unstructured, len(typed))
	for i, t := range typed {
		out[i] = toUnstructured(t)
	}
	return out
}
