package render_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"github.com/gpuctl/gpuctl/test/clusterfixture"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// rendering is what a render gave, in comparable form.
type rendering struct {
	yaml    string
	diags   []string
	objects []map[string]any
	docs    int
	// deferred counts the objects handed out as heads (Options.Deferred).
	deferred int
}

func renderWith(t *testing.T, fs filesys.FileSystem, dir string, opts render.Options) rendering {
	t.Helper()
	res, err := render.New(opts).Render(fs, dir)
	var ve *render.ValidationError
	if err != nil && !errors.As(err, &ve) {
		t.Fatalf("render %s: %v", dir, err)
	}
	deferred := wholeObjects(t, res)
	out, err := render.MarshalYAML(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	r := rendering{yaml: string(out), docs: len(res.Documents), deferred: deferred}
	for _, d := range res.Diagnostics {
		r.diags = append(r.diags, d.Error())
	}
	for _, o := range res.Objects {
		r.objects = append(r.objects, o.DeepCopy().Object)
	}
	return r
}

// wholeObjects materializes the objects that a deferred render handed out as heads, and
// returns how many: each holds its head alone until materialized, and again once released.
func wholeObjects(t *testing.T, res *render.Result) int {
	t.Helper()
	headOnly := func(u *unstructured.Unstructured) bool {
		for k := range u.Object {
			if k != "apiVersion" && k != "kind" && k != "metadata" {
				return false
			}
		}
		return u.GetKind() != "" && u.GetName() != ""
	}
	n := 0
	for _, o := range res.Objects {
		if !res.Bodies.Deferred(o) {
			continue
		}
		n++
		if !headOnly(o) {
			t.Fatalf("deferred %s holds more than its head: %v", o.GetName(), o.Object)
		}
		if _, ok := object.PodTemplatePath(o.GetKind()); !ok {
			t.Errorf("%s %s is deferred: only workloads are", o.GetKind(), o.GetName())
		}
		object.SetLabel(o, "z-written", "in the head") // as the engine marks it
		encoded, err := res.Bodies.AppendJSON(nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Bodies.Materialize(o) || res.Bodies.Materialize(o) {
			t.Fatalf("%s: Materialize reports true once, then false", o.GetName())
		}
		if whole, _ := object.AppendJSON(nil, o.Object); string(encoded) != string(whole) {
			t.Fatalf("%s: JSON from the encoding\n%s\nwhole\n%s", o.GetName(), encoded, whole)
		}
		delete(o.Object["metadata"].(map[string]any)["labels"].(map[string]any), "z-written")
		if headOnly(o) {
			t.Fatalf("%s: no body after Materialize", o.GetName())
		}
		res.Bodies.Release(o)
		if !headOnly(o) {
			t.Fatalf("%s: a body after Release", o.GetName())
		}
		release := res.Bodies.Whole(o)
		res.Bodies.Whole(o)() // held whole by the first: this release does nothing
		if headOnly(o) {
			t.Fatalf("%s: Whole released what it did not materialize", o.GetName())
		}
		_ = release // kept whole: the caller compares it
	}
	if res.Bodies.Len() != n {
		t.Errorf("Bodies holds %d objects, %d of the render's are deferred", res.Bodies.Len(), n)
	}
	return n
}

func sameRendering(t *testing.T, what string, want, got rendering) {
	t.Helper()
	if want.yaml != got.yaml {
		t.Errorf("%s: objects differ from a render without the cache:\n%s", what, firstDiff([]byte(want.yaml), []byte(got.yaml)))
	}
	if !reflect.DeepEqual(want.objects, got.objects) {
		t.Errorf("%s: objects hold other Go values than a render without the cache", what)
	}
	if !reflect.DeepEqual(want.diags, got.diags) {
		t.Errorf("%s: diagnostics differ:\nwant %q\ngot  %q", what, want.diags, got.diags)
	}
	if want.docs != got.docs {
		t.Errorf("%s: %d documents, want %d", what, got.docs, want.docs)
	}
}

// TestCacheGolden renders every golden case with a fresh cache twice (cold, then from the
// cache): both give exactly what a render without the cache gives.
func TestCacheGolden(t *testing.T) {
	for name, dir := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			opts := goldenOptions(t, name)
			want := renderWith(t, diskFS(), dir, opts)
			opts.Cache = render.NewCache(0)
			sameRendering(t, "cold", want, renderWith(t, diskFS(), dir, opts))
			sameRendering(t, "cached", want, renderWith(t, diskFS(), dir, opts))
			if s := opts.Cache.Stats(); s.Hits == 0 {
				t.Errorf("the second render hit nothing: %+v", s)
			}
			// Deferred (the daemon's): the same objects once materialized; the workloads
			// handed out as heads, but those that the checks across files wrote.
			opts.Cache, opts.Deferred = render.NewCache(0), true
			cold := renderWith(t, diskFS(), dir, opts)
			sameRendering(t, "cold, deferred", want, cold)
			cached := renderWith(t, diskFS(), dir, opts)
			sameRendering(t, "cached, deferred", want, cached)
			if cold.deferred != cached.deferred {
				t.Errorf("deferred %d objects cold, %d from the cache", cold.deferred, cached.deferred)
			}
			if name == "examples" && cached.deferred < 5 {
				t.Errorf("%d objects deferred, want the workloads (5 or more)", cached.deferred)
			}
		})
	}
}

// cacheRepo is a small repository with team directories, a pool, a quota and a
// kustomization.
func cacheRepo() map[string]string {
	return map[string]string{
		".gpuctl.yaml":            "namespaces: [{path: teams/*/**, namespace: $1}]\n",
		"pools.yaml":              "kind: pool\nversion: v0.1\nmetadata: {name: training-pool}\nnodes: {node-1: {gpu-type: a100-80g}}\n",
		"quota.yaml":              "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers: {team-a: {cpu: 100, memory: 100Gi, gpu: 8}}\n",
		"teams/team-a/train.yaml": benchFile(0),
		"teams/team-a/svc.yaml":   benchFile(4),
		"teams/team-b/nb.yaml":    benchFile(7),
		"teams/team-b/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n",
		"apps/kustomization.yaml": "resources: [web.yaml]\ncommonLabels: {app: web}\n",
		"apps/web.yaml":           benchFile(9),
	}
}

// TestCacheEdits renders a sequence of edits with one cache: each render equals a render of
// the same tree without it.
func TestCacheEdits(t *testing.T) {
	files := cacheRepo()
	cache := render.NewCache(0)
	check := func(what string) rendering {
		t.Helper()
		fs, err := render.MemFS("/repo", files)
		if err != nil {
			t.Fatal(err)
		}
		want := renderWith(t, fs, "/repo", render.Options{})
		got := renderWith(t, fs, "/repo", render.Options{Cache: cache})
		sameRendering(t, what, want, got)
		return got
	}
	first := check("first render")
	check("unchanged")

	files["teams/team-a/train.yaml"] = strings.Replace(files["teams/team-a/train.yaml"], "gpu: 8", "gpu: 4", 1)
	if got := check("one file edited"); got.yaml == first.yaml {
		t.Error("the edit changed nothing")
	}

	files[".gpuctl.yaml"] = "namespaces: [{path: teams/*/**, namespace: ml-$1}]\n"
	if got := check("namespace rule changed"); !strings.Contains(got.yaml, "namespace: ml-team-b") {
		t.Errorf("the unedited files of team-b are not in ml-team-b:\n%s", got.yaml)
	}
	files[".gpuctl.yaml"] = "namespaces: [{path: teams/*/**, namespace: $1}]\n"
	check("namespace rule changed back")

	files["teams/team-b/train.yaml"] = files["teams/team-a/train.yaml"]
	delete(files, "teams/team-a/train.yaml")
	if got := check("file moved"); !strings.Contains(got.yaml, keys.Source+": teams/team-b/train.yaml") {
		t.Errorf("the moved file is not rendered from its new place:\n%s", got.yaml)
	}

	files["apps/web.yaml"] = strings.Replace(files["apps/web.yaml"], "nginx:1.27", "nginx:1.28", 1)
	if got := check("kustomization input edited"); !strings.Contains(got.yaml, "nginx:1.28") {
		t.Error("the kustomization's output does not hold the edit")
	}
	files["apps/kustomization.yaml"] = "resources: [web.yaml]\ncommonLabels: {app: site}\n"
	if got := check("kustomization edited"); !strings.Contains(got.yaml, "app: site") {
		t.Error("the kustomization's output does not hold the edit")
	}

	files["teams/team-a/svc.yaml"] = strings.Replace(files["teams/team-a/svc.yaml"], "gpu: 1", "gpu: many", 1)
	got := check("error in one file")
	if !slices.Contains(got.diags, `/repo/teams/team-a/svc.yaml:6:40: resources.gpu: expected an integer, got "many"`) || got.yaml != "" {
		t.Errorf("the error is not reported with its file and line: %q", got.diags)
	}
	files["teams/team-a/svc.yaml"] = benchFile(4)
	check("error fixed")

	files["teams/team-a/kustomization.yaml"] = "resources: [svc.yaml]\n"
	check("kustomization added to a team directory")
	delete(files, "teams/team-a/kustomization.yaml")
	check("kustomization removed from a team directory")

	delete(files, "teams/team-b/nb.yaml")
	if got := check("file deleted"); strings.Contains(got.yaml, "job-0007") {
		t.Error("the deleted file's objects are still rendered")
	}

	delete(files, "quota.yaml") // team-a is no longer a team: its jobs are not queued
	check("quota deleted")
}

// TestCacheKueueQueued: whether a workload is queued comes from another file (the quota that
// makes its namespace a team's); the cached objects follow it.
func TestCacheKueueQueued(t *testing.T) {
	files := cacheRepo()
	files[".gpuctl.yaml"] = "namespaces: [{path: teams/*/**, namespace: $1}]\nqueueing: kueue\n"
	cache := render.NewCache(0)
	for _, users := range []string{"team-a", "team-b", "team-a"} {
		files["quota.yaml"] = "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers: {" + users + ": {cpu: 100, memory: 100Gi, gpu: 8}}\n"
		fs, err := render.MemFS("/repo", files)
		if err != nil {
			t.Fatal(err)
		}
		want := renderWith(t, fs, "/repo", render.Options{})
		sameRendering(t, "quota for "+users, want, renderWith(t, fs, "/repo", render.Options{Cache: cache}))
	}
}

// TestCacheHandsOutCopies: a caller may change the objects and documents of a render; the
// next render from the cache does not see it.
func TestCacheHandsOutCopies(t *testing.T) {
	fs, err := render.MemFS("/repo", cacheRepo())
	if err != nil {
		t.Fatal(err)
	}
	want := renderWith(t, fs, "/repo", render.Options{})
	cache := render.NewCache(0)
	for i := 0; i < 3; i++ {
		res, err := render.New(render.Options{Cache: cache}).Render(fs, "/repo")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Objects {
			o.SetLabels(map[string]string{"changed": "by the caller"})
			o.SetAnnotations(nil)
			delete(o.Object, "spec")
		}
		for _, d := range res.Documents {
			d.Namespace = "changed"
			if d.Manifest != nil {
				d.Manifest["data"] = "changed"
			}
		}
		sameRendering(t, fmt.Sprintf("render %d after changes", i+2), want, renderWith(t, fs, "/repo", render.Options{Cache: cache}))
	}
}

// TestCacheBound: a cache far smaller than the tree evicts, and renders stay right.
func TestCacheBound(t *testing.T) {
	files := cacheRepo()
	cache := render.NewCache(4 << 10)
	for i := 0; i < 3; i++ {
		files["teams/team-a/train.yaml"] = benchFile(10 * i)
		fs, err := render.MemFS("/repo", files)
		if err != nil {
			t.Fatal(err)
		}
		want := renderWith(t, fs, "/repo", render.Options{})
		sameRendering(t, fmt.Sprintf("render %d", i), want, renderWith(t, fs, "/repo", render.Options{Cache: cache}))
	}
	s := cache.Stats()
	if s.Evictions == 0 || s.Bytes > 4<<10+16<<10 {
		t.Errorf("the bound does not hold: %+v", s)
	}
}

// TestCacheKeepsWhatFits: a tree about twice the bound keeps the files that fit from one
// render to the next (an LRU would evict each file before its next use: renders read the
// files in the same order), and renders stay right.
func TestCacheKeepsWhatFits(t *testing.T) {
	files := map[string]string{".gpuctl.yaml": "namespaces: [{path: teams/*/**, namespace: $1}]\n"}
	for i := range 40 {
		files[fmt.Sprintf("teams/team-a/job-%02d.yaml", i)] = benchFile(i)
	}
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	whole := render.NewCache(0)
	want := renderWith(t, fs, "/repo", render.Options{Cache: whole})
	cache := render.NewCache(whole.Stats().Bytes / 2)
	for i := range 3 {
		sameRendering(t, fmt.Sprintf("render %d", i), want, renderWith(t, fs, "/repo", render.Options{Cache: cache}))
	}
	s := cache.Stats()
	// The values that objects share are never evicted: at most an eighth of the bound more.
	if half := whole.Stats().Bytes / 2; s.Hits < 2*10 || s.Bytes > half+half/8+16<<10 {
		t.Errorf("a cache of half the tree kept too little from render to render (or too much): %+v", s)
	}
}

// TestCacheConcurrent renders one tree from several goroutines with one cache (run with -race).
func TestCacheConcurrent(t *testing.T) {
	files := cacheRepo()
	files[".gpuctl.yaml"] = "namespaces: [{path: teams/*/**, namespace: $1}]\nqueueing: kueue\n"
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	want := renderWith(t, fs, "/repo", render.Options{})
	cache := render.NewCache(0)
	var wg sync.WaitGroup
	got := make([]rendering, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				got[i] = renderWith(t, fs, "/repo", render.Options{Cache: cache})
			}
		}()
	}
	wg.Wait()
	for i := range got {
		sameRendering(t, fmt.Sprintf("goroutine %d", i), want, got[i])
	}
}

// readCounter is a filesystem that counts the reads of each file.
type readCounter struct {
	filesys.FileSystem
	mu    sync.Mutex
	reads map[string]int
}

func (r *readCounter) ReadFile(path string) ([]byte, error) {
	r.mu.Lock()
	r.reads[path]++
	r.mu.Unlock()
	return r.FileSystem.ReadFile(path)
}

// TestCacheDigest: with Options.Digest (what a source read), a file whose content the cache
// has seen is not read again; an edited file is, and a digest the cache does not know makes
// the file read and keyed by what was read. Every render equals one without the cache.
func TestCacheDigest(t *testing.T) {
	files := cacheRepo()
	cache := render.NewCache(0)
	lie := map[string]bool{} // files whose digest is not that of their content
	digest := func(abs string) (sum [sha256.Size]byte, ok bool) {
		rel := strings.TrimPrefix(abs, "/repo/")
		content, ok := files[rel]
		if lie[rel] {
			content += "# not what the file holds"
		}
		return sha256.Sum256([]byte(content)), ok
	}
	plain := []string{"pools.yaml", "quota.yaml", "teams/team-a/train.yaml", "teams/team-a/svc.yaml", "teams/team-b/nb.yaml", "teams/team-b/cm.yaml"}
	check := func(what string, wantRead ...string) rendering {
		t.Helper()
		mem, err := render.MemFS("/repo", files)
		if err != nil {
			t.Fatal(err)
		}
		fs := &readCounter{FileSystem: mem, reads: map[string]int{}}
		want := renderWith(t, mem, "/repo", render.Options{})
		got := renderWith(t, fs, "/repo", render.Options{Cache: cache, Digest: digest})
		sameRendering(t, what, want, got)
		var read []string
		for _, rel := range plain {
			if fs.reads["/repo/"+rel] > 0 {
				read = append(read, rel)
			}
		}
		if !slices.Equal(read, wantRead) {
			t.Errorf("%s: read %q, want %q", what, read, wantRead)
		}
		return got
	}
	check("first render", plain...)
	check("unchanged")
	files["teams/team-a/train.yaml"] = strings.Replace(files["teams/team-a/train.yaml"], "gpu: 8", "gpu: 4", 1)
	check("one file edited", "teams/team-a/train.yaml")
	files["teams/team-b/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: c}\n"
	lie["teams/team-b/cm.yaml"] = true
	if got := check("a digest the cache does not know", "teams/team-b/cm.yaml"); !strings.Contains(got.yaml, "a: c") {
		t.Error("the file was not rendered from what it holds")
	}
	check("the same digest again: cached under what was read", "teams/team-b/cm.yaml")
	delete(lie, "teams/team-b/cm.yaml")
	check("its true digest")
}

// TestCacheCountsWhatItHolds: the bytes that the cache counts for plain manifests are, within
// a quarter, the heap that holding them takes (the bound is what the daemon spends on them).
func TestCacheCountsWhatItHolds(t *testing.T) {
	const n = 5000
	files := map[string]string{}
	for j := range n {
		files[fmt.Sprintf("batch-%02d/job-%05d.yaml", j/100, j)] = clusterfixture.JobManifest("default", j, "")
	}
	fs, err := render.MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	cache := render.NewCache(0)
	if _, err := render.New(render.Options{Cache: cache}).Render(fs, "/repo"); err != nil {
		t.Fatal(err)
	}
	s := cache.Stats()
	with := liveHeap()
	runtime.KeepAlive(cache)
	held := with - liveHeap() // the cache is garbage now
	counted := s.Bytes
	if s.Entries != n || counted < held*3/4 || counted > held*5/4 {
		t.Fatalf("the cache holds %d bytes for %d manifest files and counts %d (%d entries)", held, n, counted, s.Entries)
	}
	t.Logf("%d manifest files: %.0f bytes each held, %.0f counted", n, float64(held)/n, float64(counted)/n)
}

// TestCachedPositionsAreFoundAgain: the cache keeps a gpuctl file's content, not its fields'
// positions; a document it hands out finds them when first asked (from any goroutine), the
// same as a document parsed then.
func TestCachedPositionsAreFoundAgain(t *testing.T) {
	fs, err := render.MemFS("/repo", map[string]string{"a.yaml": benchFile(0) + "---\n" + benchFile(4)})
	if err != nil {
		t.Fatal(err)
	}
	want, err := render.New(render.Options{}).Render(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	cache := render.NewCache(0)
	fields := []string{"job.name", "resources.gpu", "environment.image", "service.port", "storage.workdirs[1].path", "absent"}
	for _, what := range []string{"cold", "cached"} {
		res, err := render.New(render.Options{Cache: cache}).Render(fs, "/repo")
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Documents) != 2 {
			t.Fatalf("%s: %d documents", what, len(res.Documents))
		}
		var wg sync.WaitGroup
		for i, d := range res.Documents {
			for _, f := range fields {
				wg.Add(1)
				go func() {
					defer wg.Done()
					w := want.Documents[i]
					if d.At(f) != w.At(f) || d.Has(f) != w.Has(f) {
						t.Errorf("%s: document %d: %s at %v (%v), parsed at %v (%v)", what, i, f, d.At(f), d.Has(f), w.At(f), w.Has(f))
					}
				}()
			}
		}
		wg.Wait()
	}
	if !want.Documents[0].Has("storage.workdirs[1].path") || want.Documents[1].At("service.port") == want.Documents[1].Pos {
		t.Fatalf("the fixture lacks the fields: %v", want.Documents[1].At("service.port"))
	}
}
