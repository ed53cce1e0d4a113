package review

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/humanize"
	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"github.com/gpuctl/gpuctl/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Violation is one policy problem of the head revision.
type Violation struct {
	Rule     Rule            `json:"rule"`
	Severity render.Severity `json:"severity"`
	File     string          `json:"file"`
	Line     int             `json:"line,omitempty"`
	Message  string          `json:"message"`
	// Preexisting is set when the base revision has the same violation: the change did not
	// cause it. Preexisting violations are reported but do not fail a review.
	Preexisting bool `json:"preexisting,omitempty"`
	// subject identifies what the violation is about, to match it across revisions.
	subject string
	// amount is how far a quantity goes (the GPUs of an over-quota team): a violation that
	// grows is not preexisting.
	amount int64
}

// Where returns file:line, or the file alone.
func (v *Violation) Where() string {
	if v.Line > 0 {
		return fmt.Sprintf("%s:%d", v.File, v.Line)
	}
	return v.File
}

// checker checks one rendered revision against a policy.
type checker struct {
	policy *Policy
	rev    *Rendered
	out    []*Violation
}

func (c *checker) add(rule Rule, subject, file string, pos render.Pos, format string, args ...any) *Violation {
	sev := c.policy.SeverityOf(rule)
	if sev == SeverityOff {
		return nil
	}
	v := &Violation{Rule: rule, Severity: sev, File: file, Line: pos.Line, Message: fmt.Sprintf(format, args...), subject: subject}
	c.out = append(c.out, v)
	return v
}

// Check returns the violations of one rendered revision: its rendered objects against the
// policy, its documents against its pools, and its quotas. Render errors are not included (see
// renderViolations).
func Check(p *Policy, rev *Rendered) []*Violation {
	c := &checker{policy: p, rev: rev}
	pools := poolTypes(rev.Documents)
	for _, d := range rev.Documents {
		if d.Workload != nil {
			c.checkPool(d, d.Namespace+"/"+d.Workload.Job.Name, pools)
		}
	}
	scaled := scaleTargets(rev.Objects)
	for _, u := range rev.Objects {
		w, ok := podWorkloadOf(u)
		if !ok {
			continue
		}
		if n := scaled[u.GetNamespace()+"/"+u.GetKind()+"/"+u.GetName()]; n > w.Pods {
			w.Pods, w.GPUs = n, n*w.PodGPUs // an autoscaler may run that many
		}
		c.checkPods(u, w)
	}
	c.checkQuotas()
	c.checkQueues()
	return c.out
}

// poolTypes maps each pool that a pool document defines to the GPU types its nodes declare.
func poolTypes(docs []*render.Document) map[string][]string {
	out := map[string][]string{}
	for _, d := range docs {
		if d.Pool == nil {
			continue
		}
		types := out[d.Pool.Name]
		for _, n := range d.Pool.Nodes {
			if t := render.NormalizeGPUType(n.GPUType); t != "" && !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		sort.Strings(types)
		out[d.Pool.Name] = types
	}
	return out
}

// checkPods checks the policy's per-workload limits (maxGPUsPerJob, allowedRegistries,
// highPriorityTeams) on a rendered object that runs pods.
func (c *checker) checkPods(u *unstructured.Unstructured, w podWorkload) {
	id := object.RefOf(u).String()
	subject := u.GetAPIVersion() + " " + id
	file, doc := c.declaredBy(u)
	at := func(field string, matches bool) render.Pos { return fieldPos(doc, field, matches) }
	if max := c.policy.maxGPUs(); max > 0 && w.GPUs > int64(max) {
		if v := c.add(RuleMaxGPUs, subject, file, at("resources.gpu", true),
			"%s requests %d GPUs in all (pods × GPUs per pod), above the limit of %d (maxGPUsPerJob)", id, w.GPUs, max); v != nil {
			v.amount = w.GPUs
		}
	}
	if regs := c.policy.registries(); len(regs) > 0 {
		for _, img := range w.Images {
			if !imageAllowed(img, regs) {
				c.add(RuleRegistry, subject+" "+img, file, at("environment.image", doc != nil && doc.Workload != nil && doc.Workload.Environment.Image == img),
					"%s: image %s is not from an allowed registry (%s)", id, img, strings.Join(regs, ", "))
			}
		}
	}
	ns := u.GetNamespace()
	if w.PriorityClass == keys.PriorityClassHigh && c.policy != nil && c.policy.restrictHigh && !slices.Contains(c.policy.HighPriorityTeams, ns) {
		c.add(RuleHighPriority, subject, file, at("job.priority", true),
			"%s: priority class %s is reserved for %s; namespace %s may use %s or %s", id, keys.PriorityClassHigh,
			listOr(c.policy.HighPriorityTeams, "no team"), ns, keys.PriorityClassMedium, keys.PriorityClassLow)
	}
}

// fieldPos is the line of a gpuctl document's field when the object has its value (matches),
// else the document's first line; none without a document.
func fieldPos(doc *render.Document, field string, matches bool) render.Pos {
	switch {
	case doc == nil:
		return render.Pos{}
	case doc.Workload != nil && matches:
		return doc.At(field)
	}
	return doc.Pos
}

// declaredBy returns the repository-relative file that declared an object (its source
// annotation; the rendered directory when a kustomization dropped it) and the document of
// that file that rendered it (a gpuctl workload or a manifest of the same kind and name), for
// its lines; nil when none matches.
func (c *checker) declaredBy(u *unstructured.Unstructured) (string, *render.Document) {
	src := u.GetAnnotations()[keys.Source]
	if src == "" {
		return c.rev.root, nil
	}
	file := path.Join(c.rev.root, src)
	for _, d := range c.rev.Documents {
		if d.File != file {
			continue
		}
		if d.Workload != nil && d.Namespace == u.GetNamespace() && d.Workload.Job.Name == u.GetName() {
			return file, d
		}
		if m := (&unstructured.Unstructured{Object: d.Manifest}); d.Manifest != nil && m.GetKind() == u.GetKind() && m.GetName() == u.GetName() {
			return file, d
		}
	}
	return file, nil
}

// checkPool checks the pool and GPU type of a workload against the pool documents; it does
// nothing when the revision has none (the pools may be defined elsewhere).
func (c *checker) checkPool(d *render.Document, subject string, pools map[string][]string) {
	if len(pools) == 0 {
		return
	}
	r := d.Workload.Resources
	pool := r.Pool
	if pool == "" {
		pool = keys.DefaultPool
	}
	types, known := pools[pool]
	if pool != keys.DefaultPool && !known {
		c.add(RulePool, subject, d.File, d.At("resources.pool"), "pool %s is not defined by any pool file (pools: %s)", pool, strings.Join(sortedKeys(pools), ", "))
		return
	}
	want := render.NormalizeGPUType(r.GPUType)
	if want == "" || pool == keys.DefaultPool || len(types) == 0 || slices.Contains(types, want) {
		return
	}
	c.add(RuleGPUType, subject, d.File, d.At("resources.gpu-type"), "gpu-type %s: no node of pool %s has it (the pool has %s)", want, pool, strings.Join(types, ", "))
}

// checkQuotas reports each namespace whose workloads request more GPUs than its quota, at
// the quota's line.
func (c *checker) checkQuotas() {
	quotas := GPUQuotas(c.rev.Objects)
	used := map[string]int64{}
	for _, u := range c.rev.Objects {
		used[u.GetNamespace()] += object.GPUs(u)
	}
	for _, ns := range sortedKeys(quotas) {
		if used[ns] <= quotas[ns] {
			continue
		}
		file, pos := c.quotaPos(ns)
		if v := c.add(RuleQuota, "quota/"+ns, file, pos, "team %s requests %s, above its quota of %d", ns, humanize.Plural(used[ns], "GPU"), quotas[ns]); v != nil {
			v.amount = used[ns]
		}
	}
}

// admittedWhole are the kinds whose pods Kueue admits as one Workload, all or none: a Job's
// (a CronJob's Job's) pods and a StatefulSet's replicas. The pods of the other kinds are
// admitted one by one.
var admittedWhole = map[string]bool{"Job": true, "CronJob": true, "StatefulSet": true}

// checkQueues reports, with queueing kueue, each workload that its queue can never admit:
// more GPUs in one Workload than the queue's quota in the workload's pool plus all it can
// borrow there (QueueQuota.Borrowable), so it would wait forever. Requests of a team above
// its quota are no violation with Kueue: the excess borrows or waits its turn in the queue,
// which the budget shows (Budget.Queues).
func (c *checker) checkQueues() {
	qs := readQueues(c.rev.Objects)
	if len(qs.local) == 0 {
		return
	}
	for _, u := range c.rev.Objects {
		spec, pods, ok := object.PodSpec(u)
		if !ok {
			continue
		}
		team, queued := qs.queueOf(u)
		g := object.PodGPUs(spec)
		if admittedWhole[u.GetKind()] {
			g *= pods
		}
		if !queued || g == 0 {
			continue
		}
		pool := poolOf(u)
		q := qs.quota(team, pool)
		id := object.RefOf(u).String()
		var most string
		switch {
		case q == nil:
			most = fmt.Sprintf("no ClusterQueue %s in this revision", team)
		case g > q.Nominal+q.Borrowable:
			most = fmt.Sprintf("its queue %s can admit at most %d there (quota %d + up to %d borrowed from the cohort)", team, q.Nominal+q.Borrowable, q.Nominal, q.Borrowable)
		default:
			continue
		}
		file, doc := c.declaredBy(u)
		if v := c.add(RuleQuota, "queue "+u.GetAPIVersion()+" "+id, file, fieldPos(doc, "resources.gpu", true),
			"%s requests %s at once in pool %s, and %s: Kueue would never admit it", id, humanize.Plural(g, "GPU"), pool, most); v != nil {
			v.amount = g
		}
	}
}

// quotaPos finds the quota document line that sets a namespace's GPUs.
func (c *checker) quotaPos(ns string) (string, render.Pos) {
	for _, d := range c.rev.Documents {
		if d.Quota == nil {
			continue
		}
		for _, u := range d.Quota.Users {
			if u.Name == ns {
				return d.File, d.At("users." + ns + ".gpu")
			}
		}
	}
	return "", render.Pos{}
}

func (p *Policy) maxGPUs() int {
	if p == nil {
		return 0
	}
	return p.MaxGPUsPerJob
}

func (p *Policy) registries() []string {
	if p == nil {
		return nil
	}
	return p.AllowedRegistries
}

// imageAllowed reports whether an image reference starts with one of the registries or
// prefixes; references without a registry host are docker.io's (nginx → docker.io/library/nginx).
func imageAllowed(image string, allowed []string) bool {
	ref := normalizeImage(image)
	for _, a := range allowed {
		a = strings.TrimSuffix(normalizePrefix(a), "/")
		if ref == a || strings.HasPrefix(ref, a+"/") {
			return true
		}
		// an entry naming a repository also allows its tags and digests; a host:port is another host
		if strings.Contains(a, "/") && (strings.HasPrefix(ref, a+":") || strings.HasPrefix(ref, a+"@")) {
			return true
		}
	}
	return false
}

func normalizeImage(image string) string {
	first, rest, found := strings.Cut(image, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return image
	}
	if !found {
		return "docker.io/library/" + image
	}
	return "docker.io/" + first + "/" + rest
}

// normalizePrefix writes an allowed entry as normalizeImage writes images: a bare "library"
// style entry is kept as it is, a host stays a host.
func normalizePrefix(p string) string {
	first, _, _ := strings.Cut(p, "/")
	if strings.ContainsAny(first, ".:") || first == "localhost" {
		return p
	}
	return "docker.io/" + p
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func listOr(items []string, none string) string {
	if len(items) == 0 {
		return none
	}
	return strings.Join(items, ", ")
}

// renderViolations turns the head revision's render errors into violations.
func renderViolations(p *Policy, rev *Rendered) []*Violation {
	c := &checker{policy: p, rev: rev}
	for _, d := range rev.Errors() {
		msg := d.Message
		if d.Field != "" {
			msg = d.Field + ": " + msg
		}
		if d.Hint != "" {
			msg += " (" + d.Hint + ")"
		}
		c.add(RuleRender, d.File+":"+msg, d.File, render.Pos{Line: d.Line, Column: d.Column}, "%s", msg)
	}
	return c.out
}
