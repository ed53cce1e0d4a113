package render

import (
	"path"

	"github.com/gpuctl/gpuctl/internal/keys"
	"k8s.io/apimachinery/pkg/util/validation"
)

// clusterScoped lists the common cluster-scoped kinds, which team directories may not hold.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "PriorityClass": true, "StorageClass": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true, "IngressClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "APIService": true,
	"RuntimeClass": true, "CSIDriver": true, "VolumeAttachment": true, "ValidatingAdmissionPolicy": true,
}

// poolNodeRef remembers where a node was first put in a pool.
type poolNodeRef struct {
	pool string
	doc  *Document
}

// validateAll checks every document and the rules that span files: namespaces, pools, quotas.
func (st *run) validateAll() {
	nodes := map[string]poolNodeRef{}
	poolDocs := map[string]*Document{}
	users := map[string]*Document{}
	for _, s := range st.sources {
		mapped, isMapped := st.cfg.NamespaceFor(path.Dir(s.rel))
		for _, doc := range s.docs {
			v := &validator{doc: doc, ds: st.ds, cfg: st.cfg}
			switch {
			case doc.Workload != nil:
				v.workload(doc.Workload)
				doc.Namespace = st.workloadNamespace(v, s, mapped, isMapped)
			case doc.Pool != nil:
				st.teamDirForbidden(v, s, isMapped)
				v.pool(doc.Pool)
				st.checkPoolNodes(doc, poolDocs, nodes)
			case doc.Quota != nil:
				st.teamDirForbidden(v, s, isMapped)
				v.quota(doc.Quota)
				for _, u := range doc.Quota.Users {
					if first, dup := users[u.Name]; dup {
						st.ds.errorf(doc.File, doc.At("users."+u.Name), "users."+u.Name,
							"user %q already has a quota in %s:%d", u.Name, first.File, first.At("users."+u.Name).Line)
						continue
					}
					users[u.Name] = doc
				}
			case doc.Manifest != nil:
				st.checkManifest(doc, s, mapped, isMapped)
			}
		}
	}
	st.checkPoolReferences(poolDocs)
}

func (st *run) workloadNamespace(v *validator, s *source, mapped string, isMapped bool) string {
	w := v.doc.Workload
	if !isMapped {
		if w.Job.Namespace != "" {
			return w.Job.Namespace
		}
		return keys.DefaultNamespace
	}
	if errs := validation.IsDNS1123Label(mapped); len(errs) > 0 {
		v.errorf("", "the directory mapping gives namespace %q, which is not valid: %s", mapped, errs[0])
		return mapped
	}
	if w.Job.Namespace != "" && w.Job.Namespace != mapped {
		v.errorf("job.namespace", "files in %s/ belong to namespace %q and cannot place jobs in %q", path.Dir(s.rel), mapped, w.Job.Namespace).Hint =
			"remove job.namespace, or move the file to that team's directory"
	}
	return mapped
}

func (st *run) teamDirForbidden(v *validator, s *source, isMapped bool) {
	if isMapped {
		v.errorf("kind", "%s documents are cluster-wide and cannot live in a team directory (%s/)", v.doc.Kind, path.Dir(s.rel)).Hint =
			"move the file out of the directories mapped to namespaces"
	}
}

// checkPoolNodes reports pools declared twice and nodes that are in two pools.
func (st *run) checkPoolNodes(doc *Document, poolDocs map[string]*Document, nodes map[string]poolNodeRef) {
	p := doc.Pool
	if first, dup := poolDocs[p.Name]; dup && p.Name != "" {
		st.ds.errorf(doc.File, doc.At("metadata.name"), "metadata.name", "pool %q is already declared in %s:%d",
			p.Name, first.File, first.At("metadata.name").Line)
		return
	}
	poolDocs[p.Name] = doc
	for _, n := range p.Nodes {
		field := "nodes." + n.Name
		if first, dup := nodes[n.Name]; dup {
			st.ds.errorf(doc.File, doc.At(field), field, "node %q is already in pool %q (%s:%d); a node belongs to one pool",
				n.Name, first.pool, first.doc.File, first.doc.At(field).Line)
			continue
		}
		nodes[n.Name] = poolNodeRef{pool: p.Name, doc: doc}
	}
}

// checkPoolReferences warns about workloads asking for a pool or GPU type that no pool file of
// the tree provides (only when the tree declares pools at all).
func (st *run) checkPoolReferences(pools map[string]*Document) {
	if len(pools) == 0 {
		return
	}
	for _, s := range st.sources {
		for _, doc := range s.docs {
			w := doc.Workload
			if w == nil || w.Resources.Pool == "" || w.Resources.Pool == keys.DefaultPool {
				continue
			}
			pd, ok := pools[w.Resources.Pool]
			if !ok {
				st.ds.warnf(doc.File, doc.At("resources.pool"), "resources.pool", "no pool file in this tree declares pool %q", w.Resources.Pool)
				continue
			}
			if w.Resources.GPUType != "" && !poolHasType(pd.Pool, NormalizeGPUType(w.Resources.GPUType)) {
				st.ds.warnf(doc.File, doc.At("resources.gpu-type"), "resources.gpu-type",
					"no node of pool %q declares gpu-type %q (%s:%d); the job may never be scheduled",
					w.Resources.Pool, NormalizeGPUType(w.Resources.GPUType), pd.File, pd.Pos.Line)
			}
		}
	}
}

func poolHasType(p *Pool, t string) bool {
	for _, n := range p.Nodes {
		if n.GPUType == "" || NormalizeGPUType(n.GPUType) == t {
			return true // an undeclared type may be published by the node labeler
		}
	}
	return false
}

// checkManifest applies the namespace mapping to plain Kubernetes manifests.
func (st *run) checkManifest(doc *Document, s *source, mapped string, isMapped bool) {
	if !isMapped {
		return
	}
	kind, _ := doc.Manifest["kind"].(string)
	if clusterScoped[kind] {
		st.ds.errorf(doc.File, doc.Pos, "kind", "%s is cluster-wide and cannot live in a team directory (%s/)", kind, path.Dir(s.rel))
		return
	}
	meta, _ := doc.Manifest["metadata"].(map[string]any)
	switch ns, _ := meta["namespace"].(string); ns {
	case "":
		meta["namespace"] = mapped
	case mapped:
	default:
		st.ds.errorf(doc.File, doc.Pos, "metadata.namespace",
			"files in %s/ belong to namespace %q and cannot place objects in %q", path.Dir(s.rel), mapped, ns)
	}
	doc.Namespace = mapped
}

// checkNamespaces enforces a directory's namespace on objects that kustomize built there.
func (st *run) checkNamespaces(file, relDir string, objs []map[string]any) {
	mapped, ok := st.cfg.NamespaceFor(relDir)
	if !ok {
		return
	}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		meta, _ := o["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		switch {
		case clusterScoped[kind]:
			st.ds.errorf(file, Pos{}, "", "kustomize output %s %s is cluster-wide and cannot come from a team directory", kind, name)
		case ns == "":
			meta["namespace"] = mapped
		case ns != mapped:
			st.ds.errorf(file, Pos{}, "", "kustomize output %s %s/%s is outside the directory's namespace %q",
				kind, ns, name, mapped)
		}
	}
}
