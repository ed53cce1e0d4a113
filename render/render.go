package render

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpuctl/gpuctl/internal/cores"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/memfs"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/secrets/sops"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Options configure a Renderer.
type Options struct {
	// Config replaces the .gpuctl.yaml that is otherwise looked up from the rendered path
	// upwards (to the first directory holding .git).
	Config *Config
	// Root is the directory that namespace rules and source annotations are relative to when
	// Config is given (the directory of the configuration file); default: the rendered path.
	Root string
	// Cache, when set, keeps the per-file work of renders for the next ones (see Cache);
	// nil renders every file every time.
	Cache *Cache
	// Digest, when set with Cache, gives the SHA-256 of a file's content (by absolute path)
	// as the caller already read it (a source that hashed the revision's files): a file whose
	// entry the cache holds is then not read again. A file it does not know, or whose entry
	// is missing, is read (and keyed by what was read).
	Digest func(abs string) (sum [sha256.Size]byte, ok bool)
	// Deferred, with Cache, hands out the objects that the cache holds as heads (apiVersion,
	// kind and metadata), their bodies left encoded in Result.Bodies until a reader
	// materializes them: for a caller that reads the body of few objects (the daemon's sync,
	// whose engine needs the applied-hash of each and the body of those it writes).
	Deferred bool
	// Hold confines the errors of a tenant directory to its namespace (see HeldScope): when
	// every error lies in tenant directories, the render leaves those namespaces' files out
	// and succeeds with the rest, listing them in Result.Held. For the daemon, whose other
	// teams' changes must not wait for one team's typo.
	Hold bool
	// Decryptor decrypts the SOPS-encrypted files (Decryptor). Without one, such a file renders
	// as what it declares without its values, marked keys.Encrypted (the engine leaves it as it
	// is), with a warning.
	Decryptor *Decryptor
	// Cluster names the cluster the render is for (a DNS label): the shared files and those of
	// clusters/<Cluster>/, not the other clusters' directories (cluster_dirs.go). Empty: none of
	// clusters/ is read, with a warning, unless the rendered path lies in clusters/<name>/.
	Cluster string
}

// Renderer turns a tree of gpuctl files into Kubernetes objects. It is a pure function of the
// files: the same input gives byte-identical output.
type Renderer struct {
	opts Options
}

// New returns a Renderer.
func New(opts Options) *Renderer { return &Renderer{opts: opts} }

// Result is what a render produced.
type Result struct {
	// Objects are the rendered objects (plain manifests share their maps with Documents), in apply order (Namespaces, PriorityClasses, quotas,
	// Node label intents, configuration, Services, workloads), then by namespace and name.
	Objects []*unstructured.Unstructured
	// Documents are every parsed document, valid or not.
	Documents []*Document
	// Diagnostics are every error and warning, in file and line order.
	Diagnostics []*Diagnostic
	// Files are the source files read, as displayed in diagnostics.
	Files []string
	// Root is the directory that source annotations and namespace rules are relative to.
	Root string
	// Consistent is true when Options.Digest was given and the render read nothing that it
	// does not give: every file read, by the render or by kustomize, had the content whose
	// digest it gives (none changed since the caller hashed it). The objects are then those
	// of the files as the caller hashed them.
	Consistent bool
	// Bodies are the bodies of the objects handed out as heads (Options.Deferred), nil
	// without; an object that it does not hold is whole.
	Bodies *Bodies
	// Held are the tenant namespaces whose files had errors and were left out (Options.Hold),
	// in order; none without errors.
	Held []HeldScope
	// MultiKueueWorker: the configuration lists Options.Cluster as a MultiKueue worker, the
	// only cluster where MultiKueue's labels are believed (keys.MultiKueueCopy).
	MultiKueueWorker bool
}

// Warnings returns the diagnostics that do not fail validation.
func (r *Result) Warnings() []*Diagnostic { _, w := split(r.Diagnostics); return w }

// Errors returns the diagnostics that fail validation.
func (r *Result) Errors() []*Diagnostic { e, _ := split(r.Diagnostics); return e }

// source is one file to render.
type source struct {
	display string // as the user named it
	rel     string // relative to the repository root, slash-separated
	abs     string
	docs    []*Document
	kustom  bool // below a kustomization directory: built by kustomize, not on its own
	// input: a kustomization names the file as a patch, generator file, configuration or
	// plugin configuration, and not as a resource: kustomize reads it, the renderer does not.
	input bool
	// entry is the file's work in Options.Cache, or nil.
	entry *cacheEntry
	// size is the file's size, -1 when the walk did not ask (checkSizes); key its entry's
	// key in Options.Cache by its digest (Options.Digest), when checkSizes made it.
	size int64
	key  *cacheKey
	// sealed: an encrypted file rendered without its key, whose objects render marks
	// keys.Encrypted (decryptSource).
	sealed bool
}

// run is the state of one Render call.
type run struct {
	fsys    filesys.FileSystem
	cfg     *Config
	repo    string // absolute repository root
	ds      *diagnostics
	sources []*source
	byAbs   map[string]*source
	kdirs   []string // absolute kustomization directories
	objSrc  map[object.Ref]objectSource
	argDir  string // the rendered directory as the user named it
	argAbs  string // and its absolute path
	// tenants are the namespaces of tenant directories (mapped by .gpuctl.yaml) that hold
	// at least one document: their identity (ServiceAccount, RoleBinding) and admission
	// policy are rendered for them.
	tenants map[string]bool
	// teams are the users of the quota documents (team namespaces), each with its document.
	teams map[string]*Document
	// ctx ends the render early: it is checked between files and between kustomizations.
	ctx context.Context
	// busy is what the render is doing now (several files are read at once), for the error
	// of a render that runs out of time.
	busy   map[string]int
	busyMu sync.Mutex

	// kinputs and kresources are the absolute paths of files that kustomizations name as
	// their inputs (patches, generator files, ...) and as resources.
	kinputs, kresources map[string]bool

	// deferred is Options.Deferred with a cache; bodies what build handed out as heads.
	deferred bool
	bodies   *Bodies
	// held are the tenant namespaces whose files this render leaves out (Options.Hold).
	held map[string]bool
	// decryptor is Options.Decryptor, and decryptRender this render's number in it.
	decryptor     *Decryptor
	decryptRender uint64
	// cache is Options.Cache, and cfgDigest the hash of cfg that its keys include.
	cache     *Cache
	cfgDigest []byte
	digest    func(abs string) ([sha256.Size]byte, bool) // Options.Digest
	// unverified: a file was read whose content Options.Digest does not give (Result.Consistent).
	unverified atomic.Bool
	// base is the filesystem given (fsys may be verifiedFS over it); disk: it is this
	// machine's (onDisk).
	base filesys.FileSystem
	disk bool
	// namespaces memoizes cfg.NamespaceFor by directory (namespaceFor).
	namespaces   map[string]mappedNamespace
	namespacesMu sync.Mutex
	// cluster is the cluster the render is for (clusterScope), "" for none.
	cluster string
}

// mappedNamespace is what Config.NamespaceFor says of a directory.
type mappedNamespace struct {
	ns     string
	mapped bool
}

// namespaceFor is st.cfg.NamespaceFor, asked once per directory: a render asks it of every
// file, several times, and a tree of 10,000 files has a few hundred directories.
func (st *run) namespaceFor(dir string) (string, bool) {
	st.namespacesMu.Lock()
	defer st.namespacesMu.Unlock()
	m, ok := st.namespaces[dir]
	if !ok {
		if st.namespaces == nil {
			st.namespaces = map[string]mappedNamespace{}
		}
		inner, _ := st.clusterRel(dir) // below clusters/NAME/, the rules match as at the root
		m.ns, m.mapped = st.cfg.NamespaceFor(inner)
		st.namespaces[dir] = m
	}
	return m.ns, m.mapped
}

// verifiedFS is the filesystem of a render given Options.Digest: every file read through it
// (by the render, and by kustomize) is checked against the digest the caller gives for it, for
// Result.Consistent. A file opened rather than read is not checked, and makes the result
// inconsistent.
type verifiedFS struct {
	filesys.FileSystem
	st *run
}

// ReadFile reads p and checks what it read.
func (f verifiedFS) ReadFile(p string) ([]byte, error) {
	data, err := f.FileSystem.ReadFile(p)
	if err == nil {
		if abs, aerr := filepath.Abs(p); aerr != nil {
			f.st.unverified.Store(true)
		} else {
			f.st.verify(abs, sha256.Sum256(data))
		}
	}
	return data, err
}

// verify notes that the file at abs was read with content sum: Result.Consistent when every
// such content is the one Options.Digest gives.
func (st *run) verify(abs string, sum [sha256.Size]byte) {
	if want, ok := st.digest(abs); !ok || want != sum {
		st.unverified.Store(true)
	}
}

// Open opens p, which then goes unchecked.
func (f verifiedFS) Open(p string) (filesys.File, error) {
	f.st.unverified.Store(true)
	return f.FileSystem.Open(p)
}

// doing records that the render does something until the returned function is called.
func (st *run) doing(format string, args ...any) (done func()) {
	s := fmt.Sprintf(format, args...)
	st.busyMu.Lock()
	st.busy[s]++
	st.busyMu.Unlock()
	return func() {
		st.busyMu.Lock()
		if st.busy[s]--; st.busy[s] <= 0 {
			delete(st.busy, s)
		}
		st.busyMu.Unlock()
	}
}

// busyWith says what the render is doing now.
func (st *run) busyWith() string {
	st.busyMu.Lock()
	defer st.busyMu.Unlock()
	if len(st.busy) == 0 {
		return "between steps"
	}
	list := make([]string, 0, len(st.busy))
	for s := range st.busy {
		list = append(list, s)
	}
	sort.Strings(list)
	return strings.Join(list, ", ")
}

// stopped reports whether the render's context has ended.
func (st *run) stopped() bool { return st.ctx.Err() != nil }

// Render is RenderContext without a deadline.
func (r *Renderer) Render(fsys filesys.FileSystem, path string) (*Result, error) {
	return r.RenderContext(context.Background(), fsys, path)
}

// RenderContext reads every gpuctl file and Kubernetes manifest below path (a directory or a
// file) and renders them. On any error it returns a *ValidationError with every error of every
// file, and no objects; warnings never fail. When ctx ends first, it returns at once with an
// error that wraps ctx's error and says what the render was doing (reading a file, building a
// kustomization); the abandoned work stops at its next file or kustomization.
func (r *Renderer) RenderContext(ctx context.Context, fsys filesys.FileSystem, path string) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("render %s: %w", path, context.Cause(ctx))
	}
	st := r.newRun(ctx, fsys)
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		if r.opts.Hold {
			o.res, o.err = r.renderHolding(ctx, fsys, path, st)
		} else {
			o.res, o.err = r.render(st, path)
		}
		done <- o
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		return nil, fmt.Errorf("render %s: stopped while %s: %w", path, st.busyWith(), context.Cause(ctx))
	}
}

// newRun is the state of a new render of fsys.
func (r *Renderer) newRun(ctx context.Context, fsys filesys.FileSystem) *run {
	st := &run{fsys: fsys, ds: &diagnostics{}, byAbs: map[string]*source{},
		tenants: map[string]bool{}, ctx: ctx, busy: map[string]int{}, kinputs: map[string]bool{}, kresources: map[string]bool{},
		cache: r.opts.Cache, digest: r.opts.Digest, deferred: r.opts.Deferred && r.opts.Cache != nil, decryptor: r.opts.Decryptor}
	st.base, st.disk = fsys, reflect.TypeOf(fsys) == diskFS
	if st.digest != nil {
		st.fsys = verifiedFS{FileSystem: fsys, st: st}
	}
	return st
}

// render does the work of RenderContext.
func (r *Renderer) render(st *run, path string) (*Result, error) {
	fsys := st.fsys
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if !fsys.Exists(abs) {
		return nil, fmt.Errorf("%s: %w", path, os.ErrNotExist)
	}
	st.argDir, st.argAbs = path, abs
	if !fsys.IsDir(abs) {
		st.argDir, st.argAbs = filepath.Dir(path), filepath.Dir(abs)
	}
	st.loadConfig(r.opts.Config, abs)
	if r.opts.Config != nil && r.opts.Root != "" {
		if st.repo, err = filepath.Abs(r.opts.Root); err != nil {
			return nil, err
		}
	}
	if err := st.clusterScope(r.opts.Cluster); err != nil {
		return nil, err
	}
	if st.cache != nil {
		st.cfgDigest = configDigest(st.cfg)
		st.cache.beginRender()
		defer st.cache.endRender()
	}
	if st.decryptor != nil {
		st.decryptRender = st.decryptor.beginRender()
		defer st.decryptor.endRender(st.decryptRender)
	}
	st.keepHeldTenants()
	if err := st.collect(path, abs); err != nil {
		return nil, err
	}
	st.checkKustomizations() // first: it finds the files that are kustomize's inputs
	st.parseAll()
	st.validateAll()
	if err := st.ctx.Err(); err != nil {
		return nil, err
	}
	res := &Result{Root: st.repo, MultiKueueWorker: st.cfg.IsWorker(cmp.Or(st.cluster, r.opts.Cluster))}
	defer func() { res.Consistent = st.digest != nil && !st.unverified.Load() }()
	for _, s := range st.sources {
		res.Files = append(res.Files, s.display)
		res.Documents = append(res.Documents, s.docs...)
	}
	if !st.ds.hasErrors() {
		res.Objects, res.Bodies = st.build(), st.bodies
	}
	if err := st.ctx.Err(); err != nil {
		return nil, err
	}
	res.Diagnostics = st.ds.sorted()
	errs, _ := split(res.Diagnostics)
	if len(errs) > 0 {
		res.Objects, res.Bodies = nil, nil
		return res, newValidationError(errs)
	}
	return res, nil
}

// loadConfig uses the given config, or finds .gpuctl.yaml from abs upwards.
func (st *run) loadConfig(given *Config, abs string) {
	dir := abs
	if !st.fsys.IsDir(dir) {
		dir = filepath.Dir(dir)
	}
	st.repo, st.cfg = dir, given
	if given != nil {
		return
	}
	for d := dir; ; d = filepath.Dir(d) {
		if f := filepath.Join(d, keys.ConfigFile); st.fsys.Exists(f) {
			if outer := st.outerConfig(d); outer != "" {
				d, f = filepath.Dir(outer), outer
			}
			st.repo = d
			done := st.doing("reading %s", f)
			st.cfg = st.readConfig(f)
			done()
			return
		}
		if st.atTop(d) {
			return
		}
	}
}

// atTop reports whether the lookup of the configuration stops at d: a directory holding
// .git, or the filesystem's root.
func (st *run) atTop(d string) bool {
	return st.fsys.Exists(filepath.Join(d, ".git")) || filepath.Dir(d) == d
}

// outerConfig returns the configuration file of a directory above dir that maps dir to a
// namespace, or holds dir in its clusters/, or "": a .gpuctl.yaml in a tenant directory is the
// tenant's file, and one below clusters/ is nobody's; neither configures a render, even of
// that directory alone (they are errors, see collect).
func (st *run) outerConfig(dir string) string {
	for d := dir; !st.atTop(d); {
		d = filepath.Dir(d)
		f := filepath.Join(d, keys.ConfigFile)
		if !st.fsys.Exists(f) {
			continue
		}
		data, err := st.fsys.ReadFile(f)
		if err != nil || len(data) > MaxFileSize {
			return "" // reported when it is read for its own directory
		}
		rel := filepath.ToSlash(relTo(d, dir))
		if inClustersDir(rel) {
			return f // one configuration serves every cluster: a .gpuctl.yaml below clusters/ is an error
		}
		cfg, _ := ParseConfig(f, data)
		if _, ok := cfg.NamespaceFor(rel); ok {
			return f
		}
		return ""
	}
	return ""
}

// adminFile is the error on an admin's file (.gpuctl.yaml, gpuctl-policy.yaml) found in a
// tenant directory, where the tenant wrote it; "" when rel (relative to the root) is not one.
func (st *run) adminFile(rel string) string {
	name := path.Base(rel)
	if (name != keys.ConfigFile && name != PolicyFileName) || path.Dir(rel) == "." {
		return ""
	}
	if _, ok := st.namespaceFor(path.Dir(rel)); !ok {
		return ""
	}
	return tenancyProblem(ruleAdminFile, "%s is the admin's file and a tenant directory (%s/) may not hold one; it is not read", name, path.Dir(rel))
}

// PolicyFileName is the review policy file (gpuctl-policy.yaml), which render never reads.
const PolicyFileName = "gpuctl-policy.yaml"

// isSourceFile reports whether a file name is read as gpuctl or Kubernetes YAML.
func isSourceFile(name string) bool {
	if strings.HasPrefix(name, ".") || isKustomization(name) || name == PolicyFileName {
		return false
	}
	ext := filepath.Ext(name)
	return ext == ".yaml" || ext == ".yml"
}

func isKustomization(name string) bool {
	return name == "kustomization.yaml" || name == "kustomization.yml" || name == "Kustomization"
}

// collect lists the source files and kustomization directories below path.
func (st *run) collect(path, abs string) error {
	defer st.doing("listing the files of %s", path)()
	err := st.walk(path, func(p string, d fs.DirEntry, err error) error {
		if st.stopped() {
			return st.ctx.Err()
		}
		if err != nil {
			st.ds.errorf(p, Pos{}, "", "cannot read: %v", err)
			return nil
		}
		name := d.Name()
		pAbs := below(abs, path, p)
		if d.IsDir() {
			if p != path && strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			if st.skipClusterDir(filepath.ToSlash(relTo(st.repo, pAbs)), p) {
				return filepath.SkipDir
			}
			if st.heldFile(filepath.ToSlash(filepath.Join(relTo(st.repo, pAbs), "kustomization.yaml"))) {
				return nil // its files are held, and so is its kustomization
			}
			for _, k := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
				if st.fsys.Exists(filepath.Join(pAbs, k)) {
					st.kdirs = append(st.kdirs, pAbs)
					break
				}
			}
			return nil
		}
		rel := filepath.ToSlash(relTo(st.repo, pAbs))
		if st.heldFile(rel) {
			return nil
		}
		if msg := st.adminFile(rel); msg != "" {
			st.ds.errorf(p, Pos{}, "", "%s", msg)
			return nil
		}
		if msg := st.clusterFileProblem(rel); msg != "" {
			st.ds.errorf(p, Pos{}, "", "%s", msg)
			return nil
		}
		if p != path && !isSourceFile(name) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			st.ds.warnf(p, Pos{}, "", "symbolic link skipped")
			return nil
		}
		if !d.Type().IsRegular() {
			st.ds.errorf(p, Pos{}, "", "not a regular file (a device, pipe or socket); only files are read")
			return nil
		}
		s := &source{display: p, abs: pAbs, rel: rel, size: -1}
		if !st.disk { // the entry holds the walk's stat
			if info, err := d.Info(); err == nil {
				s.size = info.Size()
			}
		}
		st.sources = append(st.sources, s)
		st.byAbs[pAbs] = s
		return nil
	})
	if err != nil {
		return err
	}
	st.checkSizes()
	return nil
}

// diskFS is the type of kyaml's filesystem of this machine (filesys.MakeFsOnDisk).
var diskFS = reflect.TypeOf(filesys.MakeFsOnDisk())

// walk is the filesystem's Walk, with directory entries: on this machine's filesystem it is
// filepath.WalkDir, which reads the type of each file from its directory instead of a stat of
// each (most of the time of listing 10,000 files).
func (st *run) walk(root string, fn fs.WalkDirFunc) error {
	if st.disk {
		return filepath.WalkDir(root, fn)
	}
	return st.fsys.Walk(root, func(p string, info os.FileInfo, err error) error {
		var d fs.DirEntry
		if info != nil {
			d = fs.FileInfoToDirEntry(info)
		}
		return fn(p, d, err)
	})
}

// checkSizes refuses the files larger than MaxFileSize, which are not read. The size of a file
// that the walk did not stat (on disk) is asked on every core, but for a file whose content
// the cache knows from its digest (Options.Digest): the cache holds only files read within
// the bound.
func (st *run) checkSizes() {
	cores.Each(len(st.sources), func(i int) {
		s := st.sources[i]
		if s.size >= 0 || st.stopped() {
			return
		}
		if st.cache != nil && st.digest != nil {
			if sum, ok := st.digest(s.abs); ok {
				k := st.fileKey(s, sum)
				if s.key = &k; st.cache.has(k) {
					return
				}
			}
		}
		if fi, err := os.Lstat(s.abs); err == nil {
			s.size = fi.Size() // else the read fails, and says why
		}
	})
	kept := st.sources[:0]
	for _, s := range st.sources {
		if tooLarge(st.ds, s.display, s.size) {
			delete(st.byAbs, s.abs)
			continue
		}
		kept = append(kept, s)
	}
	st.sources = kept
}

// tooLarge reports a file of size bytes that is larger than MaxFileSize (it is not read).
func tooLarge(ds *diagnostics, display string, size int64) bool {
	if size <= MaxFileSize {
		return false
	}
	ds.errorf(display, Pos{}, "", "file is too large (%s, the limit is %s)", humanBytes(int(size)), humanBytes(MaxFileSize))
	return true
}

// below is the absolute path of p, a path that a walk of path found, where path is abs:
// filepath.Join(abs, relTo(path, p)) without its two walks of both paths.
func below(abs, path, p string) string {
	if rest, ok := strings.CutPrefix(p, path); ok && strings.HasPrefix(rest, string(filepath.Separator)) && !strings.HasSuffix(path, string(filepath.Separator)) {
		return abs + rest
	}
	return filepath.Join(abs, relTo(path, p))
}

func relTo(base, p string) string {
	if rest, ok := strings.CutPrefix(p, base); ok && len(rest) > 1 && rest[0] == filepath.Separator && filepath.IsAbs(base) && filepath.Clean(p) == p && filepath.Clean(base) == base {
		return rest[1:] // p below base, both clean: what Rel gives
	}
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return rel
}

// parseAll reads and parses every source file, one per core at a time; diagnostics are
// collected per file and merged in file order, so the result does not depend on timing.
func (st *run) parseAll() {
	per := make([]diagnostics, len(st.sources))
	cores.Each(len(st.sources), func(i int) {
		s := st.sources[i]
		if st.stopped() {
			return
		}
		for _, k := range st.kdirs {
			if s.abs == k || strings.HasPrefix(s.abs, k+string(filepath.Separator)) {
				s.kustom = true
			}
		}
		if s.input = st.kinputs[s.abs] && !st.kresources[s.abs]; s.input {
			return
		}
		if st.cache != nil && st.digest != nil {
			if s.key == nil {
				if sum, ok := st.digest(s.abs); ok {
					k := st.fileKey(s, sum)
					s.key = &k
				}
			}
			if s.key != nil {
				if s.entry = st.cache.lookup(*s.key, false); s.entry != nil {
					s.docs = st.cache.handOut(s.entry, &per[i])
					return
				}
			}
		}
		// Only a file read is marked: a render that runs out of time names the files it waits
		// for (a slow disk, a pipe); the cache's entries are handed out at memory speed.
		defer st.doing("reading %s", s.display)()
		if s.size < 0 && st.disk { // its entry was evicted since checkSizes
			if fi, err := os.Lstat(s.abs); err == nil && tooLarge(&per[i], s.display, fi.Size()) {
				return
			}
		}
		data, err := st.base.ReadFile(s.abs) // hashed below, and checked with that hash
		if err != nil {
			per[i].errorf(s.display, Pos{}, "", "cannot read: %v", err)
			return
		}
		sum := sha256.Sum256(data)
		if st.digest != nil {
			st.verify(s.abs, sum)
		}
		if sops.IsEncrypted(data) { // never in the cache: its plaintext is not kept there
			s.docs = st.decryptSource(s, sum, data, &per[i])
			return
		}
		if st.cache == nil {
			s.docs = parseFile(s.display, data, &per[i])
			return
		}
		key := st.fileKey(s, sum)
		if s.entry = st.cache.get(key); s.entry != nil {
			s.docs = st.cache.handOut(s.entry, &per[i])
			return
		}
		e := st.cache.compact(newEntry(key, s.display, data))
		s.docs = st.cache.handOut(e, &per[i]) // with the positions: this render's checks read them
		e.lazyPositions(s.display, data)
		s.entry = st.cache.put(e)
	})
	for i := range per {
		st.ds.list = append(st.ds.list, per[i].list...)
	}
}

// toUnstructured converts a typed object and drops the fields that a render never sets.
//
// It goes through JSON, as the API server would read it (integers stay int64): the reflective
// converter (runtime.DefaultUnstructuredConverter) gives the same values, but makes each map as
// large as its struct's fields — a rendered training Job took 16.8 KB and 35 µs, 12.7 KB and
// 29 µs this way (the golden renders of every seed, case and example are the same either way).
func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("render: convert %T: %v", obj, err)) // typed objects always convert
	}
	var m map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
		panic(fmt.Sprintf("render: convert %T: %v", obj, err))
	}
	delete(m, "status")
	dropNulls(m)
	return &unstructured.Unstructured{Object: m}
}

// dropNulls removes null values (creationTimestamp: null and the like) in place.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(t)
		case []any:
			for _, item := range t {
				if im, ok := item.(map[string]any); ok {
					dropNulls(im)
				}
			}
		}
	}
}

// kindOrder is the apply order of kinds; unknown kinds go with configuration.
var kindOrder = map[string]int{
	"Namespace": 0, "CustomResourceDefinition": 0, "PriorityClass": 1,
	// The tenant pod policy holds before any tenant object is written.
	"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1, "ResourceQuota": 2, "LimitRange": 2,
	// Kueue (queueing kueue): the flavors and priority classes that the queues name, then the
	// queues, before any workload is created suspended in them.
	"ResourceFlavor": 1, "WorkloadPriorityClass": 1, "ClusterQueue": 2, "LocalQueue": 2,
	// MultiKueue (multiKueue, on the manager): the check that the queues name, and its parameters.
	"MultiKueueCluster": 1, "MultiKueueConfig": 1, "AdmissionCheck": 1,
	"ServiceAccount": 3, "Role": 3, "ClusterRole": 3, "RoleBinding": 3, "ClusterRoleBinding": 3,
	// Pool labels go on nodes before any workload is created, so that the scheduler places
	// the workloads by them.
	"Node":      3,
	"ConfigMap": 4, "Secret": 4, "PersistentVolumeClaim": 4, "Service": 5,
	"Deployment": 6, "StatefulSet": 6, "Job": 6, "DaemonSet": 6,
}

// KindOrder returns the apply stage of a kind: lower stages are applied first.
func KindOrder(kind string) int {
	if o, ok := kindOrder[kind]; ok {
		return o
	}
	return 4
}

func sortObjects(objs []*unstructured.Unstructured) {
	// The keys are read once: reading them from the maps in every comparison was a tenth of
	// a render of 10,000 files. The sort moves 4-byte indices, not the keys (a Ref is four
	// strings): moving 100-byte elements was most of sorting 10,000 objects.
	// The position breaks ties, as a stable sort would, at the cost of an unstable one.
	type keyed struct {
		order int
		ref   object.Ref
	}
	ks := make([]keyed, len(objs))
	idx := make([]int32, len(objs))
	for i, o := range objs {
		ref := object.RefOf(o)
		ks[i], idx[i] = keyed{KindOrder(ref.Kind), ref}, int32(i)
	}
	slices.SortFunc(idx, func(i, j int32) int {
		a, b := &ks[i], &ks[j]
		return cmp.Or(cmp.Compare(a.order, b.order), object.Compare(a.ref, b.ref), cmp.Compare(i, j))
	})
	sorted := make([]*unstructured.Unstructured, len(objs))
	for i, k := range idx {
		sorted[i] = objs[k]
	}
	copy(objs, sorted)
}

// MemFS returns an in-memory filesystem holding files (slash-separated paths relative to
// root → content) below root, e.g. to render a Git revision without a checkout. A file may
// have any name that Git takes (memfs).
func MemFS(root string, files map[string]string) (filesys.FileSystem, error) {
	fs := memfs.New()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := fs.MkdirAll(filepath.Dir(p)); err != nil {
			return nil, err
		}
		if err := fs.WriteFile(p, []byte(content)); err != nil {
			return nil, err
		}
	}
	return fs, nil
}
