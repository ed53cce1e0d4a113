package render

import (
	"slices"
	"strings"
	"sync"
	"unique"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Version is the only version of the gpuctl format.
const Version = "v0.1"

// Kinds of gpuctl documents.
const (
	KindTraining  = "training"
	KindInference = "inference"
	KindNotebook  = "notebook"
	KindCompute   = "compute"
	KindPool      = "pool"
	KindQuota     = "quota"
	// KindResource is the other spelling of a pool document, with a `pool:` block.
	KindResource = "resource"
)

// WorkloadKinds lists the kinds that run containers.
var WorkloadKinds = []string{KindTraining, KindInference, KindNotebook, KindCompute}

var allKinds = []string{KindTraining, KindInference, KindNotebook, KindCompute, KindPool, KindQuota, KindResource}

// Workload is a training, inference, notebook or compute document.
type Workload struct {
	Kind        string      `gpuctl:"kind,required"`
	Version     string      `gpuctl:"version,required"`
	Job         Job         `gpuctl:"job,required"`
	Environment Environment `gpuctl:"environment,required"`
	Resources   Resources   `gpuctl:"resources"`
	Service     Service     `gpuctl:"service"`
	Storage     Storage     `gpuctl:"storage"`
}

// Job identifies a workload.
type Job struct {
	Name        string `gpuctl:"name,required"`
	Namespace   string `gpuctl:"namespace"`
	Priority    string `gpuctl:"priority"`
	Description string `gpuctl:"description"`
	// Suspend pauses a training job: its Job is rendered suspended (spec.suspend: true) and
	// annotated keys.Paused. Training only; `gpuctl pause` and `gpuctl resume` write it.
	Suspend bool `gpuctl:"suspend"`
	// Retries says which failures of a training run are run again (docs/format.md §4.4).
	Retries Retries `gpuctl:"retries"`
}

// Retries are the failures of a training run that are run again: a disruption (the pod's
// DisruptionTarget condition: preemption, eviction, node loss, drain) per OnDisruption, the
// container exit codes OnExitCodes up to Max times; any other failure fails the job at once.
// Which fields are set is known from the document (Document.Has).
type Retries struct {
	// OnDisruption is retry (default: not counted), count (counted against Max) or fail.
	OnDisruption string `gpuctl:"onDisruption"`
	// OnExitCodes are the exit codes that a run may be retried for.
	OnExitCodes []int `gpuctl:"onExitCodes"`
	// Max is how many counted failures are retried (default 3).
	Max int `gpuctl:"max"`
}

// Environment is the container: image, command and environment variables.
type Environment struct {
	Image           string   `gpuctl:"image,required"`
	ImagePullSecret string   `gpuctl:"imagePullSecret"`
	Command         []string `gpuctl:"command"`
	Args            []string `gpuctl:"args"`
	Env             []EnvVar `gpuctl:"env"`
	// EnvFrom are Secrets whose every key becomes a variable (docs/format.md §3.4). The JSON
	// tags leave the new fields out of a training job's spec digest while they are not set.
	EnvFrom []EnvFrom `gpuctl:"envFrom" json:",omitempty"`
}

// EnvVar is one environment variable: its value, or one key of a Secret.
type EnvVar struct {
	Name  string `gpuctl:"name,required"`
	Value string `gpuctl:"value"`
	// Secret takes the value from a key of a Secret of the workload's namespace; it excludes
	// Value.
	Secret *SecretKey `gpuctl:"secret" json:",omitempty"`
}

// SecretKey is one key of a Secret.
type SecretKey struct {
	Name string `gpuctl:"name,required"`
	Key  string `gpuctl:"key,required"`
}

// EnvFrom makes every key of a Secret a variable, named Prefix plus the key.
type EnvFrom struct {
	Secret string `gpuctl:"secret,required"`
	Prefix string `gpuctl:"prefix" json:",omitempty"`
}

// Resources is what one pod asks for, and where it may run.
type Resources struct {
	Pool      string            `gpuctl:"pool"`
	GPU       int               `gpuctl:"gpu"`
	GPUType   string            `gpuctl:"gpu-type"`
	CPU       resource.Quantity `gpuctl:"cpu"`
	Memory    resource.Quantity `gpuctl:"memory"`
	GPUShare  resource.Quantity `gpuctl:"gpu-share"`
	NodeCount int               `gpuctl:"node_count"`
}

// Service is how a long-running workload is exposed.
type Service struct {
	Replicas    int    `gpuctl:"replicas"`
	Port        int    `gpuctl:"port"`
	HealthCheck string `gpuctl:"health_check"`
	// PausedReplicas are the replicas of a paused service (Replicas 0), which resuming it
	// restores; `gpuctl pause` and `gpuctl resume` write it.
	PausedReplicas int `gpuctl:"pausedReplicas"`
}

// Storage lists host directories and Secrets mounted into the pod.
type Storage struct {
	Workdirs []Workdir `gpuctl:"workdirs"`
	// Secrets are mounted read-only, one file per key (docs/format.md §3.4).
	Secrets []SecretMount `gpuctl:"secrets" json:",omitempty"`
}

// SecretMount mounts a Secret of the workload's namespace read-only at Path.
type SecretMount struct {
	Name string `gpuctl:"name,required"`
	Path string `gpuctl:"path,required"`
}

// Workdir is a host path mounted at the same path in the container.
type Workdir struct {
	Path string `gpuctl:"path,required"`
	// Type is file, directory, or empty to decide from the path.
	Type string `gpuctl:"type"`
}

// Metadata names a pool or quota document.
type Metadata struct {
	Name        string `gpuctl:"name,required"`
	Description string `gpuctl:"description"`
}

// PoolNode is one node of a pool and the GPU type declared for it.
type PoolNode struct {
	Name    string `gpuctl:",key"`
	GPUType string `gpuctl:"gpu-type"`
}

// Pool is a resource pool: a named set of nodes.
type Pool struct {
	Metadata
	Nodes []PoolNode
}

// UserQuota is the quota of one user (namespace). BorrowingLimit, LendingLimit and Pools
// hold with queueing kueue only (docs/format.md §9.1).
type UserQuota struct {
	Name       string `gpuctl:",key"`
	PoolAmount `gpuctl:",inline"`
	// Pools are the team's quota per pool; without them every pool gets the team's numbers.
	Pools []PoolQuota `gpuctl:"pools"`
}

// PoolQuota is a team's quota in one pool (DefaultPool: the nodes in no pool); a field not
// written takes the team's value.
type PoolQuota struct {
	Name       string `gpuctl:",key"`
	PoolAmount `gpuctl:",inline"`
}

// PoolAmount is what a team gets in a pool: its quota, and its borrowing and lending limits.
// Which fields are set is known from the document (Document.Has).
type PoolAmount struct {
	QuotaResources `gpuctl:",inline"`
	// BorrowingLimit is how much of the cohort's idle quota the team may borrow in each pool;
	// a resource not written has no limit.
	BorrowingLimit QuotaResources `gpuctl:"borrowingLimit"`
	// LendingLimit is how much of the team's idle quota the other teams may borrow in each
	// pool; a resource not written lends all of it.
	LendingLimit QuotaResources `gpuctl:"lendingLimit"`
}

// QuotaResources are the resources of a quota, or of a borrowing or lending limit.
type QuotaResources struct {
	CPU    resource.Quantity `gpuctl:"cpu"`
	Memory resource.Quantity `gpuctl:"memory"`
	GPU    int               `gpuctl:"gpu"`
}

// Quota sets per-user quotas; each user gets a Namespace.
type Quota struct {
	Metadata
	Users []UserQuota
}

// poolDoc is `kind: pool` with metadata.
type poolDoc struct {
	Kind     string     `gpuctl:"kind,required"`
	Version  string     `gpuctl:"version,required"`
	Metadata Metadata   `gpuctl:"metadata,required"`
	Nodes    []PoolNode `gpuctl:"nodes"`
}

// resourceDoc is a pool written as `kind: resource` with a pool block.
type resourceDoc struct {
	Kind    string     `gpuctl:"kind,required"`
	Version string     `gpuctl:"version,required"`
	Pool    Metadata   `gpuctl:"pool,required"`
	Nodes   []PoolNode `gpuctl:"nodes"`
}

// quotaDoc is `kind: quota`; users may also be written as the upstream `namespace:` map.
type quotaDoc struct {
	Kind      string      `gpuctl:"kind,required"`
	Version   string      `gpuctl:"version,required"`
	Metadata  Metadata    `gpuctl:"metadata,required"`
	Users     []UserQuota `gpuctl:"users"`
	Namespace []UserQuota `gpuctl:"namespace"`
}

// Document is one parsed YAML document of a source file.
type Document struct {
	// File is the path of the file relative to the render root, with forward slashes.
	File string
	// Index is the position of the document in its file, from 0.
	Index int
	// Pos is where the document starts.
	Pos Pos
	// Kind is the gpuctl kind, or "manifest" for a plain Kubernetes object.
	Kind string
	// Namespace is where a workload lands, after the directory mapping.
	Namespace string

	Workload *Workload
	Pool     *Pool
	Quota    *Quota
	// Manifest is a plain Kubernetes object (a document with apiVersion).
	Manifest map[string]any

	// pos are the positions of the fields while the document is parsed; fields after
	// (compactFields).
	pos    map[string]Pos
	fields []fieldPos
	// lazy, for a document of the render cache, finds fields when first asked (lazyFields).
	lazy *lazyFields
}

// lazyFields are the field positions of the documents of a cached file, found by parsing it
// again when a position is first asked: a file's positions were ~770 bytes of each training
// file in the cache (more than its ~300 bytes, kept instead), most never read (issue #18,
// bar 6). A render asks for them for a diagnostic across files, and the CLI for an edit.
type lazyFields struct {
	name string
	data []byte
	once sync.Once
	docs [][]fieldPos // by document index
}

// of returns the positions of document i.
func (l *lazyFields) of(i int) []fieldPos {
	l.once.Do(func() {
		for _, d := range parseFile(l.name, l.data, &diagnostics{}) {
			for len(l.docs) <= d.Index {
				l.docs = append(l.docs, nil)
			}
			l.docs[d.Index] = d.fields
		}
	})
	if i < len(l.docs) {
		return l.docs[i]
	}
	return nil
}

// fieldPos is where a field of a document was written.
type fieldPos struct {
	field        string
	line, column int32
}

// compactFields keeps the positions of the fields in a sorted slice: the map took 1.5 KB a
// training file, a tenth of what the render cache held for it (issue #18, bar 6). The names are
// interned (unique.Make: one copy of "resources.gpu" for every file that writes it, dropped
// when no document holds it): the render cache of 10,000 training files 42.2 → 38.4 MiB
// (BenchmarkRender10000FilesEdit), its cold render as fast.
func (d *Document) compactFields() {
	d.fields = make([]fieldPos, 0, len(d.pos))
	for f, p := range d.pos {
		d.fields = append(d.fields, fieldPos{field: unique.Make(f).Value(), line: int32(p.Line), column: int32(p.Column)})
	}
	slices.SortFunc(d.fields, func(a, b fieldPos) int { return strings.Compare(a.field, b.field) })
	d.pos = nil
}

// position is where field was written, and whether it was.
func (d *Document) position(field string) (Pos, bool) {
	if d.pos != nil {
		p, ok := d.pos[field]
		return p, ok
	}
	fields := d.fields
	if fields == nil && d.lazy != nil {
		fields = d.lazy.of(d.Index)
	}
	i, ok := slices.BinarySearchFunc(fields, field, func(f fieldPos, name string) int { return strings.Compare(f.field, name) })
	if !ok {
		return Pos{}, false
	}
	return Pos{Line: int(fields[i].line), Column: int(fields[i].column)}, true
}

// KindManifest is the Document.Kind of plain Kubernetes manifests.
const KindManifest = "manifest"

// At returns the position of a field, e.g. "resources.gpu", or the document's start.
func (d *Document) At(field string) Pos {
	if p, ok := d.position(field); ok {
		return p
	}
	return d.Pos
}

// Has reports whether a field was written in the document.
func (d *Document) Has(field string) bool {
	_, ok := d.position(field)
	return ok
}
