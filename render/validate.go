package render

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxNameLen keeps svc-{name} within the 63 characters of a DNS label.
const maxNameLen = 63 - len("svc-")

// maxNotebookNameLen keeps the StatefulSet's controller-revision-hash label ({name}-{10 chars})
// within 63 characters.
const maxNotebookNameLen = 63 - 11

// fileExtensions are the endings that make an automatic workdir a file rather than a directory.
var fileExtensions = map[string]bool{
	"json": true, "jsonl": true, "yaml": true, "yml": true, "txt": true, "csv": true, "tsv": true,
	"parquet": true, "arrow": true, "bin": true, "safetensors": true, "pt": true, "pth": true,
	"ckpt": true, "h5": true, "gguf": true, "onnx": true, "npy": true, "npz": true, "pkl": true,
	"tar": true, "gz": true, "tgz": true, "zip": true, "py": true, "sh": true, "cfg": true, "conf": true,
	"ini": true, "toml": true, "model": true, "tiktoken": true, "log": true,
}

// validator checks one document's semantics; positions come from the document.
type validator struct {
	doc *Document
	ds  *diagnostics
	cfg *Config
}

func (v *validator) errorf(field, format string, args ...any) *Diagnostic {
	return v.ds.errorf(v.doc.File, v.doc.At(field), field, format, args...)
}

func (v *validator) warnf(field, format string, args ...any) *Diagnostic {
	return v.ds.warnf(v.doc.File, v.doc.At(field), field, format, args...)
}

// dnsLabel reports an error unless s is a DNS-1123 label of at most max characters.
func (v *validator) dnsLabel(field, s string, max int) {
	if s == "" {
		return
	}
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		v.errorf(field, "%q is not a valid name: %s", s, errs[0]).Hint = "use lower-case letters, digits and '-', starting and ending with a letter or digit"
		return
	}
	if len(s) > max {
		v.errorf(field, "%q is %d characters long, the limit is %d", s, len(s), max)
	}
}

func (v *validator) labelValue(field, s string) {
	if errs := validation.IsValidLabelValue(s); len(errs) > 0 {
		v.errorf(field, "%q cannot be used as a label value: %s", s, errs[0])
	}
}

// NormalizeGPUType lower-cases a GPU type so that A100-80G and a100-80g are one type.
func NormalizeGPUType(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func (v *validator) workload(w *Workload) {
	v.checkKindFields(w)
	name := w.Job.Name
	limit := maxNameLen
	if w.Kind == KindNotebook {
		limit = maxNotebookNameLen
	}
	v.dnsLabel("job.name", name, limit)
	v.dnsLabel("job.namespace", w.Job.Namespace, 63)
	switch w.Job.Priority {
	case "", "high", "medium", "low":
	default:
		d := v.errorf("job.priority", "unknown priority %q", w.Job.Priority)
		d.Hint = "expected high, medium or low"
		if best := suggest(w.Job.Priority, []string{"high", "medium", "low"}); best != "" {
			d.Hint = fmt.Sprintf("did you mean %q?", best)
		}
	}
	v.retries(w)
	v.environment(&w.Environment)
	v.resources(w)
	v.service(w)
	v.workdirs(w.Storage.Workdirs)
	v.secretRefs(w)
}

func (v *validator) checkKindFields(w *Workload) {
	if w.Kind != KindTraining && v.doc.Has("resources.node_count") {
		v.errorf("resources.node_count", "node_count applies to training only")
	}
	if w.Kind != KindTraining && v.doc.Has("job.suspend") {
		v.errorf("job.suspend", "suspend applies to training only").Hint = "a service is paused with service.replicas: 0 and service.pausedReplicas (gpuctl pause)"
	}
	if w.Kind != KindTraining && v.doc.Has("job.retries") {
		v.errorf("job.retries", "retries apply to training only").Hint = "a service's pods are restarted by their Deployment or StatefulSet"
	}
	if w.Kind == KindTraining {
		for _, f := range []string{"service.replicas", "service.port", "service.health_check", "service.pausedReplicas"} {
			if v.doc.Has(f) {
				v.errorf(f, "training jobs have no service; remove it").Hint = "use kind: inference or compute for a service"
			}
		}
	}
}

// retries checks job.retries (docs/format.md §4.4).
func (v *validator) retries(w *Workload) {
	r := &w.Job.Retries
	if v.doc.Has("job.retries.onDisruption") && !slices.Contains(disruptionValues, r.OnDisruption) {
		d := v.errorf("job.retries.onDisruption", "unknown value %q", r.OnDisruption)
		d.Hint = "expected " + strings.Join(disruptionValues, ", ")
		if best := suggest(r.OnDisruption, disruptionValues); best != "" {
			d.Hint = fmt.Sprintf("did you mean %q?", best)
		}
	}
	seen := map[int]int{}
	for i, c := range r.OnExitCodes {
		field := fmt.Sprintf("job.retries.onExitCodes[%d]", i)
		switch j, dup := seen[c]; {
		case c == 0:
			v.errorf(field, "exit code 0 is a success, not a failure to retry")
		case c < 0 || c > 255:
			v.errorf(field, "exit code %d is out of range 1-255", c)
		case dup:
			v.errorf(field, "exit code %d is listed twice (also onExitCodes[%d])", c, j)
		}
		seen[c] = i
	}
	if v.doc.Has("job.retries") && w.Kind == KindTraining && w.Resources.NodeCount > 1 && v.cfg.multiNode() == MultiNodeJob {
		v.warnf("job.retries", "ignored: a multi-node job is not retried with multiNode %s (backoffLimit 0); %s restarts all its ranks together (docs/format.md §2.2)",
			MultiNodeJob, MultiNodeJobSet)
	}
	if !v.doc.Has("job.retries.max") {
		return
	}
	switch {
	case !retryCounts(*r):
		v.errorf("job.retries.max", "nothing is counted against max").Hint =
			"max limits the retries of onExitCodes, and of disruptions with onDisruption: count; set one of them, or remove max"
	case r.Max < 1 || r.Max > maxRetries:
		v.errorf("job.retries.max", "must be 1 to %d, got %d", maxRetries, r.Max)
	}
}

func (v *validator) environment(e *Environment) {
	if v.doc.Has("environment.image") && (strings.TrimSpace(e.Image) == "" || strings.ContainsAny(e.Image, " \t\n")) {
		v.errorf("environment.image", "invalid image %q", e.Image)
	}
	v.secretName("environment.imagePullSecret", e.ImagePullSecret)
	seen := map[string]int{}
	for i, env := range e.Env {
		field := fmt.Sprintf("environment.env[%d].name", i)
		if env.Name == "" {
			continue // reported as missing
		}
		if errs := validation.IsEnvVarName(env.Name); len(errs) > 0 {
			v.errorf(field, "invalid environment variable name %q: %s", env.Name, errs[0])
		}
		if j, dup := seen[env.Name]; dup {
			v.errorf(field, "environment variable %q is set twice (also env[%d])", env.Name, j)
		}
		seen[env.Name] = i
	}
}

func (v *validator) resources(w *Workload) {
	r := &w.Resources
	if r.Pool != "" {
		v.dnsLabel("resources.pool", r.Pool, 63)
	}
	if r.GPU < 0 {
		v.errorf("resources.gpu", "must be 0 or more, got %d", r.GPU)
	}
	if r.GPUType != "" {
		v.labelValue("resources.gpu-type", NormalizeGPUType(r.GPUType))
	}
	v.positive("resources.cpu", r.CPU)
	v.positive("resources.memory", r.Memory)
	if v.doc.Has("resources.memory") && r.Memory.Sign() > 0 && r.Memory.Cmp(resource.MustParse("1Mi")) < 0 {
		v.errorf("resources.memory", "%s is %s bytes", r.Memory.String(), r.Memory.String()).Hint =
			fmt.Sprintf("did you mean %sGi?", r.Memory.String())
	}
	if v.doc.Has("resources.gpu-share") {
		v.gpuShare(w)
	}
	if v.doc.Has("resources.node_count") && r.NodeCount < 1 {
		v.errorf("resources.node_count", "must be 1 or more, got %d", r.NodeCount)
	}
}

func (v *validator) positive(field string, q resource.Quantity) {
	if v.doc.Has(field) && q.Sign() <= 0 {
		v.errorf(field, "must be more than 0, got %s", q.String())
	}
}

func (v *validator) gpuShare(w *Workload) {
	q := w.Resources.GPUShare
	gib := resource.MustParse("1Gi")
	if q.Sign() <= 0 {
		v.errorf("resources.gpu-share", "must be more than 0, got %s", q.String())
		return
	}
	if q.Value()%gib.Value() != 0 {
		v.errorf("resources.gpu-share", "%s is not a whole number of GiB", q.String()).Hint = "the GPU-share device plugin counts GPU memory in GiB, e.g. 2Gi"
		return
	}
	if w.Resources.GPU > 0 {
		v.warnf("resources.gpu-share", "ignored: gpu is %d, and whole GPUs win over a GPU memory share", w.Resources.GPU)
	}
}

func (v *validator) service(w *Workload) {
	s := &w.Service
	if v.doc.Has("service.replicas") && s.Replicas < 0 {
		v.errorf("service.replicas", "must be 0 or more, got %d", s.Replicas)
	}
	if w.Kind == KindNotebook && v.doc.Has("service.replicas") && s.Replicas != 1 && s.Replicas != 0 {
		v.errorf("service.replicas", "a notebook runs exactly 1 replica (0 while paused), got %d", s.Replicas)
	}
	if w.Kind != KindTraining && v.doc.Has("service.pausedReplicas") {
		v.pausedReplicas(w)
	}
	if v.doc.Has("service.port") && (s.Port < 1 || s.Port > 65535) {
		v.errorf("service.port", "port %d is out of range 1-65535", s.Port)
	}
	if w.Kind == KindInference && !v.doc.Has("service.port") {
		v.errorf("service.port", "required field is missing").Hint = "an inference service needs the port it listens on"
	}
	if s.HealthCheck != "" {
		if !strings.HasPrefix(s.HealthCheck, "/") {
			v.errorf("service.health_check", "%q must be an HTTP path starting with /", s.HealthCheck)
		}
		if !v.doc.Has("service.port") && w.Kind != KindNotebook {
			v.errorf("service.health_check", "needs service.port to probe")
		}
	}
}

// pausedReplicas checks the replicas kept by a paused service: set only while it is paused
// (service.replicas: 0), at least 1, and 1 for a notebook.
func (v *validator) pausedReplicas(w *Workload) {
	s := &w.Service
	switch {
	case !v.doc.Has("service.replicas") || s.Replicas != 0:
		v.errorf("service.pausedReplicas", "set only while the service is paused (service.replicas: 0)").Hint =
			"remove it, or pause with service.replicas: 0 (gpuctl pause and gpuctl resume write both)"
	case s.PausedReplicas < 1:
		v.errorf("service.pausedReplicas", "must be 1 or more, got %d", s.PausedReplicas)
	case w.Kind == KindNotebook && s.PausedReplicas != 1:
		v.errorf("service.pausedReplicas", "a notebook runs exactly 1 replica, got %d", s.PausedReplicas)
	}
}

func (v *validator) workdirs(dirs []Workdir) {
	prefixes := v.cfg.hostPathPrefixes()
	seen := map[string]int{}
	for i, wd := range dirs {
		field := fmt.Sprintf("storage.workdirs[%d].path", i)
		if wd.Path == "" {
			continue
		}
		p := strings.TrimSuffix(wd.Path, "/")
		switch {
		case !v.cleanAbsolute(field, wd.Path):
			continue
		case !underAny(p, prefixes):
			v.errorf(field, "%q is outside the allowed host paths", wd.Path).Hint = "allowed: " + strings.Join(prefixes, ", ") + " (reconciler setting hostPathPrefixes)"
			continue
		}
		if j, dup := seen[p]; dup {
			v.errorf(field, "%q is mounted twice (also workdirs[%d])", wd.Path, j)
		}
		seen[p] = i
		switch wd.Type {
		case "", "file", "directory":
		default:
			v.errorf(fmt.Sprintf("storage.workdirs[%d].type", i), "unknown type %q", wd.Type).Hint = "expected file or directory (default: decided from the path)"
		}
	}
}

// cleanAbsolute reports an error at field unless p is an absolute path without ., .. or //.
func (v *validator) cleanAbsolute(field, p string) bool {
	switch {
	case !path.IsAbs(p):
		v.errorf(field, "%q must be an absolute path", p)
		return false
	case strings.Contains(p+"/", "/../") || strings.Contains(p+"/", "/./") || strings.Contains(p, "//"):
		v.errorf(field, "%q must be a clean path without ., .. or //", p)
		return false
	}
	return true
}

func underAny(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// isFilePath decides the hostPath type of a workdir: File for a known file ending, else a directory.
func isFilePath(wd Workdir) bool {
	switch wd.Type {
	case "file":
		return true
	case "directory":
		return false
	}
	base := path.Base(wd.Path)
	if strings.HasSuffix(wd.Path, "/") {
		return false
	}
	i := strings.LastIndexByte(base, '.')
	return i > 0 && fileExtensions[strings.ToLower(base[i+1:])]
}

func (v *validator) pool(p *Pool) {
	v.dnsLabel("metadata.name", p.Name, 63)
	if p.Name == "default" {
		v.errorf("metadata.name", "the pool name default is reserved").Hint = "default is the pool of nodes without a pool label; choose another name"
	}
	for _, n := range p.Nodes {
		field := "nodes." + n.Name
		if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
			v.errorf(field, "%q is not a valid node name: %s", n.Name, errs[0])
		}
		if n.GPUType != "" {
			v.labelValue(field+".gpu-type", NormalizeGPUType(n.GPUType))
		}
	}
}

func (v *validator) quota(q *Quota) {
	v.dnsLabel("metadata.name", q.Name, 63)
	for _, u := range q.Users {
		field := "users." + u.Name
		v.dnsLabel(field, u.Name, 63)
		if v.cfg.ReservedNamespace(u.Name) {
			v.errorf(field, "%q is a system namespace and cannot be a quota user", u.Name)
		}
		if v.cfg.Kueue() {
			v.kueueQuota(u, field)
		} else {
			v.resourceQuotaOnly(field)
		}
		v.positive(field+".cpu", u.CPU)
		v.positive(field+".memory", u.Memory)
		if u.GPU < 0 {
			v.errorf(field+".gpu", "must be 0 or more, got %d", u.GPU)
		}
		v.quotaLimits(field, u.PoolAmount)
		for _, p := range u.Pools {
			pf := field + ".pools." + p.Name
			v.notNegative(pf, p.QuotaResources)
			v.quotaLimits(pf, p.PoolAmount)
		}
	}
}

// quotaLimits checks the borrowing and lending limits of a quota entry.
func (v *validator) quotaLimits(field string, a PoolAmount) {
	v.notNegative(field+".borrowingLimit", a.BorrowingLimit)
	v.notNegative(field+".lendingLimit", a.LendingLimit)
}

// notNegative checks that the resources written at field are 0 or more.
func (v *validator) notNegative(field string, r QuotaResources) {
	for _, q := range []struct {
		name string
		q    resource.Quantity
	}{{"cpu", r.CPU}, {"memory", r.Memory}} {
		if v.doc.Has(field+"."+q.name) && q.q.Sign() < 0 {
			v.errorf(field+"."+q.name, "must be 0 or more, got %s", q.q.String())
		}
	}
	if r.GPU < 0 {
		v.errorf(field+".gpu", "must be 0 or more, got %d", r.GPU)
	}
}
