package render

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"maps"
	"sync"

	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DefaultCacheBytes is a bound for NewCache that holds a repository of about 10,000 gpuctl
// files (bench/README.md, "Render cache", measures what a file costs).
const DefaultCacheBytes = 64 << 20

// Cache remembers the per-file work of renders (the parsed documents of a file, their
// diagnostics and the objects rendered from each gpuctl document), so that a render of a
// revision in which few files changed parses and renders only those. It is safe for
// concurrent use, and renders of different trees may share it.
//
// An entry is keyed by a hash of everything the file's work depends on: its content, its
// path (as displayed and relative to the root) and the configuration (the .gpuctl.yaml in
// effect or Options.Config); a changed configuration therefore re-renders every file. The
// objects of a document are also keyed by the one input that comes from other files (whether
// its namespace is a team's Kueue queue). The checks that span files run on every render,
// and kustomizations are always built again. Entries are evicted least recently used first
// once their approximate size passes the bound.
type Cache struct {
	mu      sync.Mutex
	max     int64
	size    int64
	lru     *list.List // of *cacheEntry, most recently used first
	entries map[cacheKey]*list.Element
	stats   CacheStats
	// intern is the table of the values that rendered objects share (cache_codec.go).
	intern interner
	// render counts the renders begun: an entry used by the newest one is never evicted for
	// another (evict), so that a repository larger than the bound keeps what fits instead of
	// evicting every entry before its next use (a render reads the files in the same order).
	render uint64
}

// CacheStats count what a Cache did.
type CacheStats struct {
	// Hits and Misses count the files looked up.
	Hits, Misses int64
	// Evictions counts the entries dropped for the bound.
	Evictions int64
	// Entries and Bytes are what the cache holds now (Bytes is the approximate size that the
	// bound counts).
	Entries int
	Bytes   int64
}

// NewCache returns a Cache that holds about maxBytes (DefaultCacheBytes when maxBytes ≤ 0).
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{max: maxBytes, lru: list.New(), entries: map[cacheKey]*list.Element{},
		intern: interner{seen: map[uint64]bool{}, index: map[string]int32{}, max: maxBytes / 8}}
}

// Stats returns what the cache did and holds.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Entries, s.Bytes = c.lru.Len(), c.size
	return s
}

type cacheKey [sha256.Size]byte

// entryOverhead is the approximate heap of one parsed gpuctl document per byte of its file
// (yaml nodes are dropped, the typed spec and the field positions stay), measured on the
// files of BenchmarkRender10000FilesEdit.
const entryOverhead = 8

// cacheEntry is the work of one file. Nothing of it is handed out: a render gets copies.
type cacheEntry struct {
	key   cacheKey
	size  int64
	docs  []*Document
	diags []Diagnostic
	// objs are the objects rendered from each document (by its position in docs; made with
	// the first), encoded, for one variant. Slices, not maps: a map of one document took
	// 300 bytes, at 10,000 files 6 MiB of the cache's heap with checks.
	objs []renderedDoc
	// checks are the diagnostics and namespace of each workload document's own checks (by
	// its position in docs), which depend on the file and the configuration alone.
	checks  []checkedDoc
	evicted bool
	used    uint64 // the render that used it last (Cache.render)
	// encoded are the plain manifests of docs (by position; nil for the other documents) in
	// the cache's encoding (compact), whose Manifest is then nil: each render decodes its own.
	encoded [][]byte
}

// renderedDoc is what renderCached gave for a document (none while objs is nil).
type renderedDoc struct {
	renderVariant
	objs [][]byte // encodeObject
	size int64
}

// checkedDoc is what validateWorkload gave for a document (none unless set).
type checkedDoc struct {
	diags     []Diagnostic
	namespace string
	set       bool
}

// validated returns the checks of the entry's document i, when it holds them.
func (c *Cache) validated(e *cacheEntry, i int) ([]Diagnostic, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(e.checks) {
		return nil, "", false
	}
	d := e.checks[i]
	return d.diags, d.namespace, d.set
}

// rememberValidated stores the checks of the entry's document i (copies of diags), counted
// in the bound like the rendered objects (remember): a team's file of many invalid documents
// must not grow the cache past it.
func (c *Cache) rememberValidated(e *cacheEntry, i int, diags []*Diagnostic, namespace string) {
	d := checkedDoc{namespace: namespace, set: true}
	n := int64(64 + len(namespace))
	for _, x := range diags {
		d.diags = append(d.diags, *x)
		n += int64(96 + len(x.File) + len(x.Field) + len(x.Message) + len(x.Hint))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if (i < len(e.checks) && e.checks[i].set) || e.evicted {
		return // the same file and configuration: the same checks
	}
	if e.checks == nil {
		e.checks = make([]checkedDoc, len(e.docs))
	}
	e.checks[i] = d
	e.size += n
	c.size += n
	if !c.evict() { // no room without evicting what this render uses: not kept
		e.checks[i] = checkedDoc{}
		e.size -= n
		c.size -= n
	}
}

// renderVariant is what a document's objects depend on beyond its file and the
// configuration: whether it is queued (a team's quota is in another file) and the tenant
// namespace it is marked for ("" for none, or when it is built by kustomize).
type renderVariant struct {
	queued bool
	tenant string
}

// configDigest is the hash of the configuration that every file's key includes.
func configDigest(cfg *Config) []byte {
	b, err := json.Marshal(cfg)
	if err != nil {
		panic("render: configuration has no JSON form: " + err.Error()) // plain strings and lists
	}
	h := sha256.Sum256(b)
	return h[:]
}

// fileKey is the key of a source file's entry, of content digest sum (its SHA-256).
func (st *run) fileKey(s *source, sum [sha256.Size]byte) cacheKey {
	h := sha256.New()
	h.Write(st.cfgDigest)
	h.Write([]byte(s.display))
	h.Write([]byte{0})
	h.Write([]byte(s.rel))
	h.Write([]byte{0})
	h.Write(sum[:])
	var k cacheKey
	h.Sum(k[:0])
	return k
}

// get returns the entry of key, or nil, and makes it the most recently used.
func (c *Cache) get(key cacheKey) *cacheEntry { return c.lookup(key, true) }

// lookup is get; a miss is counted only when missCounts (a lookup by a known digest is
// followed by one by what is read).
func (c *Cache) lookup(key cacheKey, missCounts bool) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		if missCounts {
			c.stats.Misses++
		}
		return nil
	}
	c.stats.Hits++
	c.lru.MoveToFront(el)
	e := el.Value.(*cacheEntry)
	e.used = c.render
	return e
}

// has tells whether the cache holds an entry of key, without using it.
func (c *Cache) has(key cacheKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}

// beginRender starts a render: the entries it uses are kept from then on (evict).
func (c *Cache) beginRender() {
	c.mu.Lock()
	c.render++
	c.mu.Unlock()
}

// endRender ends a render: the hashes of the values it met once are forgotten (in a new map:
// clear keeps a map's memory). A value is shared when a render meets it twice, as the first
// render of a tree fills the cache; kept between renders, the hashes of every value of 10,000
// manifests met once held ~2 MB of a daemon's heap between its syncs (issue #18, bar 6) for
// the rare value that a later edit copies. A render that overlaps another may share less.
func (c *Cache) endRender() {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := seenBytes * int64(len(c.intern.seen))
	c.intern.bytes -= n
	c.size -= n // the size counts the interner's bytes
	c.intern.seen = map[uint64]bool{}
}

// put adds an entry (unless one of its key is already there) and returns the one kept.
func (c *Cache) put(e *cacheEntry) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[e.key]; ok {
		return el.Value.(*cacheEntry)
	}
	e.used = c.render
	c.entries[e.key] = c.lru.PushFront(e)
	c.size += e.size
	if !c.evict() { // full of what this render uses: e is not kept (its render still uses it)
		c.drop(c.entries[e.key])
	}
	return e
}

// evict drops the least recently used entries until the cache is within its bound, and says
// whether it is. It stops at an entry that the render in progress has used: a repository
// larger than the bound then keeps the files that fit, render after render, instead of
// evicting each file before its next use. The newest entry stays even when it alone is larger.
func (c *Cache) evict() bool {
	for c.size > c.max && c.lru.Len() > 1 {
		el := c.lru.Back()
		if el.Value.(*cacheEntry).used == c.render {
			return false
		}
		c.drop(el)
	}
	return true
}

// drop removes an entry.
func (c *Cache) drop(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.size -= e.size
	e.evicted = true
	c.stats.Evictions++
}

// newEntry parses a file for the cache.
func newEntry(key cacheKey, name string, data []byte) *cacheEntry {
	ds := &diagnostics{}
	e := &cacheEntry{key: key, docs: parseFile(name, data, ds), size: int64(len(name)+len(data))*entryOverhead + 256}
	for _, d := range ds.list {
		e.diags = append(e.diags, *d)
	}
	return e
}

// lazyPositions drops the field positions of a new entry's gpuctl documents, which find them
// again from the file when asked (lazyFields): called once the render that parsed it has its
// copies, before the entry is shared. A file that holds a plain manifest keeps them (a
// manifest's positions take less than its file: ~1.1 KB a Job).
func (e *cacheEntry) lazyPositions(name string, data []byte) {
	for _, d := range e.docs {
		if d.Kind == KindManifest || d.pos != nil {
			return
		}
	}
	lazy := &lazyFields{name: name, data: bytes.Clone(data)}
	for i, d := range e.docs {
		kept := *d // the render's copies share d
		kept.fields, kept.lazy = nil, lazy
		e.docs[i] = &kept
	}
}

// compact encodes the plain manifests of a new entry, sharing with the manifests and objects
// the cache holds the values below their top level and outside their metadata that are equal
// (cache_codec.go's interner): at 10,000 Job manifests their resources, limits and requests.
// The entry keeps the encodings, not the parsed maps (Cache.handOut decodes them); an entry of
// manifests alone counts in the bound what it holds, not entryOverhead times its file (a
// quarter of it: the default bound holds ~58,000 Job manifests instead of ~14,000). It returns e.
func (c *Cache) compact(e *cacheEntry) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.intern.bytes
	held := int64(entryBytes)
	for i, d := range e.docs {
		if d.Manifest == nil {
			held = -1 // a gpuctl document: the estimate stays
			continue
		}
		b, ok := encodeObject(nil, d.Manifest, &c.intern)
		if !ok {
			held = -1
			continue
		}
		if e.encoded == nil {
			e.encoded = make([][]byte, len(e.docs))
		}
		e.encoded[i] = b
		kept := *d
		kept.Manifest = nil
		e.docs[i] = &kept
		if held >= 0 {
			held += int64(cap(b)) + manifestDocBytes + int64(len(d.File)+len(d.Kind))
		}
	}
	if held >= 0 && len(e.diags) == 0 {
		e.size = held
	}
	c.size += c.intern.bytes - before
	return e
}

// entryBytes is the heap of an entry without its documents (the entry, its element of the LRU
// list and of the map); manifestDocBytes that of a manifest's Document without its encoding
// (the struct and its map of field positions), measured by TestCacheCountsWhatItHolds.
const (
	entryBytes       = 256
	manifestDocBytes = 320
)

// handOut is the entry's handOut with its plain manifests decoded for the render, as its own.
// Decoding a manifest makes about twice the maps of copying the top of a decoded one, as the
// cache held them until issue #18 (bar 6): a render of an edit among 10,000 manifests takes
// ~10 ms more, and the daemon keeps 28 MiB less between syncs (40 MiB live instead of 68).
func (c *Cache) handOut(e *cacheEntry, ds *diagnostics) []*Document {
	docs := e.handOut(ds)
	if e.encoded == nil {
		return docs
	}
	c.mu.Lock()
	table := c.intern.table // it only grows: the encodings refer to what it held then
	c.mu.Unlock()
	for i, b := range e.encoded {
		if b != nil {
			docs[i].Manifest = decodeObject(b, table)
		}
	}
	return docs
}

// handOut gives a render its own copy of the entry's documents and diagnostics: a render
// sets Namespace on documents. The typed specs (Workload, Pool, Quota) and field positions
// are only read after parsing, and are shared (each render copied the specs' structs: ~7 MB
// a render of 10,000 training files, issue #18, bar 6; TestCachedManifestsAreNotWritten
// holds that nothing writes them). A plain manifest that the cache could not encode
// (Cache.handOut decodes the others) is shared too, but for its metadata (sharedManifest).
func (e *cacheEntry) handOut(ds *diagnostics) []*Document {
	for i := range e.diags {
		d := e.diags[i]
		ds.add(&d)
	}
	if e.docs == nil {
		return nil
	}
	docs := make([]*Document, len(e.docs))
	for i, d := range e.docs {
		c := *d
		if d.Manifest != nil {
			c.Manifest = sharedManifest(d.Manifest)
		}
		docs[i] = &c
	}
	return docs
}

// sharedManifest returns a manifest whose top-level map, metadata map and labels and
// annotations maps are its own and whose other values are m's: the cache's, shared by every
// render that hands the file out and by what they render (the engine's plan and apply, the
// drift detector), as a decoded manifest shares the values of the interner's table.
// Everything that writes into a rendered object writes those maps (the namespace, labels,
// annotations) and nothing else, but for Jobs queued for Kueue, which suspendQueuedJobs
// copies before it writes them (ownMap). TestCachedManifestsAreNotWritten holds this.
func sharedManifest(m map[string]any) map[string]any {
	out := maps.Clone(m)
	if md, ok := m["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		for _, k := range []string{"labels", "annotations"} {
			if sub, ok := md[k].(map[string]any); ok {
				md[k] = maps.Clone(sub)
			}
		}
		out["metadata"] = md
	}
	return out
}

// ownMap makes the map at path in obj obj's own: each map along the path is replaced by a
// copy of it (a shallow one), created when missing, so that writing into the map returned
// writes into no manifest of the cache (sharedManifest). It returns false, and changes
// nothing, when a value along the path is not a map, as unstructured.SetNestedField then
// refuses to set a field.
func ownMap(obj map[string]any, path ...string) (map[string]any, bool) {
	m := obj
	for _, k := range path {
		v, there := m[k]
		next, isMap := v.(map[string]any)
		if there && !isMap {
			return nil, false
		}
		next = maps.Clone(next)
		if next == nil {
			next = map[string]any{}
		}
		m[k] = next
		m = next
	}
	return m, true
}

// rendered returns the objects of the entry's document i rendered as v, or nil. With heads,
// each object is its head alone where it has a body (Options.Deferred), whose encoding is then
// encs[j] (nil for an object decoded whole).
func (c *Cache) rendered(e *cacheEntry, i int, v renderVariant, heads bool) (out []*unstructured.Unstructured, encs [][]byte) {
	c.mu.Lock()
	var r renderedDoc
	if i < len(e.objs) {
		r = e.objs[i]
	}
	table := c.intern.table
	c.mu.Unlock()
	if r.objs == nil || r.renderVariant != v {
		return nil, nil
	}
	out = make([]*unstructured.Unstructured, len(r.objs))
	if heads {
		encs = make([][]byte, len(r.objs))
	}
	for j, b := range r.objs {
		if !heads {
			out[j] = &unstructured.Unstructured{Object: decodeObject(b, table)}
			continue
		}
		head, body := decodeHead(b, table)
		out[j] = &unstructured.Unstructured{Object: head}
		if !body {
			continue
		}
		if kind, _ := head["kind"].(string); !podCreating(kind) {
			decodeBody(b, table, head) // only workloads are deferred: the checks read the others' bodies
			continue
		}
		encs[j] = b
	}
	return out, encs
}

// podCreating reports whether kind creates pods (a workload, whose body a deferred render
// leaves encoded).
func podCreating(kind string) bool {
	_, ok := object.PodTemplatePath(kind)
	return ok
}

// table returns the table of shared values as it is now (it only grows: an encoding made
// before decodes with it).
func (c *Cache) table() []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.intern.table
}

// remember stores the objects rendered from the entry's document i.
func (c *Cache) remember(e *cacheEntry, i int, v renderVariant, objs []*unstructured.Unstructured) {
	r := renderedDoc{renderVariant: v, objs: make([][]byte, len(objs))}
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.intern.bytes
	ok := true
	for j, o := range objs {
		var b []byte
		if b, ok = encodeObject(nil, o.Object, &c.intern); !ok {
			break
		}
		r.objs[j] = b
		r.size += int64(cap(b)) + 64
	}
	c.size += c.intern.bytes - before // the table stays: it counts in the bound, but is not evicted
	if !ok {
		return
	}
	n := r.size
	if e.evicted {
		return
	}
	if e.objs == nil {
		e.objs = make([]renderedDoc, len(e.docs))
	}
	old := e.objs[i]
	n -= old.size
	e.objs[i] = r
	e.size += n
	c.size += n
	if !c.evict() { // no room without evicting what this render uses: the objects are not kept
		e.objs[i] = old
		e.size -= n
		c.size -= n
	}
}
