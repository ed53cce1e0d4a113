package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// A plain manifest that the render cache hands out shares every value but its metadata with
// the cache (sharedManifest). Nothing may write into what is shared: not the render (a team's
// Jobs and CronJobs are suspended and labelled for Kueue, tenant manifests get their
// namespace), not what the engine does to the rendered objects (labels, annotations,
// namespace), not two renders at once (go test -race). The cache's manifests and the typed
// specs of its gpuctl files must be as parsed after all of it, and every cached render must
// equal an uncached one.
func TestCachedManifestsAreNotWritten(t *testing.T) {
	files := map[string]string{
		".gpuctl.yaml":           "namespaces:\n  - path: teams/*/**\n    namespace: $1\nqueueing: kueue\n",
		"quota.yaml":             "kind: quota\nversion: v0.1\nmetadata: {name: q}\nusers:\n  alice: {cpu: 10, memory: 20Gi, gpu: 4}\n",
		"teams/alice/run.yaml":   "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: run\nspec:\n  suspend: false\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: i}]\n",
		"teams/alice/cron.yaml":  "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: nightly\nspec:\n  schedule: '0 1 * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          containers: [{name: m, image: i}]\n",
		"teams/carol/plain.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata: {a: b}\n",
		"admin/web.yaml":         "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n  labels: {app: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: main, image: nginx}]\n",
		"admin/svc.yaml":         "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: default\n  annotations: {a: b}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n",
	}
	// gpuctl files whose objects share values in the cache (its interner): a team's, queued
	// for Kueue (suspendQueuedJobs writes their spec and template labels), and the admin's.
	for i := range 3 {
		for _, dir := range []string{"teams/alice", "admin"} {
			files[fmt.Sprintf("%s/train-%d.yaml", dir, i)] = fmt.Sprintf("kind: training\nversion: v0.1\njob: {name: train-%d, description: d%d}\n"+
				"environment: {image: x, command: [run, '%d']}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n", i, i, i)
		}
	}
	fs, err := MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	want := renderJSON(t, New(Options{}), fs)
	cache := NewCache(0)
	r := New(Options{Cache: cache})
	// What the render that fills the cache, and the engine, write into its objects must not
	// reach the cache.
	first, err := r.Render(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(first.Objects); string(b) != want {
		t.Fatalf("the render that fills the cache differs from an uncached one:\n%s\nwant\n%s", b, want)
	}
	planWrites(first.Objects)
	var warm sync.WaitGroup
	for range 2 { // two renders at once decode the same entries
		warm.Go(func() {
			if got := renderJSON(t, r, fs); got != want {
				t.Errorf("a render that warms the cache differs from an uncached one:\n%s\nwant\n%s", got, want)
			}
		})
	}
	warm.Wait()
	// The cache keeps each manifest encoded; its decoded form as the renders found it.
	type kept struct {
		file      string
		enc, orig []byte
		decoded   map[string]any
	}
	var parsed []kept
	for _, el := range cache.entries {
		e := el.Value.(*cacheEntry)
		for i, b := range e.encoded {
			if b != nil {
				parsed = append(parsed, kept{e.docs[i].File, b, bytes.Clone(b), runtime.DeepCopyJSON(decodeObject(b, cache.intern.table))})
			}
		}
	}
	if len(parsed) != 5 {
		t.Fatalf("the cache holds %d manifests, want 5", len(parsed))
	}
	// The typed specs of the gpuctl files, shared by every render that hands a file out, as
	// a parse of their file makes them.
	specs := map[*Document]string{}
	for _, el := range cache.entries {
		for i, d := range el.Value.(*cacheEntry).docs {
			if d.Workload == nil && d.Pool == nil && d.Quota == nil {
				continue
			}
			for name, data := range files {
				if strings.HasSuffix(d.File, "/"+name) {
					parsed, _ := ParseFile(d.File, []byte(data))
					b, _ := json.Marshal([]any{parsed[i].Workload, parsed[i].Pool, parsed[i].Quota})
					specs[d] = string(b)
				}
			}
		}
	}
	if len(specs) != 7 { // six training files and the quota
		t.Fatalf("the cache holds %d typed specs, want 7", len(specs))
	}
	shared := runtime.DeepCopyJSONValue(slices.Clone(cache.intern.table)).([]any)
	if len(shared) < 4 { // at least the tolerations, affinity, volumes and resources
		t.Fatalf("the cache shares %d values of the gpuctl files' objects: %v", len(shared), shared)
	}
	for round := range 3 {
		var wg sync.WaitGroup
		got := make([]string, 2)
		for i := range got {
			wg.Go(func() {
				res, err := r.Render(fs, "/repo")
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := json.Marshal(res.Objects)
				got[i] = string(b)
				planWrites(res.Objects)
			})
		}
		wg.Wait()
		for i := range got {
			if got[i] != want {
				t.Fatalf("round %d: a cached render differs from an uncached one:\n%s\nwant\n%s", round, got[i], want)
			}
		}
	}
	for _, k := range parsed {
		if now := decodeObject(k.enc, cache.intern.table); !bytes.Equal(k.enc, k.orig) || !reflect.DeepEqual(now, k.decoded) {
			t.Errorf("%s: the cache's manifest was written:\n%v\nwas\n%v", k.file, now, k.decoded)
		}
	}
	for d, before := range specs {
		if b, _ := json.Marshal([]any{d.Workload, d.Pool, d.Quota}); string(b) != before {
			t.Errorf("%s: the cache's typed spec was written:\n%s\nwas\n%s", d.File, b, before)
		}
	}
	for i, before := range shared {
		if !reflect.DeepEqual(cache.intern.table[i], before) {
			t.Errorf("the cache's shared value %d was written:\n%v\nwas\n%v", i, cache.intern.table[i], before)
		}
	}
}

// planWrites writes into rendered objects what the engine's plan writes.
func planWrites(objs []*unstructured.Unstructured) {
	for _, o := range objs {
		object.SetLabel(o, keys.ApplySetPartOf, "inventory")
		object.DropAppliedHash(o)
		object.SetAnnotation(o, keys.AppliedHash, "h")
		if o.GetNamespace() == "" && object.KindOf(o) != "Namespace" {
			o.SetNamespace("default")
		}
	}
}

func renderJSON(t *testing.T, r *Renderer, fs filesys.FileSystem) string {
	t.Helper()
	res, err := r.Render(fs, "/repo")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInternerKeepsSharing: values met once fill the interner's budget (a long-lived daemon's
// past revisions) without stopping it from sharing a value met twice afterwards, and its
// table never passes the budget.
func TestInternerKeepsSharing(t *testing.T) {
	in := &interner{seen: map[uint64]bool{}, index: map[string]int32{}, max: 64 << 10}
	encode := func(v map[string]any) []byte {
		t.Helper()
		b, ok := encodeObject(nil, v, in)
		if !ok {
			t.Fatal("not encoded")
		}
		return b
	}
	obj := func(spec map[string]any) map[string]any {
		return map[string]any{"kind": "Job", "metadata": map[string]any{"name": "x"}, "spec": spec}
	}
	for i := range 20000 { // each value met once
		encode(obj(map[string]any{"n": int64(i)}))
		if in.bytes > in.max {
			t.Fatalf("after %d values the interner holds %d bytes, over its budget of %d", i, in.bytes, in.max)
		}
	}
	repeated := obj(map[string]any{"affinity": map[string]any{"zone": "a"}})
	encode(repeated)
	b := encode(repeated)
	if len(in.table) == 0 || !bytes.Contains(b, []byte{tagShared}) {
		t.Fatalf("a value met twice after the budget filled with values met once is not shared (table %d)", len(in.table))
	}
	if got := decodeObject(b, in.table); !reflect.DeepEqual(got, repeated) {
		t.Fatalf("decodes to %v, want %v", got, repeated)
	}
	for i := range 20000 { // values met twice: the table fills to the budget and stops there
		v := obj(map[string]any{"m": int64(i)})
		encode(v)
		encode(v)
		if in.bytes > in.max {
			t.Fatalf("the shared values passed the budget: %d bytes of %d", in.bytes, in.max)
		}
	}
}

// TestRedTeamInternerFlood: a team writes a file whose documents repeat many different values
// (each met twice, so each would be shared) to fill the cache's table of shared values. The
// table stays within its budget, the cache within its bound and that budget, and every render
// — the team's, and another team's whose values repeat too — equals an uncached one.
func TestRedTeamInternerFlood(t *testing.T) {
	var flood strings.Builder
	for i := range 400 {
		for range 2 {
			fmt.Fprintf(&flood, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: flood-%d-%d}\ndata: {value: %q, more: [%d, %d]}\n", i, flood.Len(), strings.Repeat("x", 40)+strconv.Itoa(i), i, i)
		}
	}
	files := map[string]string{
		".gpuctl.yaml":          "namespaces:\n  - path: teams/*/**\n    namespace: $1\n",
		"teams/evil/flood.yaml": flood.String(),
	}
	for i := range 3 {
		files[fmt.Sprintf("teams/alice/train-%d.yaml", i)] = fmt.Sprintf("kind: training\nversion: v0.1\njob: {name: train-%d}\n"+
			"environment: {image: x, command: [run]}\nresources: {gpu: 1, cpu: 1, memory: 1Gi}\n", i)
	}
	fs, err := MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	want := renderJSON(t, New(Options{}), fs)
	const bound = 256 << 10
	cache := NewCache(bound)
	r := New(Options{Cache: cache})
	for i := range 3 {
		if got := renderJSON(t, r, fs); got != want {
			t.Fatalf("render %d with the flooded cache differs from an uncached one", i)
		}
		cache.mu.Lock()
		in, size, shared := cache.intern.bytes, cache.size, len(cache.intern.table)
		cache.mu.Unlock()
		if in > bound/8 || size > bound+bound/8+16<<10 {
			t.Fatalf("render %d: the shared values take %d bytes (budget %d), the cache %d (bound %d)", i, in, bound/8, size, bound)
		}
		if shared == 0 || in < bound/8-4<<10 {
			t.Fatalf("render %d: %d values shared in %d bytes: the flood did not fill the table", i, shared, in)
		}
	}
}

// TestRenderForgetsValuesMetOnce: the hashes of the values a render met once are forgotten
// when it ends (a daemon kept those of every file between its syncs), the values it met twice
// stay shared, and the cache's size counts what it holds: the same after a render of the same
// tree again.
func TestRenderForgetsValuesMetOnce(t *testing.T) {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("job-%d.yaml", i)] = fmt.Sprintf("apiVersion: batch/v1\nkind: Job\nmetadata: {name: job-%d}\n"+
			"spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: x, args: [%q], resources: {limits: {cpu: '1'}}}]\n", i, strconv.Itoa(i))
	}
	fs, err := MemFS("/repo", files)
	if err != nil {
		t.Fatal(err)
	}
	cache := NewCache(0)
	r := New(Options{Cache: cache})
	state := func() (seen, shared int, size int64) {
		t.Helper()
		cache.mu.Lock()
		defer cache.mu.Unlock()
		held := cache.intern.bytes // what the size counts: the entries and the interner
		for el := cache.lru.Front(); el != nil; el = el.Next() {
			held += el.Value.(*cacheEntry).size
		}
		if held != cache.size {
			t.Errorf("the cache's size is %d, what it holds %d", cache.size, held)
		}
		return len(cache.intern.seen), len(cache.intern.table), cache.size
	}
	want := renderJSON(t, New(Options{}), fs)
	if got := renderJSON(t, r, fs); got != want {
		t.Fatal("the cached render differs from an uncached one")
	}
	seen, shared, size := state()
	if seen != 0 {
		t.Errorf("%d hashes of values met once kept after the render", seen)
	}
	if shared == 0 {
		t.Error("no value shared: every Job's resources are the same")
	}
	files["job-0.yaml"] += "  backoffLimit: 1\n" // an edit: one file encoded again
	if fs, err = MemFS("/repo", files); err != nil {
		t.Fatal(err)
	}
	renderJSON(t, r, fs)
	files["job-0.yaml"] = strings.TrimSuffix(files["job-0.yaml"], "  backoffLimit: 1\n")
	if fs, err = MemFS("/repo", files); err != nil {
		t.Fatal(err)
	}
	if got := renderJSON(t, r, fs); got != want {
		t.Fatal("the cached render after the edits differs from an uncached one")
	}
	if seen2, _, size2 := state(); seen2 != 0 || size2 < size || size2 > size+4<<10 {
		t.Errorf("after the edit and its undoing: %d hashes kept, size %d against %d (the edit's entry and no more)", seen2, size2, size)
	}
}
