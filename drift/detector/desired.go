package detector

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"

	"github.com/gpuctl/gpuctl/internal/cores"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/reconciler"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// desiredObject is one applied object, kept as compressed JSON: a few hundred bytes instead of
// the maps of an unstructured object (10,000 objects: about 3 MB instead of 100), decoded only
// when the object is evaluated.
type desiredObject struct {
	ref    object.Ref
	key    string // ref.Key()
	gvr    schema.GroupVersionResource
	source string
	hash   string // the applied-hash: equal hashes, equal JSON
	raw    []byte // flate-compressed JSON
}

func (o *desiredObject) decode() (*unstructured.Unstructured, error) {
	b, err := io.ReadAll(flate.NewReaderDict(bytes.NewReader(o.raw), jsonDictionary))
	if err != nil {
		return nil, fmt.Errorf("%s: decompress desired object: %w", o.ref, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("%s: decode desired object: %w", o.ref, err)
	}
	return u, nil
}

// compressor compresses the desired objects of one revision, one after the other.
type compressor struct {
	buf bytes.Buffer
	w   *flate.Writer
	raw []byte // the object's JSON, kept for the next
}

func (c *compressor) compress(u *unstructured.Unstructured, bodies *render.Bodies) ([]byte, error) {
	raw, err := bodies.AppendJSON(c.raw[:0], u) // a deferred object's body from its encoding
	if err != nil {
		return nil, err
	}
	c.raw = raw
	c.buf.Reset()
	if c.w == nil {
		if c.w, err = flate.NewWriterDict(&c.buf, compressLevel, jsonDictionary); err != nil {
			return nil, err
		}
	} else {
		c.w.Reset(&c.buf)
	}
	if _, err := c.w.Write(raw); err != nil {
		return nil, err
	}
	if err := c.w.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(c.buf.Bytes()), nil
}

// compressLevel is the flate level of the desired objects: the lowest that uses a preset
// dictionary (flate.BestSpeed starts from an empty window whatever it is given).
const compressLevel = 2

// jsonDictionary is the preset dictionary of the desired objects' compression: the JSON that
// gpuctl's objects share (their labels and annotations, a Job's pod template), which flate
// finds in it instead of in the object's own first bytes. A Job of ~800 bytes of JSON
// compresses to ~235 bytes with it, ~465 without: at 10,000 objects the detector holds ~2.3
// MB less (issue #18, bar 6). The compressed objects live in memory only: the dictionary may
// change from one version to the next, never while one runs.
var jsonDictionary = func() []byte {
	quantities := map[string]any{"cpu": "1", "memory": "1Gi", keys.ResourceGPU: "1"}
	labels := map[string]any{keys.App: "", keys.JobType: "training", keys.ManagedBy: keys.ManagedByValue,
		keys.Pool: keys.DefaultPool, keys.Priority: "medium"}
	template := map[string]any{ // as the render writes a training workload's
		"metadata": map[string]any{"labels": labels},
		"spec": map[string]any{
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": keys.Pool, "operator": "DoesNotExist"}}}}}}},
			"containers": []any{map[string]any{"args": []any{}, "command": []any{}, "env": []any{
				map[string]any{"name": "GPUCTL_FAILED_ATTEMPTS", "valueFrom": map[string]any{"fieldRef": map[string]any{
					"fieldPath": "metadata.annotations['batch.kubernetes.io/job-index-failure-count']"}}},
				map[string]any{"name": "GPUCTL_DISRUPTED_ATTEMPTS", "valueFrom": map[string]any{"fieldRef": map[string]any{
					"fieldPath": "metadata.annotations['batch.kubernetes.io/job-index-ignored-failure-count']"}}},
				map[string]any{"name": "", "value": ""}},
				"image": "", "name": "", "ports": []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}},
				"resources":    map[string]any{"limits": quantities, "requests": quantities},
				"volumeMounts": []any{map[string]any{"mountPath": "/dev/shm", "name": "dshm"}}}},
			"nodeSelector": map[string]any{keys.Pool: ""}, "priorityClassName": keys.PriorityClassMedium, "restartPolicy": "Never",
			"tolerations": []any{map[string]any{"effect": "NoSchedule", "key": keys.ResourceGPU, "operator": "Exists"}},
			"volumes":     []any{map[string]any{"emptyDir": map[string]any{"medium": "Memory"}, "name": "dshm"}},
		},
	}
	jobLabels := maps.Clone(labels)
	jobLabels[keys.ApplySetPartOf] = "applyset-"
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{
			"annotations": map[string]any{keys.AppliedHash: "", keys.Description: "", keys.Paused: keys.PausedValue, keys.Source: ".yaml", keys.SpecDigest: ""},
			"labels":      jobLabels, "name": "", "namespace": keys.DefaultNamespace},
		"spec": map[string]any{"backoffLimitPerIndex": int64(0), "completionMode": "Indexed", "completions": int64(1), "parallelism": int64(1),
			"podFailurePolicy": map[string]any{"rules": []any{ // render/retries.go's defaults
				map[string]any{"action": "Ignore", "onPodConditions": []any{map[string]any{"status": "True", "type": "DisruptionTarget"}}},
				map[string]any{"action": "FailIndex", "onExitCodes": map[string]any{"operator": "NotIn", "values": []any{int64(0)}}}}},
			"suspend": true, "template": template}}
	b, err := object.AppendJSON([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":1,"selector":{"matchLabels":{}}}}`+
		`{"apiVersion":"v1","kind":"Service","spec":{"ports":[{"port":80,"targetPort":8080}],"type":"ClusterIP"}}`+
		`{"apiVersion":"v1","kind":"ConfigMap","data":{}}`), job)
	if err != nil {
		panic("drift: the compression dictionary has no JSON form: " + err.Error())
	}
	return b
}()

// compressAll compresses the objects that are not node intents (nil for those), on every
// core: it is most of indexing a revision, and the sync that applied it waits for it. An
// object that prev holds with the same applied-hash (the same JSON) is prev's (same), not
// compressed again: an edit's sync makes one desired object.
func compressAll(objects []*unstructured.Unstructured, bodies *render.Bodies, prev *desiredState) (raws [][]byte, same []*desiredObject, err error) {
	raws = make([][]byte, len(objects))
	same = make([]*desiredObject, len(objects))
	errs := make([]error, len(objects))
	workers := make([]*compressor, cores.Workers(len(objects))) // one a worker: it reuses its buffers
	cores.EachWorker(len(objects), func(w, i int) {
		u := objects[i]
		if object.IsNode(u) {
			return
		}
		if prev != nil {
			if h := object.AnnotationOf(u, keys.AppliedHash); h != "" {
				if o := prev.objects[object.RefOf(u).Key()]; o != nil && o.hash == h {
					raws[i], same[i] = o.raw, o // never changed: shared
					return
				}
			}
		}
		if workers[w] == nil {
			workers[w] = compressors.Get().(*compressor)
		}
		raws[i], errs[i] = workers[w].compress(u, bodies)
	})
	for _, c := range workers {
		if c != nil {
			compressors.Put(c)
		}
	}
	return raws, same, errors.Join(errs...)
}

// compressors keeps the compressors of past revisions: a flate writer is about 1 MB.
var compressors = sync.Pool{New: func() any { return &compressor{} }}

// nodeIntent is what the pools ask of one node.
type nodeIntent struct {
	pool   string
	source string
	labels map[string]string // includes the declared gpu-type, if any
}

// desiredState is the last applied revision, as the detector compares with it. It is
// replaced whole, never changed: evaluations hold a pointer to the one they started with.
type desiredState struct {
	revision string
	digest   string                    // reconciler.Digest of the objects
	objects  map[string]*desiredObject // by object.Ref.Key
	// gvrs are the resources of the objects, with their group-kind.
	gvrs       map[schema.GroupVersionResource]schema.GroupKind
	nodes      map[string]nodeIntent
	namespaces map[string]bool // namespaces gpuctl manages: shadow workloads are looked for there
	partOf     string          // the inventory's ApplySet id
	// held are the tenant namespaces whose files had errors: gpuctl's objects there are kept
	// as a revision before left them, and are not shadows.
	held map[string]bool
	// multiKueueWorker: the revision is a MultiKueue worker's, where a Job or JobSet with
	// MultiKueue's labels (keys.MultiKueueCopy) is the manager's copy, not a shadow.
	multiKueueWorker bool
}

// newDesiredState indexes the objects of an applied revision (as Plan prepared them), whose
// reconciler.Digest is digest; the objects that prev (the revision before, or nil) holds
// with the same applied-hash keep their compressed form (an edit of one file compresses one).
func newDesiredState(revision, digest string, objects []*unstructured.Unstructured, bodies *render.Bodies, prev *desiredState, engine *reconciler.Manager) (*desiredState, error) {
	ds := &desiredState{revision: revision, digest: digest, objects: make(map[string]*desiredObject, len(objects)),
		gvrs: map[schema.GroupVersionResource]schema.GroupKind{}, nodes: map[string]nodeIntent{}, namespaces: map[string]bool{}}
	poolSource := map[string]string{}
	raws, same, err := compressAll(objects, bodies, prev)
	if err != nil {
		return nil, err
	}
	for i, u := range objects {
		gvk := u.GroupVersionKind()
		if object.IsNode(u) {
			ds.nodes[u.GetName()] = nodeIntent{pool: u.GetLabels()[keys.Pool], labels: u.GetLabels()}
			continue
		}
		gvr, _, err := engine.Resource(gvk)
		if err != nil {
			return nil, err
		}
		o := same[i] // the same JSON: the same reference, resource and source
		if o == nil || o.gvr != gvr {
			ref := object.RefOf(u)
			o = &desiredObject{ref: ref, key: ref.Key(), gvr: gvr, source: object.AnnotationOf(u, keys.Source), hash: object.AnnotationOf(u, keys.AppliedHash), raw: raws[i]}
		}
		ds.objects[o.key] = o
		ds.gvrs[gvr] = gvk.GroupKind()
		if ns := u.GetNamespace(); ns != "" {
			ds.namespaces[ns] = true
		}
		if gvk.Kind == "Namespace" && gvk.Group == "" {
			ds.namespaces[u.GetName()] = true
		}
		if ds.partOf == "" {
			ds.partOf = object.LabelOf(u, keys.ApplySetPartOf)
		}
		if render.IsPoolRegistryObject(u) {
			poolSource[object.LabelOf(u, keys.Pool)] = o.source
		}
	}
	for name, n := range ds.nodes {
		n.source = poolSource[n.pool]
		ds.nodes[name] = n
	}
	return ds, nil
}
