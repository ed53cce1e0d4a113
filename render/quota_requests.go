package render

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpuctl/gpuctl/internal/keys"
	"github.com/gpuctl/gpuctl/internal/object"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The API server refuses a pod in a namespace whose ResourceQuota counts cpu or memory
// (requests or limits) unless each of its containers and init containers sets them ("failed
// quota: team-quota: must specify requests.cpu"); a Job or Deployment is created and then
// never gets a pod. Extended resources (nvidia.com/gpu) are not required this way: a
// container without a GPU request is admitted and uses none. Requests default to limits, and
// a LimitRange's defaults fill in what a container leaves out, before the quota is checked.

// quotaRequired maps the hard keys of a ResourceQuota that the API server requires every
// container to set to the name it says is missing.
var quotaRequired = map[string]string{
	"cpu": "requests.cpu", "requests.cpu": "requests.cpu", "limits.cpu": "limits.cpu",
	"memory": "requests.memory", "requests.memory": "requests.memory", "limits.memory": "limits.memory",
}

// quotaNeed is a resource that a quota of a namespace requires of every container.
type quotaNeed struct {
	quota, source string // the ResourceQuota's name and source file
}

// namespaceQuotas are, per namespace, what its quotas require and what its LimitRanges default.
type namespaceQuotas struct {
	needs    map[string]map[string]quotaNeed // namespace -> requests.cpu ... -> the first quota
	defaults map[string]map[string]bool      // namespace -> requests.cpu ... set by a LimitRange
}

// quotasOf collects the unscoped ResourceQuotas and the container LimitRanges of a render. A
// quota with scopes applies to some pods only, and is left out.
func quotasOf(objs []*unstructured.Unstructured) namespaceQuotas {
	q := namespaceQuotas{needs: map[string]map[string]quotaNeed{}, defaults: map[string]map[string]bool{}}
	for _, o := range objs {
		ns := namespaceOf(o)
		spec := mapAt(o.Object["spec"])
		switch {
		case o.GetAPIVersion() != "v1":
		case o.GetKind() == "ResourceQuota" && spec["scopes"] == nil && spec["scopeSelector"] == nil:
			for k := range mapAt(spec["hard"]) {
				r, ok := quotaRequired[k]
				if _, seen := q.needs[ns][r]; !ok || seen {
					continue
				}
				if q.needs[ns] == nil {
					q.needs[ns] = map[string]quotaNeed{}
				}
				q.needs[ns][r] = quotaNeed{quota: o.GetName(), source: o.GetAnnotations()[keys.Source]}
			}
		case o.GetKind() == "LimitRange":
			for _, l := range listAt(spec["limits"]) {
				if mapAt(l)["type"] != "Container" {
					continue
				}
				if q.defaults[ns] == nil {
					q.defaults[ns] = map[string]bool{}
				}
				for r := range mapAt(mapAt(l)["defaultRequest"]) {
					q.defaults[ns]["requests."+r] = true
				}
				for r := range mapAt(mapAt(l)["default"]) { // a default limit is also the default request
					q.defaults[ns]["limits."+r], q.defaults[ns]["requests."+r] = true, true
				}
			}
		}
	}
	return q
}

func namespaceOf(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns
	}
	return keys.DefaultNamespace
}

// missingRequests returns what the namespace's quotas require that a container does not set.
func (q namespaceQuotas) missingRequests(ns string, container map[string]any) []string {
	have := map[string]bool{}
	res := mapAt(container["resources"])
	for r := range mapAt(res["requests"]) {
		have["requests."+r] = true
	}
	for r := range mapAt(res["limits"]) {
		have["limits."+r], have["requests."+r] = true, true // requests default to limits
	}
	var missing []string
	for r := range q.needs[ns] {
		if !have[r] && !q.defaults[ns][r] {
			missing = append(missing, r)
		}
	}
	sort.Strings(missing)
	return missing
}

// quotaPhrase names the quotas that require the missing resources.
func (q namespaceQuotas) quotaPhrase(ns string, missing []string) string {
	var names []string
	seen := map[string]bool{}
	for _, r := range missing {
		n := q.needs[ns][r]
		if s := n.quota + " (" + n.source + ")"; !seen[s] {
			seen[s] = true
			names = append(names, n.quota+" of namespace "+fmt.Sprintf("%q", ns)+" ("+n.source+")")
		}
	}
	if len(names) == 1 {
		return "the ResourceQuota " + names[0] + " requires"
	}
	return "the ResourceQuotas " + strings.Join(names, " and ") + " require"
}

// origin is the document an object was rendered from.
type origin struct {
	s   *source
	doc *Document
}

// checkQuotaRequests warns about each container of a workload (a gpuctl document or any
// pod-creating manifest, kustomize output included) that lacks a request that a quota of its
// namespace, rendered in the same tree, requires: its pods would never be created.
func (st *run) checkQuotaRequests(objs []*unstructured.Unstructured, origins map[*unstructured.Unstructured]origin) {
	q := quotasOf(objs)
	if len(q.needs) == 0 {
		return
	}
	tc := &tenancyCheck{st: st, nodes: map[*source][]*yaml.Node{}}
	for _, o := range objs {
		ns := namespaceOf(o)
		tp, ok := object.PodTemplatePath(o.GetKind())
		if !ok || len(q.needs[ns]) == 0 {
			continue
		}
		release := st.bodies.Whole(o)
		spec := o.Object
		for _, k := range append(tp, "spec") {
			spec = mapAt(spec[k])
		}
		org, known := origins[o]
		if !known {
			org = st.kustomizedOrigin(o)
		}
		base := strings.Join(append(tp, "spec"), ".")
		for _, list := range []string{"containers", "initContainers"} {
			for i, c := range listAt(spec[list]) {
				missing := q.missingRequests(ns, mapAt(c))
				if len(missing) == 0 {
					continue
				}
				field := fmt.Sprintf("%s.%s[%d].resources", base, list, i)
				st.warnMissingRequests(tc, org, o, field, mapAt(c)["name"], q, ns, missing)
			}
		}
		release()
	}
}

// warnMissingRequests reports one container's missing requests: in gpuctl terms for a gpuctl
// document, at the container for a manifest, at the file for what cannot be placed.
func (st *run) warnMissingRequests(tc *tenancyCheck, org origin, o *unstructured.Unstructured, field string, name any,
	q namespaceQuotas, ns string, missing []string) {
	if org.doc != nil && org.doc.Workload != nil {
		done := map[string]bool{}
		for _, r := range missing {
			f := "resources." + r[strings.IndexByte(r, '.')+1:]
			if done[f] {
				continue
			}
			done[f] = true
			n := q.needs[ns][r]
			st.ds.warnf(org.doc.File, org.doc.At("resources"), f, "not set, and the ResourceQuota %s of namespace %q (%s) counts %s: the job's pods would be refused (failed quota: must specify %s)",
				n.quota, ns, n.source, r, r).Hint = "set " + f
		}
		return
	}
	file, at := st.displayOf(filepath.Join(st.repo, filepath.FromSlash(o.GetAnnotations()[keys.Source]))), Pos{}
	if org.doc != nil {
		file, at = org.doc.File, tc.fieldPos(org.s, org.doc, field)
	}
	list := strings.Join(missing, ", ")
	st.ds.warnf(file, at, field, "container %q lacks %s, which %s: its pods would be refused (failed quota: must specify %s)",
		name, list, q.quotaPhrase(ns, missing), list).Hint =
		"set them on the container (a limit alone sets the request too), or give the namespace a LimitRange with defaults"
}

// kustomizedOrigin finds the document that an object of kustomize's output came from: in the
// file its source annotation names, the one of its kind whose name its name holds.
func (st *run) kustomizedOrigin(o *unstructured.Unstructured) origin {
	s := st.byAbs[filepath.Join(st.repo, filepath.FromSlash(o.GetAnnotations()[keys.Source]))]
	if s == nil {
		return origin{}
	}
	var best *Document
	for _, d := range s.docs {
		var name string
		switch {
		case d.Workload != nil:
			name = d.Workload.Job.Name
		case d.Manifest != nil && d.Manifest["kind"] == o.GetKind():
			name, _ = mapAt(d.Manifest["metadata"])["name"].(string)
		default:
			continue
		}
		if strings.Contains(o.GetName(), name) && (best == nil || len(name) > len(docName(best))) {
			best = d
		}
	}
	return origin{s: s, doc: best}
}

func docName(d *Document) string {
	if d.Workload != nil {
		return d.Workload.Job.Name
	}
	n, _ := mapAt(d.Manifest["metadata"])["name"].(string)
	return n
}
